"""Typed rows of the read side.

Each row class is a frozen dataclass whose fields are the columns of the SELECT that reads it:
`columns()` renders the select list from the fields, so a column is named in exactly one place.
A field whose value is an SQL expression rather than a plain column says so in its metadata
(`field(metadata=sql(...))`). Rows also read like a mapping of their columns (`row["name"]`),
as the asyncpg records they replace did, so code that renders a row does not care where it
came from.

Rows of a declared record (trajhub.records) are `RecordRow`s instead: their select list is the
declaration's, so a field declared there is read without touching this module.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Generic, Literal, Self, TypeVar

import asyncpg
import orjson

from trajhub.records import Record
from trajhub.records.datasets import Dataset, Item, ItemWithTrajectory
from trajhub.records.evaluations import Evaluation, EvaluatorAggregate, ItemOutcomes
from trajhub.records.projects import ProjectEntry
from trajhub.records.traces import TraceSummary
from trajhub.records.trajectories import TrajectorySummary
from trajhub.storage.database import Connection
from trajhub.storage.stored_documents import DOCUMENT, EXPLANATION, unpack


def sql(expression: str) -> dict[str, str]:
    """Field metadata: the field is computed by `expression` (rendered as
    `expression AS field`); use as `field(metadata=sql("..."))`."""
    return {"sql": expression}


def stored_text(expression: str) -> dict[str, str]:
    """Field metadata of a compressed document (storage/stored_documents.py): selected by
    `expression`, inflated to its text when the row is read."""
    return {"sql": expression, "unpack": "yes"}


class Row(Mapping[str, Any]):
    """Base of the row classes (subclasses are frozen dataclasses)."""

    #: the declared record (trajhub.records) whose select list reads this row, if any
    declared: ClassVar[type[Record] | None] = None

    @classmethod
    def columns(cls, alias: str = "", **params: str) -> str:
        """The SELECT list: the declared record's, or else plain fields as `alias.field` and
        computed ones as `expr AS field` (`params` fill `{placeholders}` in the expressions)."""
        if cls.declared is not None:
            return cls.declared.select_list(alias)
        prefix = f"{alias}." if alias else ""
        out = []
        for f in fields(cls):  # type: ignore[arg-type]
            expression = f.metadata.get("sql")
            out.append(f"{expression.format(**params)} AS {f.name}" if expression
                       else f"{prefix}{f.name}")
        return ", ".join(out)

    @classmethod
    def from_record(cls, record: asyncpg.Record) -> Self:
        values = dict(record.items())
        for f in fields(cls):  # type: ignore[arg-type]
            if f.metadata.get("unpack"):
                values[f.name] = unpack(values[f.name])
        return cls(**values)

    @classmethod
    def from_records(cls, records: list[asyncpg.Record]) -> list[Self]:
        return [cls.from_record(r) for r in records]

    @classmethod
    async def fetch_one(cls, conn: Connection, query: str, *args: Any) -> Self | None:
        """The first row `query` returns, read as this class; None when it returns none."""
        row = await conn.fetchrow(query, *args)
        return cls.from_record(row) if row is not None else None

    def __getitem__(self, key: str) -> Any:
        if key not in self.__dataclass_fields__:  # type: ignore[attr-defined]
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(self.__dataclass_fields__)  # type: ignore[attr-defined]

    def __len__(self) -> int:
        return len(self.__dataclass_fields__)  # type: ignore[attr-defined]


class RecordRow(Mapping[str, Any]):
    """A row read with a declared record's select list (`Record.select_list`): its values by
    key (`Column.read_key`), plus the `extra` computed columns of the query. Subclasses name
    the record and give typed properties for what storage and the API read by hand."""

    __slots__ = ("_values",)
    record: ClassVar[type[Record]]
    #: computed columns the query adds: name → SQL expression with {placeholders}
    extra: ClassVar[Mapping[str, str]] = {}

    def __init__(self, values: Mapping[str, Any]) -> None:
        self._values = dict(values)

    @classmethod
    def columns(cls, alias: str = "", **params: str) -> str:
        # `{prefix}` names the query's alias of the record's table
        params = {"prefix": f"{alias}." if alias else "", **params}
        extra = [f"{expression.format(**params)} AS {name}"
                 for name, expression in cls.extra.items()]
        return ", ".join([cls.record.select_list(alias), *extra])

    @classmethod
    def from_record(cls, record: asyncpg.Record) -> Self:
        return cls(dict(record.items()))

    @classmethod
    def from_records(cls, records: list[asyncpg.Record]) -> list[Self]:
        return [cls(dict(r.items())) for r in records]

    @classmethod
    async def fetch_one(cls, conn: Connection, query: str, *args: Any) -> Self | None:
        """The first row `query` returns, read as this class; None when it returns none."""
        row = await conn.fetchrow(query, *args)
        return cls.from_record(row) if row is not None else None

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._values!r})"

    @property
    def trace_id(self) -> str:
        return str(self._values["trace_id"])


class IdRow(RecordRow):
    """A record row keyed by an integer `id` (a rule, a score, a review item)."""

    __slots__ = ()

    @property
    def id(self) -> int:
        return int(self["id"])


# ------------------------------------------------------------------------------ traces, spans

@dataclass(frozen=True)
class SpanRow(Row):
    """A stored span: the filterable copies and the body as received."""

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    kind: int
    start_ns: int
    end_ns: int
    status_code: int
    service_name: str
    resource_id: int | None
    format: int
    body: bytes


class TraceSummaryRow(RecordRow):
    """A trace as the trace list shows it (the `traces` table, kept by the derivation
    worker), as declared in trajhub.records.traces."""

    __slots__ = ()
    record = TraceSummary

    @property
    def start_ns(self) -> int:
        return int(self["start_ns"])


class ProjectRow(RecordRow):
    """A project and the size and time span of what it holds (its rows of `traces`
    aggregated), as declared in trajhub.records.projects."""

    __slots__ = ()
    record = ProjectEntry


# ------------------------------------------------------------------------------ trajectories

class TrajectorySummaryRow(RecordRow):
    """A trajectory as the trajectory list shows it, as declared in
    trajhub.records.trajectories; `sort_value` is the value it was sorted by (for the
    cursor)."""

    __slots__ = ()
    record = TrajectorySummary
    extra: ClassVar[Mapping[str, str]] = {"sort_value": "{sort}"}

    @property
    def sort_value(self) -> Any:
        return self["sort_value"]


@dataclass(frozen=True)
class TrajectoryDocumentRow(Row):
    trace_id: str
    status: str
    revision: int
    document: str | None = field(metadata=stored_text(DOCUMENT))


#: a trajectory is open while spans may still arrive, then final
TrajectoryStatus = Literal["open", "final"]


@dataclass(frozen=True)
class _TrajectoryState(Row):
    """What every read of one trajectory row carries besides its document."""

    status: TrajectoryStatus
    revision: int
    normalizer_version: str
    derivation_error: str | None


@dataclass(frozen=True)
class TrajectoryExportRow(_TrajectoryState):
    """A trajectory with its document as stored (compressed bytes): the export sends it
    decompressed, never decoded to text and encoded again (a large run's document is hundreds
    of MiB as text: docs/large-traces.md)."""

    document: bytes | None = field(metadata=sql(DOCUMENT))


@dataclass(frozen=True)
class TrajectoryRow(_TrajectoryState):
    document: str | None = field(metadata=stored_text(DOCUMENT))


@dataclass(frozen=True)
class ExplanationRow(Row):
    status: TrajectoryStatus
    revision: int
    normalizer_version: str
    warnings: list[str]
    derivation_error: str | None
    explanation: str | None = field(metadata=stored_text(EXPLANATION))


# ------------------------------------------------------------------------------ datasets

class DatasetRow(IdRow):
    """A dataset as declared in trajhub.records.datasets, and its id."""

    __slots__ = ()
    record = Dataset
    extra: ClassVar[Mapping[str, str]] = {"id": "{prefix}id"}

    @property
    def name(self) -> str:
        return str(self["name"])


class ItemRow(RecordRow):
    """An item of a dataset as declared in trajhub.records.datasets, with its place in the
    set (`seq`); JSON fields as JSON text."""

    __slots__ = ()
    record: ClassVar[type[Record]] = Item
    extra: ClassVar[Mapping[str, str]] = {"seq": "{prefix}seq"}

    @property
    def id(self) -> str:
        return str(self["id"])


class ItemWithTrajectoryRow(ItemRow):
    """An item with its trajectory snapshot (the document as JSON text)."""

    __slots__ = ()
    record = ItemWithTrajectory


# ------------------------------------------------------------------------------ evaluations

class EvaluationRow(IdRow):
    """An evaluation as declared in trajhub.records.evaluations."""

    __slots__ = ()
    record = Evaluation


class AggregateRow(RecordRow):
    """One evaluator's results over a run (`EvaluatorAggregate`)."""

    __slots__ = ()
    record = EvaluatorAggregate


class ItemOutcomesRow(RecordRow):
    """Items judged so far: passed every evaluator, failed one, or hit an error
    (`ItemOutcomes`)."""

    __slots__ = ()
    record = ItemOutcomes


@dataclass(frozen=True)
class RunItemRow(Row):
    """An item with what evaluators need, its snapshot included."""

    id: str
    seq: int
    input: str | None = field(metadata=sql("input::text"))
    reference_output: str | None = field(metadata=sql("reference_output::text"))
    expectations: str = field(metadata=sql("expectations::text"))
    trajectory: str | None = field(metadata=sql("trajectory::text"))
    source_trace_id: str | None


@dataclass(frozen=True)
class TargetTrajectoryRow(Row):
    """The trajectory an evaluation scores."""

    trace_id: str
    status: str
    document: str | None = field(metadata=stored_text(DOCUMENT))


# ------------------------------------------------------------------------------ written records

#: now, as the tables' `_ns` columns store a moment (the statement's clock)
NOW_NS = "(extract(epoch FROM clock_timestamp()) * 1000000)::bigint * 1000"

_Named = TypeVar("_Named", bound=IdRow)


@dataclass(frozen=True)
class NamedRecords(Generic[_Named]):
    """A project's table of records a client creates and edits, unique by name within the
    project and keyed by `id` (online evaluation rules, alert rules): one insert and one update
    serve each, written from the columns a client gives and read back as `row`."""

    table: str
    row: type[_Named]
    #: the columns a client gives, in the order they are written
    written: tuple[str, ...]
    #: those of them holding JSON: sent as text, cast on write
    json: frozenset[str] = frozenset()
    #: what an edit sets besides the given columns and `updated_ns`
    on_edit: tuple[str, ...] = ()

    def _placeholder(self, column: str, index: int) -> str:
        return f"${index}::jsonb" if column in self.json else f"${index}"

    def _value(self, column: str, value: Any) -> Any:
        """A JSON column's value as text (given as text already, or as a value to encode)."""
        if column in self.json and value is not None and not isinstance(value, str):
            return orjson.dumps(value).decode()
        return value

    async def create(self, conn: Connection, project: str, values: Mapping[str, Any]
                     ) -> _Named | None:
        """A new record (values by column); None when the project has one of that name."""
        columns = [c for c in self.written if c in values]
        record_id = await conn.fetchval(
            f"INSERT INTO {self.table} (project, {', '.join(columns)}) VALUES ($1, "
            + ", ".join(self._placeholder(c, i) for i, c in enumerate(columns, 2))
            + ") ON CONFLICT (project, name) DO NOTHING RETURNING id",
            project, *(self._value(c, values[c]) for c in columns))
        return None if record_id is None else await self.get(conn, project, record_id)

    async def get(self, conn: Connection, project: str, record_id: int) -> _Named | None:
        # Read back by a statement of its own: a record's columns may count its rows elsewhere
        # with a subquery (a rule's queued runs), which Citus takes in no INSERT or UPDATE
        # (storage/citus_tables.py).
        return await self.row.fetch_one(
            conn, f"SELECT {self.row.columns()} FROM {self.table} "
            "WHERE project = $1 AND id = $2", project, record_id)

    async def update(self, conn: Connection, project: str, record_id: int,
                     values: Mapping[str, Any]) -> _Named | None:
        """Change the given columns; None when the project has no such record. A name another
        record has raises asyncpg's UniqueViolationError."""
        columns = [c for c in self.written if c in values]
        sets = [f"{c} = {self._placeholder(c, i)}" for i, c in enumerate(columns, 3)]
        # the time as a value: Citus runs no VOLATILE function (clock_timestamp()) in an
        # UPDATE of a reference table
        sets += [f"updated_ns = ${len(columns) + 3}::bigint", *self.on_edit]
        updated = await conn.fetchval(
            f"UPDATE {self.table} SET {', '.join(sets)} WHERE project = $1 AND id = $2 "
            "RETURNING id",
            project, record_id, *(self._value(c, values[c]) for c in columns), time.time_ns())
        return None if updated is None else await self.get(conn, project, record_id)
