"""A project's retention as the REST API answers it (`GET|PUT|DELETE /api/v1/retention`)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from trajhub.records.examples import example_config


class Retention(BaseModel):
    model_config = example_config(
        {"project": "demo", "days": 30.0, "source": "project", "default_days": 7.0})

    project: str
    days: float = Field(description=(
        "traces whose spans last arrived more than this many days ago are deleted; "
        "0 keeps them forever"))
    source: str = Field(description=(
        "`project` (this project's own setting) or `default` (TRAJHUB_RETENTION_DAYS)"))
    default_days: float = Field(description="the server's TRAJHUB_RETENTION_DAYS")
