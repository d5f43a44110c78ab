"""Reads of sessions: the trajectories of a project sharing a session id, aggregated with plain
SQL over the `trajectories` table when read (trajhub.records.sessions declares the aggregates).

The session index (project, session_id, start_ns DESC, trace_id DESC; migration 0014, one per
time partition since migration 0021) serves both reads: the list groups the project's runs
that have a session id, and one session is an index range read in its turns' order."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from trajhub.records.sessions import SESSION_FILTER, SESSION_SUMMARY, SESSION_TURN
from trajhub.storage.database import Connection
from trajhub.storage.rows import RecordRow
from trajhub.storage.sql import Params
from trajhub.storage.stored_documents import DOCUMENT, unpack
from trajhub.storage.trajectory_reads import conditions

#: the turns of one session `get_session` reads at most
MAX_TURNS = 5000


@dataclass(frozen=True)
class SessionFilter:
    """A session list query: `values` holds the filters of SESSION_FILTER that were given, by
    name (times already in Unix ns); `cursor` is the last listed session's
    (latest turn start ns, session id)."""

    values: Mapping[str, Any] = field(default_factory=dict)
    cursor: tuple[int, str] | None = None
    limit: int = 50

    def __post_init__(self) -> None:
        unknown = set(self.values) - set(SESSION_FILTER.names())
        if unknown:
            raise ValueError(f"unknown session filters: {sorted(unknown)}")


class SessionSummaryRow(RecordRow):
    """A session as the list shows it (trajhub.records.sessions' SESSION_SUMMARY); the
    `last_turn_time` key holds the latest turn's start in Unix ns until the API converts it."""

    __slots__ = ()
    record = SESSION_SUMMARY

    @property
    def session_id(self) -> str:
        return str(self["session_id"])

    @property
    def last_turn_ns(self) -> int:
        return int(self["last_turn_time"])


class SessionTurnRow(RecordRow):
    """One turn (SESSION_TURN) and its trajectory document's text (None when it has none)."""

    __slots__ = ()
    record = SESSION_TURN
    extra: ClassVar[Mapping[str, str]] = {"document": DOCUMENT}

    @property
    def document(self) -> str | None:
        return unpack(self["document"])


async def list_sessions(conn: Connection, project: str, f: SessionFilter
                        ) -> list[SessionSummaryRow]:
    """The sessions matching `f`, the one with the latest turn first (ties by session id,
    descending), after the cursor."""
    arg = Params(project)
    having = conditions(SESSION_FILTER, f.values, arg, {})
    if f.cursor is not None:
        having.append(f"(max(start_ns), session_id) < ({arg(f.cursor[0])}::bigint, "
                      f"{arg(f.cursor[1])}::text)")
    sql = (f"SELECT {SESSION_SUMMARY.select_list()} FROM trajectories "
           "WHERE project = $1 AND session_id IS NOT NULL GROUP BY session_id "
           f"HAVING {' AND '.join(having) or 'true'} "
           f"ORDER BY max(start_ns) DESC, session_id DESC LIMIT {arg(f.limit)}")
    return SessionSummaryRow.from_records(await conn.fetch(sql, *arg.values))


async def session_summary(conn: Connection, project: str, session_id: str
                          ) -> SessionSummaryRow | None:
    row = await conn.fetchrow(
        f"SELECT {SESSION_SUMMARY.select_list()} FROM trajectories "
        "WHERE project = $1 AND session_id = $2 GROUP BY session_id", project, session_id)
    return SessionSummaryRow.from_record(row) if row is not None else None


async def session_turns(conn: Connection, project: str, session_id: str,
                        limit: int = MAX_TURNS) -> list[SessionTurnRow]:
    """The session's turns in the order they started (ties by trace id), the first `limit`."""
    rows = await conn.fetch(
        f"SELECT {SessionTurnRow.columns()} FROM trajectories "
        "WHERE project = $1 AND session_id = $2 ORDER BY start_ns, trace_id LIMIT $3",
        project, session_id, limit)
    return SessionTurnRow.from_records(rows)


async def documents(conn: Connection, project: str, trace_ids: list[str]) -> dict[str, str]:
    """The trajectory documents' text of these traces (those that have one), by trace id."""
    rows = await conn.fetch(
        f"SELECT trace_id, {DOCUMENT} AS document FROM trajectories "
        "WHERE project = $1 AND trace_id = ANY($2::text[])", project, trace_ids)
    out: dict[str, str] = {}
    for row in rows:
        text = unpack(row["document"])
        if text is not None:
            out[str(row["trace_id"])] = text
    return out
