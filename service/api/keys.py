"""REST: a project's API keys, for admin keys (`trajhub keys` does the same on the database).

These routes answer only while the server runs with API keys on. With auth off every request
passes the door, so a REST route that made keys would hand an admin key to anyone who reaches
the port, and that key would stay valid once auth is turned on: the first key comes from
`trajhub keys create`, which needs access to the server's database.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Path
from pydantic import BaseModel, Field

from trajhub.records.pages import Page, Renames, deprecated_alias
from trajhub.service.api.answers import CheckedRoute
from trajhub.service.api.found import found
from trajhub.service.api.models import NOT_FOUND, ErrorDetail, example_config
from trajhub.service.api.page_examples import aliased_page_example
from trajhub.service.api.params import PREFIX
from trajhub.service.api.scopes import Key, Project, Rt, needs
from trajhub.service.auth import ADMIN, METRICS, auth_enabled
from trajhub.storage import keys
from trajhub.storage.keys import KeyRow

#: the answer of every key route while auth is off
AUTH_OFF = ("API keys are managed over REST only while the server runs with auth on: with auth "
            "off anyone who reaches this port could make a key. Turn auth on (TRAJHUB_AUTH=on) "
            "and make the first key with `trajhub keys create` on the server's database")


def auth_is_on(rt: Rt) -> None:
    """Router dependency, before the others: with auth off, every key route is a 403."""
    if not auth_enabled(rt.settings):
        raise HTTPException(403, AUTH_OFF)


_FORBIDDEN: dict[int | str, dict[str, Any]] = {
    403: {"model": ErrorDetail, "description": (
        "the server runs with auth off, where keys are made only with `trajhub keys create`; "
        "or the API key is for another project, or its scope is too small; `detail` says "
        "which")},
}

router = APIRouter(prefix=PREFIX, route_class=CheckedRoute, tags=["keys"],
                   dependencies=[Depends(auth_is_on)], responses=_FORBIDDEN)

_KEY: dict[str, Any] = {"key_id": "3f9a1c0b7e2d", "project": "shop-agent", "scope": "ingest",
        "name": "collector", "created_time": "2025-06-01T12:00:00Z", "revoked_time": None,
        "created_at": "2025-06-01T12:00:00Z", "revoked_at": None}

KeyId = Annotated[str, Path(max_length=64, description="the key's public id (`key_id`)")]


class KeyCreate(BaseModel):
    model_config = example_config({"scope": "ingest", "name": "collector"}, extra="forbid")
    scope: Literal["ingest", "read", "admin", "metrics"] = Field(description=(
        "ingest: write spans; read: read everything, create and edit datasets and "
        "evaluations; admin: all of that, plus keys, re-derivation and deletes; metrics: "
        "scrape /metrics, nothing else (server-wide figures: only TRAJHUB_BOOTSTRAP_KEY "
        "makes such a key over REST)"))
    name: str = Field("", max_length=200, description="what the key is for (shown in lists)")


class ApiKey(Renames):
    """A key as listed: never the key itself, which only its creator saw once."""

    model_config = example_config(_KEY)
    key_id: str = Field(description="the public part of the key (`thk_<key_id>_…`)")
    project: str
    scope: Literal["ingest", "read", "admin", "metrics"]
    name: str
    created_time: datetime
    revoked_time: datetime | None = Field(description="when it was revoked; null while valid")
    # the stored row's names (storage/keys.py), which fill the new ones
    created_at: datetime = deprecated_alias("created_time", renamed=True)
    revoked_at: datetime | None = deprecated_alias(
        "revoked_time", "when it was revoked; null while valid", renamed=True)


class CreatedKey(ApiKey):
    model_config = example_config({**_KEY, "key": "thk_3f9a1c0b7e2d_" + "x" * 43})
    key: str = Field(description="the key: shown this once, stored only as a SHA-256 digest. "
                                 "Send it as `Authorization: Bearer <key>`")


_KEYS_ORDER = "oldest first, revoked ones included"


class KeyList(Page[ApiKey]):
    model_config = example_config(aliased_page_example(_KEY, "keys"))
    items: list[ApiKey] = Field(description=_KEYS_ORDER)
    keys: list[ApiKey] = deprecated_alias(description=_KEYS_ORDER)


def _api_key(row: KeyRow) -> ApiKey:
    return ApiKey.model_validate(dict(row))


@router.post("/keys", status_code=201, response_model=CreatedKey, openapi_extra=needs(ADMIN),
             summary="Create an API key for this project (the key is shown once)")
async def create_key(rt: Rt, caller: Key, project: Project, body: KeyCreate) -> CreatedKey:
    if body.scope == METRICS and caller is not None and caller.project is not None:
        # a project's admin must not reach every project's figures through a key it makes
        raise HTTPException(403, f"the API key {caller.key_id} is an admin key of project "
                                 f"{caller.project!r}; a 'metrics' key sees every project's "
                                 "figures: make it with TRAJHUB_BOOTSTRAP_KEY or `trajhub keys "
                                 "create`")
    async with rt.db.acquire() as conn:
        row, key = await keys.create(conn, project, body.scope, body.name)
    return CreatedKey(**dict(row), key=key)


@router.get("/keys", response_model=KeyList, openapi_extra=needs(ADMIN),
            summary="List this project's API keys")
async def list_keys(rt: Rt, project: Project) -> KeyList:
    async with rt.db.acquire() as conn:
        rows = await keys.list_keys(conn, project)
    return KeyList(**KeyList.answer([_api_key(r) for r in rows]))


@router.delete("/keys/{key_id}", response_model=ApiKey, openapi_extra=needs(ADMIN),
               summary="Revoke an API key of this project", responses=NOT_FOUND)
async def revoke_key(rt: Rt, project: Project, key_id: KeyId) -> ApiKey:
    """The key stops working at once; it stays listed, with `revoked_time`."""
    async with rt.db.acquire() as conn:
        row = await keys.revoke(conn, key_id, project)
    return _api_key(found(row, f"no API key {key_id!r} in project {project!r}"))
