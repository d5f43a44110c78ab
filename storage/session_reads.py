"""Reads of sessions: the trajectories of a project sharing a session id. A session's final
turns are kept as one row (`sessions` and its per-user, per-model and per-score rows,
storage/session_rows.py, migration 0092) as they become final; a read adds its open turns,
which are few, to that row (`_aggregated`), so a summary costs one row and the open turns
however many turns the session has.

The list pages the rows by their latest turn (sessions_latest, migration 0094) when its
filters are all read from the rows; otherwise it walks trajectories_session_latest (project,
start_ns DESC, session_id DESC, runs with a session only; migration 0030; one index per time
partition, migration 0021). A session's turns are a range of trajectories_session (project,
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
#: looked up while walking the project's sessions when larger (`list_sessions`): a session read
#: costs several rows walked, and the walk may pass most sessions when the set's are old
#: (bench/README.md, "Sessions")
SMALL_SET = 2000
#: a user's sessions, when more than SMALL_SET and up to this many, are hashed while the list
#: pages the rows: a read of the set and a lookup per row read. Fewer are read first, each
#: session's row looked up; more, a large share of the sessions, are probed per row read, as
#: few rows are read then (bench/README.md, "Sessions")
HASHED_USERS = 50_000


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
    #: whether the session has a stored row (its final turns): the first of `cost` is then its
    #: calls summed per model
    extra: ClassVar[Mapping[str, str]] = {"stored_part": "{prefix}stored_part"}

    @property
    def session_id(self) -> str:
        return str(self["session_id"])

    @property
    def stored_usage(self) -> str | None:
        """The stored row's model calls, summed per model (JSON text); None without a row."""
        return str(self["cost"][0]) if self["stored_part"] else None

    def with_final_usages(self, usages: list[str]) -> SessionSummaryRow:
        """This summary with the stored row's summed calls replaced by each final turn's
        usage (final_usages)."""
        costs = list(self["cost"])
        return SessionSummaryRow({**self._values, "cost": [*usages, *costs[1:]],
                                  "stored_part": False})

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


#: the first rows of the walk over the project's turns newest first that `list_sessions` reads
#: at once, per session of the page; each further read of the walk takes four times as many
WALK_ROWS = 4
#: the most rows one read of the walk takes
MAX_WALK_ROWS = 50_000


def _open_turns(columns: str, sessions: str) -> str:
    """The `columns` of the project's ($1) open turns `s` whose open row `o` meets `sessions`
    (a condition on `o.session_id`): the session is tested on the open row only, which is
    few rows, since on the run's the planner may start from a long session's turns."""
    return (f"SELECT {columns} FROM open_trajectories o JOIN trajectories s "
            "ON s.project = o.project AND s.trace_id = o.trace_id "
            f"WHERE o.project = $1 AND s.status = 'open' AND {sessions}")


@dataclass
class _Conditions:
    """The given filters (trajhub.records.sessions says how each is written), sorted by what
    they are conditions on. No condition is correlated with the session it tests: the sessions
    are spread over every shard on Citus, which refuses a subquery correlated on `session_id`
    (deploy/SCALING.md, section 3), so each set is read whole, or among given sessions."""

    latest: list[str] = field(default_factory=list)  # on the session's latest turn `t`
    #: sets the session must be in: (how, condition), `having` says how each is read
    within: list[tuple[str, str]] = field(default_factory=list)
    without: list[tuple[str, str]] = field(default_factory=list)  # sets it must not be in
    #: the arguments the conditions use (the project is $1), and those the sets use: the first
    within_args: list[Any] = field(default_factory=list)
    args: list[Any] = field(default_factory=list)
    #: the filters that gave the within sets
    within_names: set[str] = field(default_factory=set)

    @staticmethod
    def having(how: str, condition: str, among: str = "") -> str:
        """The project's ($1) sessions in a set, only among the sessions `among` names (an
        array), if given. `how` says what `condition` is:
        - "turn": a condition on some turn `s` of the session, read from its turns;
        - "count": on the count of its turns (`count(*)`), and "user" and "failed": a user id
          (a placeholder) one of its turns recorded, or a failed turn. These are read from the
          sessions' rows (migration 0092) and their open turns, so that a session of many turns
          costs one row, not a read of each turn."""
        def only(column: str) -> str:
            return f" AND {column} IS NOT NULL" + (f" AND {column} = ANY({among})" if among else "")

        open_turns = _open_turns("o.session_id", f"true{only('o.session_id')}")
        if how == "user":
            return (f"SELECT session_id FROM session_users WHERE project = $1 AND turns > 0"
                    f"{only('session_id')} AND user_id = {condition} "
                    f"UNION {open_turns} AND s.user_id = {condition}")
        if how == "failed":
            return (f"SELECT session_id FROM sessions WHERE project = $1 AND failed_turns > 0"
                    f"{only('session_id')} UNION {open_turns} AND {condition}")
        if how == "count":
            # a row's final turns meet it alone, or with the session's open turns added (those
            # sessions are few)
            return (f"SELECT session_id FROM sessions WHERE project = $1{only('session_id')} "
                    f"AND {condition.replace('count(*)', 'turns')} UNION "
                    "SELECT n.session_id FROM (SELECT session_id, turns FROM sessions "
                    f"WHERE project = $1 AND turns > 0{only('session_id')} AND session_id IN "
                    f"(SELECT session_id FROM ({open_turns}) o) UNION ALL "
                    f"SELECT o.session_id, 1 FROM ({open_turns}) o) n GROUP BY n.session_id "
                    f"HAVING {condition.replace('count(*)', 'sum(n.turns)')}")
        return ("SELECT DISTINCT s.session_id FROM trajectories s WHERE s.project = $1"
                f"{only('s.session_id')} AND {condition}")

    @property
    def from_rows(self) -> bool:
        """Whether every set is read from the sessions' rows (none is read from turns)."""
        return all(how != "turn" for how, _ in (*self.within, *self.without))

    @staticmethod
    def on_row(how: str, condition: str, hashed: bool = False) -> str:
        """The set `how`, `condition` (as `having` takes them, not "turn") as a condition on
        the row `r` of a session that has no open turn, whose row is then the whole session.
        `hashed`: a user's sessions are read once, as a set the rows read are looked up in;
        else each row read probes the users' index."""
        if how == "user":
            sessions = ("r.session_id IN (SELECT session_id FROM session_users "
                        f"WHERE project = $1 AND turns > 0 AND user_id = {condition})")
            # `IS TRUE` keeps the set a subquery, which PostgreSQL hashes, not a join
            return f"({sessions}) IS TRUE" if hashed else sessions
        if how == "failed":
            return "r.failed_turns > 0"
        return condition.replace("count(*)", "r.turns")

    def row_conditions(self, hashed: bool = False) -> list[str]:
        return ([self.on_row(how, c, hashed) for how, c in self.within]
                + [f"NOT ({self.on_row(how, c, hashed)})" for how, c in self.without])

    def session_conditions(self, among: str = "") -> list[str]:
        """The within and without sets as conditions on `t.session_id`."""
        return ([f"t.session_id IN ({self.having(how, c, among)})" for how, c in self.within]
                + [f"t.session_id NOT IN ({self.having(how, c, among)})"
                   for how, c in self.without])


#: the filters whose sets are read from the sessions' rows (`_Conditions.having`)
_FROM_ROWS = {"user_id": "user", "has_error": "failed", "min_turns": "count"}


def _conditions(values: Mapping[str, Any], arg: Params) -> _Conditions:
    out = _Conditions()
    given = [(p, values[p.name]) for p in SessionQuery.params()
             if values.get(p.name) is not None]
    for p, value in given:  # the sets first: their arguments are $1 … $n of the sets' read
        how = _FROM_ROWS.get(p.name, "turn")
        if p.custom:  # `score`: a turn whose latest whole-run score of the name compares so
            within = (how, score_condition(value, arg, "s.trace_id"))
        elif p.type is bool:  # true: some turn matches; false: none does
            within = (how, p.condition)
            if not value:
                out.without.append(within)
                continue
        elif how == "user":
            within = (how, arg(value))
        elif not p.condition.startswith("t."):
            within = (how, p.condition.format(arg(value)))
        else:
            continue
        out.within.append(within)
        out.within_names.add(p.name)
    out.within_args = list(arg.values)
    out.latest = [p.condition.format(arg(value)) for p, value in given
                  if p.condition.startswith("t.")]
    out.args = list(arg.values)
    return out


async def list_sessions(conn: Connection, project: str, f: SessionFilter
                        ) -> list[SessionSummaryRow]:
    """The sessions matching `f`, the one with the latest turn first (ties by session id,
    descending), after the cursor.

    A page costs the rows that lead to it, not an aggregate of every session of the project:
    - when every filter is read from the sessions' rows (or none is given), page the rows by
      their latest turn (`_from_rows`);
    - else walk the project's runs with a session id newest first (trajectories_session_latest,
      migration 0030), a few rows at a time. A session met for the first time is met at its
      latest turn, unless that was before the cursor (then it was listed already, or left
      out). Keep those the filters let through, each set tested among the sessions met only,
      until the page is full;
    - but when the filters name a set of at most SMALL_SET sessions (a rare agent, say), the
      walk could pass most of the project's sessions before it finds a page: take that set's
      sessions instead, read first, with each one's latest turn.
    Then aggregate the page's sessions from their rows and open turns (`_aggregated`)."""
    c = _conditions(f.values, Params(project))
    if f.score_sort is not None:
        return await _by_score(conn, f, c)
    if c.from_rows:
        return await _from_rows(conn, project, c, f)
    if c.within:
        named = await conn.fetch(
            " INTERSECT ".join(f"({c.having(how, cond)})" for how, cond in c.within)
            + f" LIMIT {SMALL_SET + 1}", *c.within_args)
        if len(named) <= SMALL_SET:
            # the set's sessions meet the sets' filters: the others are left to test
            rest = _conditions({name: value for name, value in f.values.items()
                                if name not in c.within_names}, Params(project))
            return await _page(conn, rest, [r[0] for r in named], None, f.cursor, f.limit)
    found: list[SessionSummaryRow] = []
    met: set[str] = set()
    bound, rows = f.cursor, WALK_ROWS * f.limit
    while len(found) < f.limit:
        arg = Params(project)
        after = ("" if bound is None else
                 f"AND (start_ns, session_id) < ({arg(bound[0])}::bigint, {arg(bound[1])}::text) ")
        walked = await conn.fetch(
            "SELECT session_id, start_ns FROM trajectories WHERE project = $1 "
            f"AND session_id IS NOT NULL {after}"
            f"ORDER BY start_ns DESC, session_id DESC LIMIT {arg(rows)}", *arg.values)
        first: dict[str, int] = {}
        for r in walked:
            if r["session_id"] not in met:
                first.setdefault(r["session_id"], r["start_ns"])
        met |= first.keys()
        found += await _page(conn, c, list(first), list(first.values()), f.cursor,
                             f.limit - len(found))
        if len(walked) < rows:
            break
        bound, rows = (walked[-1]["start_ns"], walked[-1]["session_id"]), \
            min(rows * 4, MAX_WALK_ROWS)
    return found


async def _from_rows(conn: Connection, project: str, c: _Conditions, f: SessionFilter
                     ) -> list[SessionSummaryRow]:
    """A page of the sessions meeting `c` (from `f`), whose sets are all read from the
    sessions' rows, latest turn first after the cursor. A session with no open turn is its
    row: those are paged by their latest turn (sessions_latest, migration 0094; those of more
    than one turn apart, sessions_latest_of_many, migration 0095), the row tested as it is
    read. The sessions with an open turn, which are few, are read first with their latest
    turn, the later of their row's and their open turns', and tested with their open turns."""
    hashed, also = False, []
    if f.values.get("user_id") is not None:
        users = await conn.fetchval(
            "SELECT count(*) FROM (SELECT 1 FROM session_users WHERE project = $1 "
            "AND turns > 0 AND user_id = $2 LIMIT $3) u",
            project, f.values["user_id"], HASHED_USERS + 1)
        hashed = SMALL_SET < users <= HASHED_USERS
    if (f.values.get("min_turns") or 0) > 1:
        # as a literal: the partial index is planned from it, not from a parameter
        also.append("r.turns > 1")
    opened = await conn.fetch(
        "SELECT o.session_id, greatest(max(o.start_ns), max(r.last_start_ns)) FROM ("
        + _open_turns("o.session_id, s.start_ns", "o.session_id IS NOT NULL")
        + ") o LEFT JOIN sessions r ON r.project = $1 AND r.session_id = o.session_id "
        "AND r.turns > 0 GROUP BY o.session_id", *c.args[:1])
    arg = Params(*c.args)
    among = f"{arg([r[0] for r in opened])}::text[]"
    after = ("true" if f.cursor is None else
             f"(t.start_ns, t.session_id) < ({arg(f.cursor[0])}::bigint, "
             f"{arg(f.cursor[1])}::text)")
    latest = " AND ".join([after, *c.latest])
    stored = ("SELECT r.session_id, r.last_start_ns AS start_ns FROM sessions r "
              "WHERE r.project = $1 AND r.turns > 0 "
              "AND r.session_id NOT IN (SELECT session_id FROM opened) AND "
              + " AND ".join(["true", *also, *c.row_conditions(hashed)]))
    sql = (f"WITH opened AS MATERIALIZED (SELECT * FROM unnest({among}, "
           f"{arg([r[1] for r in opened])}::bigint[]) AS m(session_id, start_ns)), "
           "page AS (SELECT session_id FROM ("
           f"(SELECT t.session_id, t.start_ns FROM ({stored}) t WHERE {latest} "
           f"ORDER BY t.start_ns DESC, t.session_id DESC LIMIT {arg(f.limit)}) UNION ALL "
           "SELECT t.session_id, t.start_ns FROM opened t WHERE "
           + " AND ".join([latest, *c.session_conditions(among)])
           + f") p ORDER BY p.start_ns DESC, p.session_id DESC LIMIT {arg(f.limit)}), "
           + _aggregated("session_id IN (SELECT session_id FROM page)")
           + f" SELECT {SessionSummaryRow.columns()} FROM summaries turns "
           "ORDER BY turns.last_turn_time DESC, turns.session_id DESC")
    return SessionSummaryRow.from_records(await conn.fetch(sql, *arg.values))


async def _page(conn: Connection, c: _Conditions, sessions: list[str], starts: list[int] | None,
                cursor: tuple[int | float, str] | None, limit: int) -> list[SessionSummaryRow]:
    """Of `sessions`, the first `limit` whose latest turn is before `cursor` (start ns,
    session id) and that meet the filters `c`, latest turn first, each aggregated from its
    turns. `starts`: the walk's first turn of each session met, its latest unless it has one
    at or after the cursor; None: read each one's latest turn."""
    if not sessions or limit <= 0:
        return []
    arg = Params(*c.args)
    among = f"{arg(sessions)}::text[]"
    conditions = list(c.latest)
    if starts is None:
        # each one's latest turn: its row's latest final turn, or a later open turn
        source = (
            "(SELECT session_id, max(start_ns) AS start_ns FROM (SELECT session_id, "
            "last_start_ns AS start_ns FROM sessions WHERE project = $1 AND turns > 0 "
            f"AND session_id IN (SELECT unnest({among})) UNION ALL "
            + _open_turns("o.session_id, s.start_ns", f"o.session_id = ANY({among})")
            + ") l GROUP BY session_id) t")
        if cursor is not None:
            conditions.append(f"(t.start_ns, t.session_id) < ({arg(cursor[0])}::bigint, "
                              f"{arg(cursor[1])}::text)")
    else:
        source = "met t"
        if cursor is not None:
            conditions.append(
                "t.session_id NOT IN (SELECT s.session_id FROM trajectories s "
                f"WHERE s.project = $1 AND s.session_id = ANY({among}) AND "
                f"(s.start_ns, s.session_id) >= ({arg(cursor[0])}::bigint, "
                f"{arg(cursor[1])}::text))")
    conditions += c.session_conditions(among)
    # the walk's sessions as a CTE of their own: beside a set-returning function in FROM, Citus
    # takes a subquery for a correlated one (deploy/SCALING.md, section 3)
    met = ("" if starts is None else f"met AS MATERIALIZED (SELECT * FROM unnest({among}, "
           f"{arg(starts)}::bigint[]) AS m(session_id, start_ns)), ")
    sql = (f"WITH {met}page AS (SELECT t.session_id FROM {source} "
           f"WHERE {' AND '.join(['true', *conditions])} "
           f"ORDER BY t.start_ns DESC, t.session_id DESC LIMIT {arg(limit)}), "
           + _aggregated("session_id IN (SELECT session_id FROM page)")
           + f" SELECT {SessionSummaryRow.columns()} FROM summaries turns "
           "ORDER BY turns.last_turn_time DESC, turns.session_id DESC")
    return SessionSummaryRow.from_records(await conn.fetch(sql, *arg.values))


async def _by_score(conn: Connection, f: SessionFilter, c: _Conditions
                    ) -> list[SessionSummaryRow]:
    """`sort=score:<name>`: the sessions with such a score, by the mean over their turns of
    each turn's latest whole-run score of that name (as the summary's `scores`), highest
    first, ties by session id. Only sessions that have one are listed: their mean orders
    every row the cursor pages over. The sessions are found from the scores of that name
    (their index), not by walking the project's runs."""
    assert f.score_sort is not None
    arg = Params(*c.args)
    conditions = c.session_conditions()
    # a condition on the latest turn: some turn meets it (the latest is one)
    conditions += [f"t.session_id IN (SELECT t.session_id FROM trajectories t "
                   f"WHERE t.project = $1 AND {latest})" for latest in c.latest]
    if f.cursor is not None:
        conditions.append(f"(t.mean, t.session_id) < ({arg(float(f.cursor[0]))}::float8, "
                          f"{arg(f.cursor[1])}::text)")
    sql = ("WITH scored AS (SELECT t.session_id, avg(l.number_value) AS mean FROM "
           "(SELECT DISTINCT ON (sc.trace_id) sc.trace_id, sc.number_value FROM scores sc "
           f"WHERE sc.project = $1 AND sc.name = {arg(f.score_sort)} AND sc.step_id IS NULL "
           "ORDER BY sc.trace_id, sc.id DESC) l "
           "JOIN trajectories t ON t.project = $1 AND t.trace_id = l.trace_id "
           "WHERE l.number_value IS NOT NULL AND t.session_id IS NOT NULL "
           "GROUP BY t.session_id), "
           f"page AS (SELECT t.session_id, t.mean FROM scored t "
           f"WHERE {' AND '.join(['true', *conditions])} "
           f"ORDER BY t.mean DESC, t.session_id DESC LIMIT {arg(f.limit)}), "
           + _aggregated("session_id IN (SELECT session_id FROM page)")
           + " SELECT a.*, p.mean AS sort_value FROM page p "
           f"JOIN (SELECT {SessionSummaryRow.columns()} FROM summaries) a "
           "ON a.session_id = p.session_id ORDER BY p.mean DESC, a.session_id DESC")
    return SessionSummaryRow.from_records(await conn.fetch(sql, *arg.values))


async def session_summary(conn: Connection, project: str, session_id: str
                          ) -> SessionSummaryRow | None:
    return await SessionSummaryRow.fetch_one(
        conn, "WITH " + _aggregated("session_id = $2")
        + f" SELECT {SessionSummaryRow.columns()} FROM summaries turns",
        project, session_id)


#: a session's open turns' parts of its summary: each one turn
_OPEN_PART = ("session_id, 1::bigint, (has_error OR derivation_error IS NOT NULL)::int::bigint, "
              "1::bigint, input_tokens, output_tokens, start_ns, trace_id, input_preview, "
              "start_ns, trace_id, interrupted, start_ns + duration_ms::bigint * 1000000, "
              "model_usage")
#: the stored row's: its final turns (the columns in _OPEN_PART's order)
_STORED_PART = ("s.session_id, s.turns, s.failed_turns, 0::bigint, s.input_tokens, "
                "s.output_tokens, s.first_start_ns, s.first_trace_id, s.first_input_preview, "
                "s.last_start_ns, s.last_trace_id, s.waiting, s.end_ns, "
                "coalesce(u.usage, '{}'::jsonb)")
#: the stored row's model calls as the `model_usage` of one run (normalizers/playback.py):
#: per model one call of their billable tokens summed, which prices as the calls do where a
#: model is priced per token (service/api/sessions.py prices the others from the turns)
_STORED_USAGE = (
    "jsonb_object_agg(model, jsonb_build_object('calls', jsonb_build_array(jsonb_build_array("
    "input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, "
    "0))))")


def _aggregated(sessions: str) -> str:
    """CTEs (after a WITH, or a comma) ending in `summaries`: the summaries (SessionSummary,
    keyed as its select list reads them) of the project's ($1) sessions that meet `sessions`,
    a condition on `session_id`. Each is the session's row (its final turns) and its open
    turns, found among the project's open trajectories (the small table of migration 0016) by
    their session (migration 0092), added together as parts: sums summed, the first and
    latest turn the first and latest of the parts'. No subquery is correlated with a session
    (deploy/SCALING.md, section 3)."""
    return (
        "open_turns AS MATERIALIZED ("
        + _open_turns("s.session_id, s.trace_id, s.start_ns, s.duration_ms, s.user_id, "
                      "s.input_tokens, s.output_tokens, s.has_error, s.derivation_error, "
                      "s.interrupted, s.input_preview, s.model_usage", f"o.{sessions}")
        + "), "
        # each open turn's latest whole-run score of each name, numbers only (as the row's)
        "open_scores AS MATERIALIZED (SELECT o.session_id, l.name, l.number_value FROM ("
        "SELECT DISTINCT ON (sc.trace_id, sc.name) sc.trace_id, sc.name, sc.number_value "
        "FROM scores sc WHERE sc.project = $1 AND sc.step_id IS NULL "
        "AND sc.trace_id IN (SELECT trace_id FROM open_turns) "
        "ORDER BY sc.trace_id, sc.name, sc.id DESC) l "
        "JOIN open_turns o ON o.trace_id = l.trace_id WHERE l.number_value IS NOT NULL), "
        f"stored_usage AS (SELECT session_id, {_STORED_USAGE} AS usage FROM session_models "
        f"WHERE project = $1 AND calls > 0 AND {sessions} GROUP BY session_id), "
        "parts (session_id, turns, failed_turns, open_turns, input_tokens, output_tokens, "
        "first_start_ns, first_trace_id, first_input_preview, last_start_ns, last_trace_id, "
        f"waiting, end_ns, usage) AS (SELECT {_STORED_PART} FROM sessions s "
        "LEFT JOIN stored_usage u ON u.session_id = s.session_id "
        f"WHERE s.project = $1 AND s.turns > 0 AND s.{sessions} "
        f"UNION ALL SELECT {_OPEN_PART} FROM open_turns), "
        "users AS (SELECT session_id, array_agg(DISTINCT user_id ORDER BY user_id) AS user_ids "
        "FROM (SELECT session_id, user_id FROM session_users WHERE project = $1 AND turns > 0 "
        f"AND {sessions} UNION ALL SELECT session_id, user_id FROM open_turns "
        "WHERE user_id IS NOT NULL) u GROUP BY session_id), "
        "means AS (SELECT session_id, jsonb_object_agg(name, mean) AS scores FROM ("
        "SELECT session_id, name, (sum(total) / sum(scores))::float8 AS mean FROM ("
        "SELECT session_id, name, scores, total FROM session_scores WHERE project = $1 "
        f"AND scores > 0 AND {sessions} UNION ALL "
        "SELECT session_id, name, 1, number_value::numeric FROM open_scores) x "
        "GROUP BY session_id, name) m GROUP BY session_id), "
        "summaries AS (SELECT p.*, coalesce(u.user_ids, '{}') AS user_ids, "
        "coalesce(m.scores, '{}'::jsonb) AS scores FROM ("
        "SELECT session_id, sum(turns)::bigint AS turns, min(first_start_ns) AS start_time, "
        "max(last_start_ns) AS last_turn_time, max(end_ns) AS end_time, "
        "sum(input_tokens)::bigint AS input_tokens, sum(output_tokens)::bigint AS output_tokens, "
        "sum(failed_turns)::bigint AS failed_turns, sum(open_turns)::bigint AS open_turns, "
        "(array_agg(waiting ORDER BY last_start_ns DESC, last_trace_id DESC))[1] AS waiting, "
        "(array_agg(first_trace_id ORDER BY first_start_ns, first_trace_id))[1] "
        "AS first_trace_id, "
        "(array_agg(first_input_preview ORDER BY first_start_ns, first_trace_id))[1] "
        "AS first_input_preview, "
        # the stored row's part first (SessionSummaryRow.stored_usage)
        "array_agg(usage ORDER BY open_turns, last_start_ns, last_trace_id) AS cost, "
        "bool_or(open_turns = 0) AS stored_part "
        "FROM parts GROUP BY session_id) p "
        "LEFT JOIN users u ON u.session_id = p.session_id "
        "LEFT JOIN means m ON m.session_id = p.session_id)")


async def final_usages(conn: Connection, project: str, session_id: str) -> list[str]:
    """The token usage (`model_usage`, JSON text) of each of the session's final turns: what
    its row sums, for a model whose calls are not priced as their sums are."""
    rows = await conn.fetch(
        "SELECT model_usage::text FROM trajectories "
        "WHERE project = $1 AND session_id = $2 AND status = 'final'", project, session_id)
    return [r[0] for r in rows]


async def session_turns(conn: Connection, project: str, session_id: str,
                        limit: int = MAX_TURNS) -> list[SessionTurnRow]:
    """The session's turns in the order they started (ties by trace id), the first `limit`."""
    rows = await conn.fetch(
        f"SELECT {SessionTurnRow.columns()} FROM trajectories "
        "WHERE project = $1 AND session_id = $2 ORDER BY start_ns, trace_id LIMIT $3",
        project, session_id, limit)
    return SessionTurnRow.from_records(rows)
