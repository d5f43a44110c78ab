"""Reads of sessions: the trajectories of a project sharing a session id. A session's summary
is its row (`sessions`, migration 0092), kept as its turns change (storage/session_rows.py,
docs/sessions.md); trajhub.records.sessions declares what is read of it.

The list walks the rows by latest turn (sessions_latest: project, last_start_ns DESC,
session_id DESC; or the partial copies of it for failed and waiting sessions), or, under
sort=score:<name>, the session score rows by mean (session_scores_mean). Filters on turns (a
user, an agent, a score) find sessions through the trajectories' indexes. A session's turns
are a range of trajectories_session (project, session_id, start_ns DESC, trace_id DESC;
migration 0014, one per time partition, migration 0021)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import orjson

from trajhub.records.sessions import SessionQuery, SessionSummary, SessionTurn
from trajhub.storage.database import Connection
from trajhub.storage.rows import RecordRow
from trajhub.storage.sql import Params
from trajhub.storage.stored_documents import DOCUMENT, unpack
from trajhub.storage.trajectory_reads import score_condition

#: the turns of one session `get_session` reads at most
MAX_TURNS = 5000
#: a set of sessions the list's filters name is read session by session up to this size, and
#: looked up while walking the project's sessions when larger (`list_sessions`)
SMALL_SET = 1000


@dataclass(frozen=True)
class SessionFilter:
    """A session list query: `values` holds the filters of SessionQuery that were given, by
    name (times already in Unix ns); `cursor` is the last listed session's
    (latest turn start ns, session id)."""

    values: Mapping[str, Any] = field(default_factory=dict)
    cursor: tuple[int | float, str] | None = None
    limit: int = 50
    #: `sort=score:<name>`: by each session's mean of that score, highest first (the cursor is
    #: then (mean, session id)); None: latest turn first
    score_sort: str | None = None

    def __post_init__(self) -> None:
        unknown = set(self.values) - set(SessionQuery.names())
        if unknown:
            raise ValueError(f"unknown session filters: {sorted(unknown)}")


class SessionSummaryRow(RecordRow):
    """A session as the list shows it (trajhub.records.sessions' SessionSummary); the
    `last_turn_time` key holds the latest turn's start in Unix ns until the API converts it."""

    __slots__ = ()
    record = SessionSummary

    @property
    def session_id(self) -> str:
        return str(self["session_id"])

    @property
    def last_turn_ns(self) -> int:
        return int(self["last_turn_time"])

    @property
    def sort_value(self) -> float:
        """Under a score sort: the session's mean of that score, as the page was ordered."""
        return float(self["sort_value"])


class SessionTurnRow(RecordRow):
    """One turn (SessionTurn) and its trajectory document's text (None when it has none)."""

    __slots__ = ()
    record = SessionTurn
    extra: ClassVar[Mapping[str, str]] = {"document": DOCUMENT}

    @property
    def document(self) -> str | None:
        return unpack(self["document"])


#: the sessions of the project ($1) having a turn `s` that matches (the condition follows)
_HAVING_TURN = ("SELECT DISTINCT s.session_id FROM trajectories s WHERE s.project = $1 "
                "AND s.session_id IS NOT NULL AND ")


@dataclass
class _Conditions:
    """The given filters (trajhub.records.sessions says how each is written), sorted by what
    they are conditions on."""

    row: list[str] = field(default_factory=list)  # on the session's row `r`
    within: list[str] = field(default_factory=list)  # sets of sessions (by a turn) it must be in
    #: the query arguments the `within` sets use (they take theirs first: $1 … $n)
    within_args: list[Any] = field(default_factory=list)


#: filters on a turn whose row holds the answer too: a walk of the rows checks the row, while
#: a small set of sessions is found from the turns' index
_ON_ROW = {"user_id": "r.user_counts ? {}"}


def _conditions(values: Mapping[str, Any], arg: Params, walk: bool = False) -> _Conditions:
    """`walk`: the conditions of a walk of the rows (those of _ON_ROW on the row)."""
    out = _Conditions()
    given = [(p, values[p.name]) for p in SessionQuery.params()
             if values.get(p.name) is not None]
    for p, value in given:  # the sets a session must be in, first
        if p.custom:  # `score`: a turn whose latest whole-run score of the name compares so
            out.within.append(_HAVING_TURN + score_condition(value, arg, "s.trace_id"))
        elif walk and p.name in _ON_ROW:
            continue
        elif not p.condition.startswith("r."):
            assert p.type is not bool, p.name
            out.within.append(_HAVING_TURN + p.condition.format(arg(value)))
    out.within_args = list(arg.values)
    for p, value in given:
        if walk and p.name in _ON_ROW:
            out.row.append(_ON_ROW[p.name].format(arg(value)))
            continue
        if p.custom or not p.condition.startswith("r."):
            continue
        if p.type is bool:
            out.row.append(p.condition if value else p.negated)
        else:
            out.row.append(p.condition.format(arg(value)))
    return out


#: the page's sessions (`page`: page_id, in the order of page_order) as the summary shows them
_PAGE = (f"SELECT {SessionSummary.select_list()}<extra> FROM page p JOIN sessions "
         "ON sessions.project = $1 AND sessions.session_id = p.page_id "
         "ORDER BY p.page_order DESC, p.page_id DESC")


async def list_sessions(conn: Connection, project: str, f: SessionFilter
                        ) -> list[SessionSummaryRow]:
    """The sessions matching `f`, the one with the latest turn first (ties by session id,
    descending), after the cursor.

    The page is read from the sessions' rows (migration 0092), one of two ways, so that a page
    costs the rows that lead to it:
    - walk the project's sessions by latest turn (the index sessions_latest, or the partial
      ones of the sessions with a failed turn or waiting), keeping those whose row matches the
      filters on it (its users among them) and that are in the sets the filters on turns name
      (a turn of this agent, with this score); the first `limit` of those;
    - but when the turn filters name a set of at most SMALL_SET sessions (a rare user, say),
      the walk could pass most of the project's sessions before it finds a page: take that
      set's rows instead (by key), and the newest of those. How large the set is is counted
      first (up to SMALL_SET + 1), through the index of what it matches."""
    arg = Params(project)
    if f.score_sort is not None:
        return await _by_score(conn, f, _conditions(f.values, arg, walk=True), arg)
    c = _conditions(f.values, arg)
    small = bool(c.within) and int(await conn.fetchval(
        "SELECT count(*) FROM (SELECT 1 FROM ("
        f"{' INTERSECT '.join(c.within)}) m LIMIT {SMALL_SET + 1}) n",
        *c.within_args)) <= SMALL_SET
    if not small:  # a walk: the filters its rows answer are checked on them
        arg = Params(project)
        c = _conditions(f.values, arg, walk=True)
    matching = " INTERSECT ".join(c.within)
    where = ["r.project = $1", "r.turns > 0", *c.row]
    if f.cursor is not None:
        where.append(f"(r.last_start_ns, r.session_id) < ({arg(f.cursor[0])}::bigint, "
                     f"{arg(f.cursor[1])}::text)")
    if small:
        # the set's rows by key, sorted
        source = "matching m JOIN sessions r ON r.project = $1 AND r.session_id = m.session_id"
    else:
        source = "sessions r"
        if c.within:
            # a large set: a hash of it, which each walked session is looked up in. `IS TRUE`
            # keeps the IN a subplan, which PostgreSQL hashes: as a plain condition it becomes
            # a semi join, which the planner, guessing 200 rows for the set, may run as a
            # nested loop over the set for each walked session (bench/README.md, "Sessions")
            where.append("(r.session_id IN (SELECT session_id FROM matching)) IS TRUE")
    sql = ((f"WITH matching AS MATERIALIZED ({matching}), " if c.within else "WITH ")
           + f"page AS (SELECT r.session_id AS page_id, r.last_start_ns AS page_order "
           f"FROM {source} WHERE {' AND '.join(where)} "
           f"ORDER BY r.last_start_ns DESC, r.session_id DESC LIMIT {arg(f.limit)}) "
           + _PAGE.replace("<extra>", ""))
    return SessionSummaryRow.from_records(await conn.fetch(sql, *arg.values))


async def _by_score(conn: Connection, f: SessionFilter, c: _Conditions, arg: Params
                    ) -> list[SessionSummaryRow]:
    """`sort=score:<name>`: the sessions with such a score, by the mean over their turns of
    each turn's latest whole-run score of that name (as the summary's `scores`), highest
    first, ties by session id. Only sessions that have one are listed: their mean orders
    every row the cursor pages over. The sessions' score rows of that name are walked by
    their mean (the index session_scores_mean)."""
    assert f.score_sort is not None
    mean = "(sc.turn_total / sc.turns)::float8"
    where = ["sc.project = $1", f"sc.name = {arg(f.score_sort)}", "sc.turns > 0",
             "r.turns > 0", *c.row]
    if c.within:
        where.append("sc.session_id IN (SELECT session_id FROM matching)")
    if f.cursor is not None:
        where.append(f"({mean}, sc.session_id) < ({arg(float(f.cursor[0]))}::float8, "
                     f"{arg(f.cursor[1])}::text)")
    sql = ((f"WITH matching AS MATERIALIZED ({' INTERSECT '.join(c.within)}), "
            if c.within else "WITH ")
           + f"page AS (SELECT sc.session_id AS page_id, {mean} AS page_order "
           "FROM session_scores sc JOIN sessions r ON r.project = $1 "
           f"AND r.session_id = sc.session_id WHERE {' AND '.join(where)} "
           f"ORDER BY {mean} DESC, sc.session_id DESC LIMIT {arg(f.limit)}) "
           + _PAGE.replace("<extra>", ", p.page_order AS sort_value"))
    return SessionSummaryRow.from_records(await conn.fetch(sql, *arg.values))


async def session_summary(conn: Connection, project: str, session_id: str
                          ) -> SessionSummaryRow | None:
    return await SessionSummaryRow.fetch_one(
        conn, f"SELECT {SessionSummary.select_list()} FROM sessions "
        "WHERE project = $1 AND session_id = $2 AND turns > 0", project, session_id)


async def session_calls(conn: Connection, project: str, models: Sequence[tuple[str, str]]
                        ) -> dict[tuple[str, str], list[Any]]:
    """The model calls of these (session id, model) pairs, each call as often as its turns
    made it (the calls as normalizers.playback's model_usage keeps them)."""
    if not models:
        return {}
    rows = await conn.fetch(
        "SELECT c.session_id, c.model, c.call, c.calls FROM session_calls c "
        "JOIN unnest($2::text[], $3::text[]) AS k(session_id, model) "
        "ON c.session_id = k.session_id AND c.model = k.model "
        "WHERE c.project = $1 AND c.calls > 0", project,
        [m[0] for m in models], [m[1] for m in models])
    out: dict[tuple[str, str], list[Any]] = {}
    for r in rows:
        out.setdefault((r["session_id"], r["model"]), []).extend(
            [orjson.loads(r["call"])] * int(r["calls"]))
    return out


async def session_turns(conn: Connection, project: str, session_id: str,
                        limit: int = MAX_TURNS) -> list[SessionTurnRow]:
    """The session's turns in the order they started (ties by trace id), the first `limit`."""
    rows = await conn.fetch(
        f"SELECT {SessionTurnRow.columns()} FROM trajectories "
        "WHERE project = $1 AND session_id = $2 ORDER BY start_ns, trace_id LIMIT $3",
        project, session_id, limit)
    return SessionTurnRow.from_records(rows)
