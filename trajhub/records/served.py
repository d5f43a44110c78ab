"""The pydantic model of a served record (a declaration beside this module): its served fields
in declaration order, each required (the API always sends every field, null where declared
optional). Built once per record and shared: the REST API answers with it, and the answers
declared beside this module that hold a record (a run's cost in a comparison) name it, so
that one class, and one /openapi.json component, stands for each record."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, create_model
from pydantic import Field as PydanticField

from trajhub.records import Field, Record

#: the models built so far, by record (a nested record is built once and shared)
_MODELS: dict[Record, type[BaseModel]] = {}


def _annotation(field: Field) -> Any:
    if isinstance(field.type, Record):
        return response_model(field.type)
    return field.type


def _field_info(field: Field, required: bool = True) -> Any:
    extra: dict[str, Any] = {}
    if field.deprecated:
        extra["deprecated"] = True
    description = field.description
    if field.deprecated:
        description = (f"{description}; " if description else "") + \
            f"deprecated: use `{field.deprecated}` (kept for one version)"
    return PydanticField(... if required else None, description=description or None, **extra)


def response_model(record: Record, config: ConfigDict | None = None) -> type[BaseModel]:
    """The pydantic model of a served record: its served fields in declaration order, each
    required (the API always sends every field, null where declared optional)."""
    if record in _MODELS:
        return _MODELS[record]
    fields: dict[str, Any] = {f.name: (_annotation(f), _field_info(f)) for f in record.served}
    model: type[BaseModel] = create_model(
        record.name, __config__=config, __doc__=record.description, **fields)
    _MODELS[record] = model
    return model
