"""Reads of sessions: the trajectories of a project sharing a session id, aggregated with plain
SQL over the `trajectories` table when read (trajhub.records.sessions declares the aggregates).

Two indexes serve the reads (one per time partition, migration 0021): the list walks
trajectories_session_latest (project, start_ns DESC, session_id DESC, runs with a session only;
migration 0030), and a session's turns are a range of trajectories_session (project,
session_id, start_ns DESC, trace_id DESC; migration 0014)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

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
#: a condition on each session's count of turns follows
_COUNTED = ("SELECT s.session_id FROM trajectories s WHERE s.project = $1 "
            "AND s.session_id IS NOT NULL GROUP BY s.session_id HAVING ")


@dataclass
class _Conditions:
    """The given filters (trajhub.records.sessions says how each is written), sorted by what
    they are conditions on."""

    latest: list[str] = field(default_factory=list)  # on the session's latest turn `t`
    within: list[str] = field(default_factory=list)  # sets the session must be in
    without: list[str] = field(default_factory=list)  # sets it must not be in
    #: the query arguments the `within` sets use (they take theirs first: $1 … $n)
    within_args: list[Any] = field(default_factory=list)


def _conditions(values: Mapping[str, Any], arg: Params) -> _Conditions:
    out = _Conditions()
    given = [(p, values[p.name]) for p in SessionQuery.params()
             if values.get(p.name) is not None]
    for p, value in given:  # the sets a session must be in, first
        if p.custom:  # `score`: a turn whose latest whole-run score of the name compares so
            out.within.append(_HAVING_TURN + score_condition(value, arg, "s.trace_id"))
        elif p.type is bool:
            # true: some turn matches; false (`NOT …`): none does
            assert p.negated == f"NOT {p.condition}", p.name
            if value:
                out.within.append(_HAVING_TURN + p.condition)
        elif p.condition.startswith("count("):
            out.within.append(_COUNTED + p.condition.format(arg(value)))
        elif not p.condition.startswith("t."):
            out.within.append(_HAVING_TURN + p.condition.format(arg(value)))
    out.within_args = list(arg.values)
    for p, value in given:
        if p.custom:
            continue
        if p.type is bool and not value:
            out.without.append(_HAVING_TURN + p.condition)
        elif p.type is not bool and p.condition.startswith("t."):
            out.latest.append(p.condition.format(arg(value)))
    return out


async def list_sessions(conn: Connection, project: str, f: SessionFilter
                        ) -> list[SessionSummaryRow]:
    """The sessions matching `f`, the one with the latest turn first (ties by session id,
    descending), after the cursor.

    Two steps in one query: find the page's sessions, then aggregate just their turns. The
    page's sessions are found one of two ways, so that a page costs the rows that lead to it,
    not an aggregate of every session of the project:
    - walk the project's runs with a session id newest first (trajectories_session_latest,
      migration 0030) and keep each run that is its session's latest turn (none of its
      session after it) and whose session is in the sets the filters name (it has a turn of
      this user, this agent, a failure, …) and not in those they exclude (no failed turn);
      the first `limit` of those;
    - but when the filters name a set of at most SMALL_SET sessions (a rare user, say), the
      walk could pass most of the project's sessions before it finds a page: take that set's
      sessions instead, each one's latest turn through the session index, and the newest of
      those. How large the set is is counted first (up to SMALL_SET + 1), through the index
      of what it matches."""
    arg = Params(project)
    c = _conditions(f.values, arg)
    if f.score_sort is not None:
        return await _by_score(conn, f, c, arg)
    matching = " INTERSECT ".join(c.within)
    small = bool(c.within) and int(await conn.fetchval(
        f"SELECT count(*) FROM (SELECT 1 FROM ({matching}) m LIMIT {SMALL_SET + 1}) n",
        *c.within_args)) <= SMALL_SET
    latest = list(c.latest)
    latest += [f"t.session_id NOT IN ({without})" for without in c.without]
    if f.cursor is not None:
        latest.append(f"(t.start_ns, t.session_id) < ({arg(f.cursor[0])}::bigint, "
                      f"{arg(f.cursor[1])}::text)")
    if small:
        # each matching session's latest turn through the session index (LATERAL: one index
        # read per session, whatever the planner guesses of the set's size)
        source = (f"WITH matching AS MATERIALIZED ({matching}), "
                  "page AS (SELECT t.session_id FROM matching m CROSS JOIN LATERAL "
                  "(SELECT m.session_id, max(s.start_ns) AS start_ns FROM trajectories s "
                  "WHERE s.project = $1 AND s.session_id = m.session_id) t WHERE ")
    else:
        if c.within:
            # a large set: a hash of it, which each walked session is looked up in. `IS TRUE`
            # keeps the IN a subplan, which PostgreSQL hashes: as a plain condition it becomes
            # a semi join, which the planner, guessing 200 rows for the set, ran as a nested
            # loop over the set for each walked run: a comparison per run and session, which
            # grows with both (bench/README.md, "Sessions")
            latest.append("(t.session_id IN (SELECT session_id FROM matching)) IS TRUE")
        source = ((f"WITH matching AS MATERIALIZED ({matching}), " if c.within else "WITH ")
                  + "page AS (SELECT t.session_id FROM trajectories t "
                  "WHERE t.project = $1 AND t.session_id IS NOT NULL AND "
                  # t is its session's latest turn (ties by trace id)
                  "NOT EXISTS (SELECT 1 FROM trajectories n WHERE n.project = t.project "
                  "AND n.session_id = t.session_id AND n.start_ns >= t.start_ns "
                  "AND (n.start_ns, n.trace_id) > (t.start_ns, t.trace_id)) AND ")
    sql = (f"{source}{' AND '.join(['true', *latest])} "
           f"ORDER BY t.start_ns DESC, t.session_id DESC LIMIT {arg(f.limit)}) "
           # the page's sessions, each aggregated from its own turns (the session index)
           "SELECT a.* FROM page p CROSS JOIN LATERAL "
           f"(SELECT {SessionSummary.select_list()} FROM trajectories "
           "WHERE project = $1 AND session_id = p.session_id GROUP BY session_id) a "
           "ORDER BY a.last_turn_time DESC, a.session_id DESC")
    return SessionSummaryRow.from_records(await conn.fetch(sql, *arg.values))


async def _by_score(conn: Connection, f: SessionFilter, c: _Conditions, arg: Params
                    ) -> list[SessionSummaryRow]:
    """`sort=score:<name>`: the sessions with such a score, by the mean over their turns of
    each turn's latest whole-run score of that name (as the summary's `scores`), highest
    first, ties by session id. Only sessions that have one are listed: their mean orders
    every row the cursor pages over. The sessions are found from the scores of that name
    (their index), not by walking the project's runs."""
    assert f.score_sort is not None
    conditions = ["true"]
    if c.within:
        conditions.append("s.session_id IN (SELECT session_id FROM matching)")
    conditions += [f"s.session_id NOT IN ({without})" for without in c.without]
    # a condition on the latest turn: some turn meets it (the latest is one)
    conditions += [f"EXISTS (SELECT 1 FROM trajectories t WHERE t.project = $1 "
                   f"AND t.session_id = s.session_id AND {latest})" for latest in c.latest]
    if f.cursor is not None:
        conditions.append(f"(s.mean, s.session_id) < ({arg(float(f.cursor[0]))}::float8, "
                          f"{arg(f.cursor[1])}::text)")
    sql = ((f"WITH matching AS MATERIALIZED ({' INTERSECT '.join(c.within)}), "
            if c.within else "WITH ")
           + "scored AS (SELECT t.session_id, avg(l.number_value) AS mean FROM "
           "(SELECT DISTINCT ON (sc.trace_id) sc.trace_id, sc.number_value FROM scores sc "
           f"WHERE sc.project = $1 AND sc.name = {arg(f.score_sort)} AND sc.step_id IS NULL "
           "ORDER BY sc.trace_id, sc.id DESC) l "
           "JOIN trajectories t ON t.project = $1 AND t.trace_id = l.trace_id "
           "WHERE l.number_value IS NOT NULL AND t.session_id IS NOT NULL "
           "GROUP BY t.session_id), "
           f"page AS (SELECT s.session_id, s.mean FROM scored s WHERE {' AND '.join(conditions)} "
           f"ORDER BY s.mean DESC, s.session_id DESC LIMIT {arg(f.limit)}) "
           "SELECT a.*, p.mean AS sort_value FROM page p CROSS JOIN LATERAL "
           f"(SELECT {SessionSummary.select_list()} FROM trajectories "
           "WHERE project = $1 AND session_id = p.session_id GROUP BY session_id) a "
           "ORDER BY p.mean DESC, a.session_id DESC")
    return SessionSummaryRow.from_records(await conn.fetch(sql, *arg.values))


async def session_summary(conn: Connection, project: str, session_id: str
                          ) -> SessionSummaryRow | None:
    return await SessionSummaryRow.fetch_one(
        conn, f"SELECT {SessionSummary.select_list()} FROM trajectories "
        "WHERE project = $1 AND session_id = $2 GROUP BY session_id", project, session_id)


async def session_turns(conn: Connection, project: str, session_id: str,
                        limit: int = MAX_TURNS) -> list[SessionTurnRow]:
    """The session's turns in the order they started (ties by trace id), the first `limit`."""
    rows = await conn.fetch(
        f"SELECT {SessionTurnRow.columns()} FROM trajectories "
        "WHERE project = $1 AND session_id = $2 ORDER BY start_ns, trace_id LIMIT $3",
        project, session_id, limit)
    return SessionTurnRow.from_records(rows)
