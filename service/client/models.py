"""What the REST API returns, as typed objects. Each class reads the fields it knows from a
response body and ignores the rest, so a newer server with more fields still works.

The summaries of the trace and trajectory lists are generated from their declarations
(trajhub.records, which is plain data: the client still imports nothing of the server), so they
hold exactly the fields the API serves, with the same types."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Self, TypeVar

from trajhub.records import Field, Record, empty_value, is_optional
from trajhub.records.evaluations import EVALUATION_RESULT
from trajhub.records.review import REVIEW_ITEM, REVIEW_QUEUE
from trajhub.records.rules import BACKFILL, RULE
from trajhub.records.scores import SCORE, SCORE_CONFIG
from trajhub.records.sessions import SESSION_SUMMARY, SESSION_TURN
from trajhub.records.traces import TRACE_SUMMARY
from trajhub.records.trajectories import TRAJECTORY_SUMMARY

T = TypeVar("T")


class _FromJson:
    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Self:
        known = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a list endpoint; pass `next_cursor` back to get the next one (None: last)."""

    items: list[T]
    next_cursor: str | None = None
    total: int | None = None


@dataclass(frozen=True)
class Project(_FromJson):
    name: str
    trace_count: int = 0
    span_count: int = 0
    first_span_at: str | None = None
    last_span_at: str | None = None


@dataclass(frozen=True)
class RecordModel(_FromJson):
    """Base of the models generated from a record declaration (`record_model`): one attribute
    per served field, nested records as their own models."""

    record: ClassVar[Record]

    if TYPE_CHECKING:
        # the fields are generated: type checkers see each as Any
        def __getattr__(self, name: str) -> Any: ...

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Self:
        values = {}
        for f in cls.record.served:
            if f.name not in data:
                continue
            value = data[f.name]
            if isinstance(f.type, Record) and isinstance(value, Mapping):
                value = record_model(f.type).from_json(value)
            values[f.name] = value
        return cls(**values)


_CLIENT_MODELS: dict[Record, type[RecordModel]] = {}


def _attribute(f: Field, required: bool) -> tuple[str, Any, Any]:
    if isinstance(f.type, Record):
        return f.name, record_model(f.type) | None, dataclasses.field(default=None)
    if required:
        return f.name, f.type, dataclasses.field()
    empty = empty_value(f.type)
    if isinstance(empty, tuple):  # a list: its own empty list per object
        return f.name, f.type, dataclasses.field(default_factory=list)
    return f.name, f.type, dataclasses.field(default=None if is_optional(f.type) else empty)


def record_model(record: Record) -> type[RecordModel]:
    """The frozen dataclass of a served record: its key field (`written_by="key"`) required,
    every other field defaulting to its type's empty value, so an answer from an older server
    (without a newer field) still reads."""
    if record not in _CLIENT_MODELS:
        attributes = [_attribute(f, f.written_by == "key") for f in record.served]
        model = dataclasses.make_dataclass(
            record.name, attributes, bases=(RecordModel,), frozen=True,
            namespace={"record": record, "__doc__": record.description,
                       "__module__": __name__})
        _CLIENT_MODELS[record] = model
    return _CLIENT_MODELS[record]


if TYPE_CHECKING:
    TraceSummary = RecordModel
    TrajectorySummary = RecordModel
    EvaluationResult = RecordModel
    Score = RecordModel
    ScoreConfig = RecordModel
    SessionSummary = RecordModel
    SessionTurn = RecordModel
    Rule = RecordModel
    RuleBackfill = RecordModel
    ReviewQueue = RecordModel
    ReviewItem = RecordModel
else:
    #: a row of the trace list (trajhub.records.traces)
    TraceSummary = record_model(TRACE_SUMMARY)
    #: a row of the trajectory list (trajhub.records.trajectories), with its `cost`
    TrajectorySummary = record_model(TRAJECTORY_SUMMARY)
    #: one evaluator's result for one item (trajhub.records.evaluations)
    EvaluationResult = record_model(EVALUATION_RESULT)
    #: a score of a trajectory or of one of its steps (trajhub.records.scores)
    Score = record_model(SCORE)
    #: what a project's scores of one name must be (trajhub.records.scores)
    ScoreConfig = record_model(SCORE_CONFIG)
    #: an online evaluation rule (trajhub.records.rules)
    Rule = record_model(RULE)
    #: a rule's backfill and its progress (trajhub.records.rules)
    RuleBackfill = record_model(BACKFILL)
    #: a row of the session list (trajhub.records.sessions), with its `cost`
    SessionSummary = record_model(SESSION_SUMMARY)
    #: one turn of a session: the user's text, the answer, status, tokens and cost
    SessionTurn = record_model(SESSION_TURN)
    #: an annotation queue and its progress (trajhub.records.review)
    ReviewQueue = record_model(REVIEW_QUEUE)
    #: a trajectory in an annotation queue, and its review (trajhub.records.review)
    ReviewItem = record_model(REVIEW_ITEM)


@dataclass(frozen=True)
class Session:
    """One session (`GET /sessions/{id}`): its summary and its turns, oldest first; `truncated`
    when it has more turns than were asked for."""

    session_id: str
    summary: SessionSummary
    turns: list[SessionTurn]
    truncated: bool = False

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Session:
        return cls(str(data["session_id"]), SessionSummary.from_json(data["summary"]),
                   [SessionTurn.from_json(t) for t in data.get("turns", [])],
                   bool(data.get("truncated", False)))


@dataclass(frozen=True)
class RunEvents:
    """A run's playback: its step events in order (dicts as `GET /trajectories/{id}/events`
    gives them) and the state of the trajectory they were read from."""

    trace_id: str
    events: list[dict[str, Any]]
    status: str
    revision: int
    #: how many events the run has (more than `events` for a page)
    total: int = 0
    #: a page's: pass as `cursor` for the next page; None on the last (or when all were asked
    #: for)
    next_cursor: str | None = None
    #: deprecated (kept for one version): use `next_cursor`. The position of the next page,
    #: for a page asked for by `offset`
    next_offset: int | None = None


@dataclass(frozen=True)
class StoredTrajectory:
    """A trajectory document (a dict in trajectory.schema.json's format) and its state."""

    trace_id: str
    document: dict[str, Any]
    status: str
    revision: int

    @property
    def final(self) -> bool:
        return self.status == "final"


@dataclass(frozen=True)
class Dataset(_FromJson):
    name: str
    description: str = ""
    item_count: int = 0
    created_at: str | None = None
    updated_at: str | None = None


@dataclass(frozen=True)
class DatasetItem(_FromJson):
    id: str
    dataset: str | None = None
    input: Any = None
    reference_output: Any = None
    expectations: dict[str, Any] | None = None
    #: the rest of the run's state (the request and final answer are input / reference_output)
    metadata: dict[str, Any] = field(default_factory=dict)
    source_trace_id: str | None = None
    tags: list[str] = field(default_factory=list)
    created_at: str | None = None
    updated_at: str | None = None
    trajectory: dict[str, Any] | None = None


@dataclass(frozen=True)
class FillResult(_FromJson):
    added: int = 0
    skipped_duplicates: int = 0
    sampled_out: int = 0
    not_found: list[str] = field(default_factory=list)
    not_final: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ImportResult(_FromJson):
    added: int = 0
    skipped_duplicates: int = 0


@dataclass(frozen=True)
class EvaluatorAggregate(_FromJson):
    evaluator: str
    total: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    pass_rate: float | None = None
    mean_score: float | None = None


@dataclass(frozen=True)
class ItemOutcomes(_FromJson):
    total: int = 0
    evaluated: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0


@dataclass(frozen=True)
class Evaluation(_FromJson):
    """An evaluation run. `aggregates` and `items` are filled by `get_evaluation` only."""

    id: int
    dataset: str
    target: str
    status: str
    run: str | None = None
    evaluators: list[Any] = field(default_factory=list)
    error: str | None = None
    item_count: int = 0
    done_items: int = 0
    created_at: str | None = None
    finished_at: str | None = None
    aggregates: list[EvaluatorAggregate] = field(default_factory=list)
    items: ItemOutcomes | None = None

    @property
    def running(self) -> bool:
        return self.status == "running"

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Self:
        out = super().from_json({k: v for k, v in data.items()
                                 if k not in ("aggregates", "items")})
        return dataclasses.replace(
            out, aggregates=[EvaluatorAggregate.from_json(a) for a in data.get("aggregates", [])],
            items=ItemOutcomes.from_json(data["items"]) if data.get("items") else None)
