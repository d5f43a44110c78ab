"""Record declarations: each record trajhub stores and serves is listed here once, field by
field, and every layer derives its piece from that list, so that a field is added in one place
and no layer can disagree with another about it:

- storage (trajhub.storage): the columns a derivation writes, the SELECT list of the read row
  (`Record.write_columns`, `Record.select_list`), and a filter's SQL conditions;
- the REST API (trajhub.service.api.records): the pydantic response model, its OpenAPI example
  and the query-parameter model of a filter;
- the Python client (trajhub.service.client.models): the dataclass a response is read into, and
  the keyword arguments a filter accepts;
- the CLI (trajhub.service.cli): a list's table columns and a filter's flags.

This module is plain data with no dependency beyond the standard library, so that the client
(which must not import the server) and the pure normalizers may read it, and storage needs
nothing of the service. The declarations themselves are in the modules beside this one:
`trajectories`, `traces`, `scores`, `sessions`, `rules`, `review` and `evaluations`.

Time vocabulary (one across the API): a moment is `<what>_time`, an RFC 3339 UTC timestamp
(`start_time`, `end_time`); a length of time is `<what>_ms`, whole milliseconds as an integer
(`duration_ms`). A field of another shape that clients already read stays for one version as a
deprecated alias (`Field.deprecated` names what replaces it): still in every response, marked
`deprecated: true` in /openapi.json.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# -------------------------------------------------------------------------------- the fields

#: `Field.default` when none is declared: the type's empty value is written
UNSET: Any = type("Unset", (), {"__repr__": lambda self: "UNSET"})()


@dataclass(frozen=True)
class Cli:
    """How the CLI shows a field in a list's table."""

    header: str
    #: "" as is; "when" a timestamp, local and short; "duration" ms as 1.2s; "yes" a flag as
    #: yes/blank; "clip" cut to 40 characters; "sum" the field plus `plus`; "value" a
    #: number in full (not rounded), a boolean as true/false
    format: str = ""
    right: bool = False
    #: for format "sum": the other fields added to this one
    plus: tuple[str, ...] = ()
    #: the column's place in the table (columns with equal places keep declaration order)
    order: int = 0


@dataclass(frozen=True)
class Field:
    """One field of a record.

    A field is stored (a column the derivation writes), served (a property of the API's
    response and of the client's model), or both. `name` is the API and client name, and the
    column's name unless `column` says otherwise."""

    name: str
    #: the type of the served value: a Python annotation (str, int, bool, list[str],
    #: str | None, …) or another Record (a nested object)
    type: Any
    description: str = ""
    #: the column holding the value; None when the field is computed when read (`select`)
    column: str | None = ""
    #: the type of the stored value when it differs from the served one (Unix ns for a time)
    stored_type: Any = None
    #: an SQL expression read instead of a plain column (over the record's table)
    select: str | None = None
    #: how a stored value becomes the served one: "" as is; "time" ns → RFC 3339; "ns_text"
    #: ns → decimal text; any other name is a converter the API supplies (e.g. "cost")
    convert: str = ""
    #: in the API's response and the client's model
    served: bool = True
    #: who writes the column: "summary" (the normalizer's summary attribute of `source`, by
    #: default the column's name), "service" (the derivation service, by column name),
    #: "key" (the row's key), "database" (the upsert itself), or "" (not stored)
    written_by: str = "service"
    #: for written_by="summary": the attribute of the normalizer's summary
    source: str = ""
    #: written when nothing fills the column (a trajectory that could not be derived)
    default: Any = dataclasses.field(default=UNSET, compare=False)
    #: the value in the OpenAPI example
    example: Any = dataclasses.field(default=None, compare=False)
    cli: Cli | None = None
    #: a deprecated alias: the name of the field replacing it
    deprecated: str = ""

    @property
    def stored_column(self) -> str | None:
        """The column this field is stored in, if any."""
        if self.column is None:
            return None
        return self.column or self.name

    @property
    def read_key(self) -> str:
        """The key of this field's value in a read row."""
        if self.select is not None:
            return self.name
        return self.stored_column or self.name

    @property
    def summary_attribute(self) -> str:
        return self.source or self.stored_column or self.name

    def write_default(self) -> Any:
        if self.default is not UNSET:
            return self.default
        return empty_value(self.stored_type if self.stored_type is not None else self.type)


def empty_value(annotation: Any) -> Any:
    """The value a column of this type holds when nothing filled it."""
    if is_optional(annotation):
        return None
    origin = typing.get_origin(annotation)
    if origin is list or annotation is list:
        return ()
    if annotation is bool:
        return False
    if annotation in (int, float):
        return annotation()
    if annotation is str or origin is typing.Literal:
        return ""
    return None


def is_optional(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    return (origin is typing.Union or origin is types.UnionType) \
        and type(None) in typing.get_args(annotation)


@dataclass(frozen=True)
class Record:
    """A record: its name (the API's model name, the client's class name), what it is, and its
    fields in the order the API serves them."""

    name: str
    description: str
    fields: tuple[Field, ...]

    def __post_init__(self) -> None:
        names = [f.name for f in self.fields]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"record {self.name}: fields declared twice: {duplicates}")
        for f in self.fields:
            if f.deprecated and f.deprecated not in names:
                raise ValueError(f"record {self.name}: {f.name} replaced by unknown "
                                 f"{f.deprecated}")
            if f.written_by == "summary" and f.stored_column is None:
                raise ValueError(f"record {self.name}: {f.name} is filled but not stored")
            if f.convert in ("time", "ns_text") and f.stored_column is not None \
                    and f.stored_type is None:
                raise ValueError(f"record {self.name}: {f.name} is served as text from a "
                                 "stored ns: declare its stored_type")

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    def with_field(self, new: Field, after: str | None = None) -> Record:
        """A copy with one more field (after `after`, else last)."""
        fields = list(self.fields)
        at = len(fields) if after is None else [f.name for f in fields].index(after) + 1
        fields.insert(at, new)
        return dataclasses.replace(self, fields=tuple(fields))

    @property
    def served(self) -> tuple[Field, ...]:
        return tuple(f for f in self.fields if f.served)

    def write_columns(self, *writers: str) -> tuple[str, ...]:
        """The stored columns written by `writers` (all but the key and the database's own
        when none are named), each once, in declaration order."""
        wanted = set(writers) or {"summary", "service"}
        out: list[str] = []
        for f in self.fields:
            column = f.stored_column
            if column is not None and f.written_by in wanted and column not in out:
                out.append(column)
        return tuple(out)

    @functools.cached_property
    def write_plan(self) -> tuple[tuple[str, str | None, Any], ...]:
        """`write_values`' walk of the declaration, made once per record: each column the
        derivation writes, the summary attribute that fills it (None for a column the service
        gives) and its default. Derivation writes every trajectory through it."""
        return tuple((f.stored_column or "",
                      f.summary_attribute if f.written_by == "summary" else None,
                      f.write_default())
                     for f in self.writes("summary", "service"))

    def writes(self, *writers: str) -> tuple[Field, ...]:
        """The fields that own each written column (the first declared for a column)."""
        seen: set[str] = set()
        out: list[Field] = []
        for f in self.fields:
            column = f.stored_column
            if column is not None and f.written_by in writers and column not in seen:
                seen.add(column)
                out.append(f)
        return tuple(out)

    def select_items(self) -> tuple[tuple[str, str | None], ...]:
        """What a read row selects: (key, SQL expression or None for the plain column), each
        key once, for every served field."""
        out: dict[str, str | None] = {}
        for f in self.served:
            out.setdefault(f.read_key, f.select)
        return tuple(out.items())

    def select_list(self, alias: str = "") -> str:
        """The SELECT list of a read row, columns qualified by `alias` when given."""
        prefix = f"{alias}." if alias else ""
        return ", ".join(f"{expr} AS {key}" if expr is not None else f"{prefix}{key}"
                         for key, expr in self.select_items())

    def example(self) -> dict[str, Any]:
        """The OpenAPI example of a served record."""
        return {f.name: f.type.example() if isinstance(f.type, Record) else f.example
                for f in self.served}

    def cli_columns(self) -> tuple[tuple[Field, Cli], ...]:
        shown = [(f, f.cli) for f in self.fields if f.cli is not None]
        return tuple(sorted(shown, key=lambda pair: pair[1].order))


def write_values(record: Record, summary: object | None, given: Mapping[str, Any]
                 ) -> dict[str, Any]:
    """Every written column's value: from the normalizer's `summary` (fields written by
    "summary"), else from `given` (by column), else the field's default. A column in `given`
    wins over the summary."""
    out: dict[str, Any] = {}
    for column, attribute, default in record.write_plan:
        if column in given:
            out[column] = given[column]
        elif attribute is not None and summary is not None:
            out[column] = getattr(summary, attribute)
        else:
            out[column] = default
    unknown = set(given) - set(out)
    if unknown:
        raise KeyError(f"record {record.name}: no written column {sorted(unknown)}")
    return out


# ------------------------------------------------------------------------------- the filters


@dataclass(frozen=True)
class Param:
    """One filter of a list: its query parameter (API), keyword argument (client) and flag
    (CLI) are all `name`, and its SQL condition is `condition`."""

    name: str
    #: the parameter's type: str, int, bool, or a typing.Literal of its choices
    type: Any
    description: str = ""
    #: the SQL condition; `{}` stands for the parameter's value. A bool parameter gives the
    #: condition for true and `negated` the one for false.
    condition: str = ""
    negated: str = ""
    #: "time": RFC 3339 or Unix ns, compared as ns; "score": a score condition
    #: (trajhub.records.scores, `parse_score_condition`); "" as given
    convert: str = ""
    #: the condition is built by the storage layer (a named special case, e.g. free text)
    custom: bool = False
    #: the CLI's flag help when it differs from the description
    cli_help: str = ""
    #: the CLI flag's metavar
    metavar: str | None = None

    @property
    def flag(self) -> str:
        return f"-{self.name}" if len(self.name) == 1 else "--" + self.name.replace("_", "-")

    def choices(self) -> tuple[Any, ...] | None:
        if typing.get_origin(self.type) is typing.Literal:
            return typing.get_args(self.type)
        return None


@dataclass(frozen=True)
class Filter:
    """A list's filters; every one given must match."""

    name: str
    description: str
    params: tuple[Param, ...]

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    def with_param(self, new: Param) -> Filter:
        return dataclasses.replace(self, params=(*self.params, new))


__all__ = ["Cli", "Field", "Filter", "Param", "Record", "empty_value", "is_optional",
           "write_values"]
