"""The examples of the response models in /openapi.json: `example_config` gives a model its
example, and `EXAMPLES` keeps each one as written, so that the server can put back the nulls
FastAPI drops from the document (service/api/models.py, `restore_examples`).

Plain pydantic, so that the models declared beside this module (which the client reads too)
carry their examples without importing the server.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.config import ExtraValues

#: the ids the examples use
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN_ID = "00f067aa0ba902b7"

#: each model's example by model name (the OpenAPI component name), filled when its JSON
#: Schema is first built
EXAMPLES: dict[str, dict[str, Any]] = {}


def example_config(doc: dict[str, Any], extra: ExtraValues | None = None) -> ConfigDict:
    """A model's config with `doc` as its example in the OpenAPI document (kept there exactly,
    nulls included), and its `extra` setting if given."""

    def add(schema: dict[str, Any], model: type[BaseModel]) -> None:
        schema["examples"] = [doc]
        EXAMPLES[model.__name__] = doc

    if extra is None:
        return ConfigDict(json_schema_extra=add)
    return ConfigDict(json_schema_extra=add, extra=extra)
