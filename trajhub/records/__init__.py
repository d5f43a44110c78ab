"""Record declarations: each record trajhub stores and serves is a pydantic class here, declared
once field by field, and every layer derives its piece from that class, so that a field is
added in one place and no layer can disagree with another about it:

- storage (trajhub.storage): the columns a derivation writes, the SELECT list of the read row
  (`Record.write_columns`, `Record.select_list`), and a filter's SQL conditions (`Query`);
- the REST API (trajhub.service.api): the class is the response model (its example from
  `Record.example`), and a `Query` class is the query-parameter model of a list's filters;
- the Python client (trajhub.service.client): the class is the model a response is read into,
  and a `Query` class's fields are the keyword arguments a list accepts;
- the CLI (trajhub.service.cli): a list's table columns (`Cli`) and a filter's flags.

A field is an ordinary pydantic field, seen as such by editors and type checkers: its type, its
default (what a client reads when an older server lacks the field), its description and its
deprecation in `pydantic.Field`; what storage and the CLI need rides in its `Annotated`
metadata (`Stored`, `Cli`, `Example`). A field without `Stored` is a stored column of its name
that the service writes. Columns stored but never served are declared in the class's
`stored_only` (`StoredOnly`). /openapi.json marks every field required: the API always sends
each one (`json_schema_serialization_defaults_required`, and no defaults in the schema).

This module depends on nothing beyond the standard library and pydantic, so that the client
(which must not import the server) and the pure normalizers may read it, and storage needs
nothing of the service. The declarations themselves are in the modules beside this one:
`trajectories`, `traces`, `scores`, `sessions`, `rules`, `review`, `datasets`, `evaluations`
and `projects`; `query_types` holds the filters' parameter types (bounded texts, integers,
times), which the API checks and /openapi.json declares.

Time vocabulary (one across the API): a moment is `<what>_time`, an RFC 3339 UTC timestamp
(`start_time`, `end_time`); a length of time is `<what>_ms`, whole milliseconds as an integer
(`duration_ms`). A field of another name or shape that clients already read stays for one
version as a deprecated alias (`pages.deprecated_alias`, its description naming what replaces
it): still in every response, marked `deprecated: true` in /openapi.json. A renamed one reads
the same column as its new name (`created_at` and `created_time` both `Stored(column=
"created_at")`).
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue

from trajhub.records.pages import Renames

if TYPE_CHECKING:  # pydantic's own dependency: the client declares pydantic alone
    from pydantic_core import CoreSchema

# -------------------------------------------------------------------------------- the fields

#: `Stored.default` when none is declared: the type's empty value is written
UNSET: Any = type("Unset", (), {"__repr__": lambda self: "UNSET"})()


@dataclass(frozen=True)
class Stored:
    """Where a field's value is stored and how it is read: `Annotated` metadata of a field."""

    #: the column holding the value ("": the field's name); None when the field is computed
    #: when read (`select`) or not stored at all
    column: str | None = ""
    #: who writes the column: "summary" (the normalizer's summary attribute of `source`, by
    #: default the column's name), "service" (the derivation service, by column name),
    #: "key" (the row's key), "database" (the upsert itself), or "" (not stored)
    written_by: str = "service"
    #: an SQL expression read instead of a plain column (over the record's table)
    select: str | None = None
    #: how a stored value becomes the served one: "" as is; "time" ns → RFC 3339; "ns_text"
    #: ns → decimal text; "timestamp" a timestamptz → RFC 3339; "json" JSON text → its value;
    #: any other name is a converter the API supplies (e.g. "cost")
    convert: str = ""
    #: the type of the stored value when it differs from the served one (Unix ns for a time)
    stored_type: Any = None
    #: for written_by="summary": the attribute of the normalizer's summary
    source: str = ""
    #: written when nothing fills the column (a trajectory that could not be derived)
    default: Any = dataclasses.field(default=UNSET, compare=False)


#: a field served only: computed by the API or read under its own name, never written
SERVED_ONLY = Stored(column=None, written_by="")


def computed(select: str, convert: str = "") -> Stored:
    """A field read as an SQL expression over the record's table (`Stored.select`), never
    written."""
    return Stored(column=None, written_by="", select=select, convert=convert)


def json_column(column: str) -> Stored:
    """A jsonb column, read as its text and served as its value."""
    return Stored(select=f"{column}::text", convert="json", stored_type=str)


@dataclass(frozen=True)
class Cli:
    """How the CLI shows a field in a list's table: `Annotated` metadata of a field."""

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


# compared by identity: an example may be a list or a dict, which do not hash
@dataclass(frozen=True, eq=False)
class Example:
    """The field's value in the OpenAPI example of its record (`Record.example`)."""

    value: Any


@dataclass(frozen=True)
class StoredOnly:
    """A stored column that is never served (a record's `stored_only`)."""

    name: str
    type: Any
    stored: Stored = Stored()


@dataclass(frozen=True)
class Column:
    """One field of a record as the derivations read it (`Record.declared`): the pydantic
    field and its metadata in one place, or a `StoredOnly` column (`served` False)."""

    name: str
    #: the served type (a Record class for a nested object), or the stored type when unserved
    type: Any
    description: str
    column: str | None
    stored_type: Any
    select: str | None
    convert: str
    served: bool
    written_by: str
    source: str
    default: Any
    example: Any
    cli: Cli | None
    deprecated: bool

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


class _Named(typing.Protocol):
    @property
    def name(self) -> str: ...


_N = typing.TypeVar("_N", bound=_Named)


def _named(items: tuple[_N, ...], name: str) -> _N:
    """The field (or filter) of this name: a KeyError when none is declared."""
    for item in items:
        if item.name == name:
            return item
    raise KeyError(name)


def _meta(metadata: list[Any], kind: type[Any]) -> Any:
    return next((m for m in metadata if isinstance(m, kind)), None)


def _column(name: str, type_: Any, stored: Stored, served: bool, description: str = "",
            example: Any = None, cli: Cli | None = None, deprecated: bool = False) -> Column:
    return Column(name, type_, description, stored.column, stored.stored_type, stored.select,
                  stored.convert, served, stored.written_by, stored.source, stored.default,
                  example, cli, deprecated)


# ------------------------------------------------------------------------------- the records


class Record(Renames):
    """A record: the class's name is the API's model name and the client's class name, its
    docstring says what it is (its words, as one line, are the model's description), and its
    fields are in the order the API serves them.

    Frozen, and an unknown field is ignored: a client reads an answer from a newer server; a
    renamed field is read under either name (`Renames`)."""

    model_config = ConfigDict(frozen=True, extra="ignore",
                              json_schema_serialization_defaults_required=True)

    #: columns stored and never served, after the served fields in the write order
    stored_only: ClassVar[tuple[StoredOnly, ...]] = ()

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        # a docstring wraps where the description should not
        doc = cls.__dict__.get("__doc__")
        if doc:
            cls.__doc__ = " ".join(doc.split())

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: CoreSchema,
                                     handler: GetJsonSchemaHandler, /) -> JsonSchemaValue:
        # the defaults are the client's (what an older server lacks): the API sends every field
        json_schema = handler(core_schema)
        for prop in handler.resolve_ref_schema(json_schema).get("properties", {}).values():
            prop.pop("default", None)
        return json_schema

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Self:
        """An answer's object (its unknown fields ignored)."""
        return cls.model_validate(data)

    @classmethod
    def declared(cls) -> tuple[Column, ...]:
        """Every field (served, in order) and then every stored-only column."""
        return _declared(cls)

    @classmethod
    def served(cls) -> tuple[Column, ...]:
        return tuple(c for c in _declared(cls) if c.served)

    @classmethod
    def column(cls, name: str) -> Column:
        return _named(_declared(cls), name)

    @classmethod
    def write_columns(cls, *writers: str) -> tuple[str, ...]:
        """The stored columns written by `writers` (all but the key and the database's own
        when none are named), each once, in declaration order."""
        return tuple(c.stored_column or "" for c in cls.writes(*(writers or ("summary",
                                                                             "service"))))

    @classmethod
    def writes(cls, *writers: str) -> tuple[Column, ...]:
        """The fields that own each written column (the first declared for a column)."""
        seen: set[str] = set()
        out: list[Column] = []
        for c in _declared(cls):
            column = c.stored_column
            if column is not None and c.written_by in writers and column not in seen:
                seen.add(column)
                out.append(c)
        return tuple(out)

    @classmethod
    def write_plan(cls) -> tuple[tuple[str, str | None, Any], ...]:
        """`write_values`' walk of the declaration, made once per record: each column the
        derivation writes, the summary attribute that fills it (None for a column the service
        gives) and its default. Derivation writes every trajectory through it."""
        return _write_plan(cls)

    @classmethod
    def select_items(cls) -> tuple[tuple[str, str | None], ...]:
        """What a read row selects: (key, SQL expression or None for the plain column), each
        key once, for every served field that is stored or selected (not `SERVED_ONLY`: the
        API computes those)."""
        out: dict[str, str | None] = {}
        for c in cls.served():
            if c.stored_column is not None or c.select is not None:
                out.setdefault(c.read_key, c.select)
        return tuple(out.items())

    @classmethod
    def select_list(cls, alias: str = "") -> str:
        """The SELECT list of a read row, columns qualified by `alias` when given."""
        prefix = f"{alias}." if alias else ""
        return ", ".join(f"{expr} AS {key}" if expr is not None else f"{prefix}{key}"
                         for key, expr in cls.select_items())

    @classmethod
    def example(cls) -> dict[str, Any]:
        """The OpenAPI example of a served record."""
        return {c.name: c.type.example() if is_record(c.type) else c.example
                for c in cls.served()}

    @classmethod
    def cli_columns(cls) -> tuple[tuple[Column, Cli], ...]:
        shown = [(c, c.cli) for c in _declared(cls) if c.cli is not None]
        return tuple(sorted(shown, key=lambda pair: pair[1].order))


def is_record(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, Record)


@functools.cache
def _declared(cls: type[Record]) -> tuple[Column, ...]:
    out: list[Column] = []
    for name, info in cls.model_fields.items():
        example = _meta(info.metadata, Example)
        out.append(_column(
            name, info.annotation, _meta(info.metadata, Stored) or Stored(), True,
            info.description or "", example.value if example is not None else None,
            _meta(info.metadata, Cli), bool(info.deprecated)))
    out.extend(_column(s.name, s.type, s.stored, False) for s in cls.stored_only)
    names = [c.name for c in out]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"record {cls.__name__}: fields declared twice: {duplicates}")
    for c in out:
        if c.written_by == "summary" and c.stored_column is None:
            raise ValueError(f"record {cls.__name__}: {c.name} is filled but not stored")
        if c.convert in ("time", "ns_text") and c.stored_column is not None \
                and c.stored_type is None:
            raise ValueError(f"record {cls.__name__}: {c.name} is served as text from a "
                             "stored ns: declare its stored_type")
    return tuple(out)


@functools.cache
def _write_plan(cls: type[Record]) -> tuple[tuple[str, str | None, Any], ...]:
    return tuple((c.stored_column or "",
                  c.summary_attribute if c.written_by == "summary" else None,
                  c.write_default())
                 for c in cls.writes("summary", "service"))


def write_values(record: type[Record], summary: object | None, given: Mapping[str, Any]
                 ) -> dict[str, Any]:
    """Every written column's value: from the normalizer's `summary` (fields written by
    "summary"), else from `given` (by column), else the field's default. A column in `given`
    wins over the summary."""
    out: dict[str, Any] = {}
    for column, attribute, default in _write_plan(record):
        if column in given:
            out[column] = given[column]
        elif attribute is not None and summary is not None:
            out[column] = getattr(summary, attribute)
        else:
            out[column] = default
    if not out.keys() >= given.keys():
        unknown = set(given) - set(out)
        raise KeyError(f"record {record.__name__}: no written column {sorted(unknown)}")
    return out


# ------------------------------------------------------------------------------- the filters


@dataclass(frozen=True)
class Condition:
    """A filter's SQL condition: `Annotated` metadata of a `Query` field. `{}` stands for the
    filter's value; a bool filter gives the condition for true and `negated` the one for
    false."""

    sql: str = ""
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


@dataclass(frozen=True)
class Param:
    """One filter of a list as the derivations read it (`Query.params`): its query parameter
    (API), keyword argument (client) and flag (CLI) are all `name`."""

    name: str
    #: the filter's plain type: str, int, bool, or a typing.Literal of its choices
    type: Any
    description: str
    condition: str
    negated: str
    convert: str
    custom: bool
    cli_help: str
    metavar: str | None

    @property
    def flag(self) -> str:
        return f"-{self.name}" if len(self.name) == 1 else "--" + self.name.replace("_", "-")

    def choices(self) -> tuple[Any, ...] | None:
        if typing.get_origin(self.type) is typing.Literal:
            return typing.get_args(self.type)
        return None


class Query(BaseModel):
    """A list's filters (each field one, every one optional); every one given must match."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @classmethod
    def params(cls) -> tuple[Param, ...]:
        """The filters declared by `Condition` (a subclass's other fields, such as paging,
        are not filters)."""
        return _params(cls)

    @classmethod
    def param(cls, name: str) -> Param:
        return _named(_params(cls), name)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(p.name for p in _params(cls))


def _plain(annotation: Any) -> Any:
    """`Annotated[T, …] | None` → T."""
    rest = [a for a in typing.get_args(annotation) if a is not type(None)]
    if is_optional(annotation) and len(rest) == 1:
        annotation = rest[0]
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


@functools.cache
def _params(cls: type[Query]) -> tuple[Param, ...]:
    out: list[Param] = []
    for name, info in cls.model_fields.items():
        c = _meta(info.metadata, Condition)
        if c is not None:
            out.append(Param(name, _plain(info.annotation), info.description or "", c.sql,
                             c.negated, c.convert, c.custom, c.cli_help, c.metavar))
    return tuple(out)


__all__ = ["SERVED_ONLY", "Cli", "Column", "Condition", "Example", "Param", "Query", "Record",
           "Stored", "StoredOnly", "computed", "empty_value", "is_optional", "is_record",
           "write_values"]
