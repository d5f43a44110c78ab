"""What the REST API returns, as typed objects. Each class reads the fields it knows from a
response body and ignores the rest, so a newer server with more fields still works.

The records (the trace and trajectory summaries, scores, sessions, rules, review queues and
items, projects, datasets and their items, evaluations and their results) are the
classes trajhub.records declares, which the API serves as they are (pydantic and the standard
library only: the client still imports nothing of the server); `from_json` reads one. Each
field has a default, so an answer from an older server without a newer field still reads."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

# The records are declared once (trajhub.records): those classes are the client's models.
from trajhub.records.datasets import Dataset as Dataset
from trajhub.records.datasets import FillOutcome, ImportOutcome, ItemWithTrajectory
from trajhub.records.evaluations import EvaluationDetail
from trajhub.records.evaluations import EvaluationResult as EvaluationResult
from trajhub.records.evaluations import EvaluatorAggregate as EvaluatorAggregate
from trajhub.records.evaluations import ItemOutcomes as ItemOutcomes
from trajhub.records.logs import LogRecordView as LogRecordView
from trajhub.records.projects import ProjectEntry
from trajhub.records.replay import StepEventView
from trajhub.records.review import ReviewItem as ReviewItem
from trajhub.records.review import ReviewQueue as ReviewQueue
from trajhub.records.rules import Rule as Rule
from trajhub.records.rules import RuleBackfill as RuleBackfill
from trajhub.records.scores import Score as Score
from trajhub.records.scores import ScoreConfig as ScoreConfig
from trajhub.records.sessions import SessionSummary as SessionSummary
from trajhub.records.sessions import SessionTurn as SessionTurn
from trajhub.records.timeseries import TimeSeries as TimeSeries
from trajhub.records.traces import TraceSummary as TraceSummary
from trajhub.records.trajectories import CostView as CostView
from trajhub.records.trajectories import TrajectorySummary as TrajectorySummary

#: a project and its trace and span counts (trajhub.records.projects)
Project = ProjectEntry
#: an item of a dataset, with its trajectory snapshot when asked for
#: (trajhub.records.datasets)
DatasetItem = ItemWithTrajectory
#: what filling a dataset did (trajhub.records.datasets)
FillResult = FillOutcome
#: what importing items did (trajhub.records.datasets)
ImportResult = ImportOutcome
#: an evaluation (trajhub.records.evaluations); `aggregates` and `items` are filled by
#: `get_evaluation` only (empty otherwise)
Evaluation = EvaluationDetail

T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a list endpoint; pass `next_cursor` back to get the next one (None: last)."""

    items: list[T]
    next_cursor: str | None = None
    total: int | None = None


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
    """A run's playback: its step events in order (the lines of `GET /trajectories/{id}/events`)
    and the state of the trajectory they were read from (its headers)."""

    trace_id: str
    events: list[StepEventView]
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
