"""SQL of sessions as rows (migration 0092, docs/monitoring.md "Sessions"): the figures of each
session's final turns, added as a turn becomes final and taken back exactly when it is stored
again, its scores change or retention deletes it; at the same hook points, and in the same
statements, as monitoring's rollups (storage/rollups.py), from the same per-run contribution
(`rollup_contributions`, which also records the run's session).

The counts and sums add and subtract. The first turn, the latest turn and the latest end move
one way as turns are added; a take-back of a turn holding one marks the row `stale`, and
`refresh` reads them again from the session's remaining final turns before the transaction
commits (Citus refuses the correlated subquery that would do it in the statement,
deploy/SCALING.md, section 3: read, then write). Rows are upserted in key order, as the rollups are.
"""

from __future__ import annotations

from typing import Any

from trajhub.storage.database import Connection

_SUMS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
         "reasoning_tokens")
#: the order statistics of a row, as (first-turn, latest-turn, end) columns
_FIRST = ("first_start_ns", "first_trace_id", "first_input_preview")
_LAST = ("last_start_ns", "last_trace_id", "waiting")


def _first(column: str, desc: bool = False) -> str:
    order = "start_ns DESC, trace_id DESC" if desc else "start_ns, trace_id"
    return f"(array_agg({column} ORDER BY {order}))[1]"


def _added(source: str) -> str:
    """The upsert adding the turns in `source` (contributions joined with their trajectories'
    input_preview and interrupted) to their sessions."""
    keep_first = ("sessions.first_start_ns IS NULL OR (EXCLUDED.first_start_ns, "
                  "EXCLUDED.first_trace_id) < (sessions.first_start_ns, sessions.first_trace_id)")
    keep_last = ("sessions.last_start_ns IS NULL OR (EXCLUDED.last_start_ns, "
                 "EXCLUDED.last_trace_id) > (sessions.last_start_ns, sessions.last_trace_id)")
    return (
        "INSERT INTO sessions (project, session_id, turns, failed_turns, input_tokens, "
        f"output_tokens, {', '.join(_FIRST)}, {', '.join(_LAST)}, end_ns) "
        "SELECT project, session_id, count(*), count(*) FILTER (WHERE failed_turn), "
        "sum(input_tokens), sum(output_tokens), "
        f"{_first('start_ns')}, {_first('trace_id')}, {_first('input_preview')}, "
        f"{_first('start_ns', True)}, {_first('trace_id', True)}, {_first('interrupted', True)}, "
        "max(start_ns + duration_ms * 1000000) "
        f"FROM {source} a WHERE session_id IS NOT NULL GROUP BY project, session_id "
        "ORDER BY project, session_id "
        "ON CONFLICT (project, session_id) DO UPDATE SET "
        + ", ".join(f"{c} = sessions.{c} + EXCLUDED.{c}"
                    for c in ("turns", "failed_turns", "input_tokens", "output_tokens")) + ", "
        + ", ".join(f"{c} = CASE WHEN {keep_first} THEN EXCLUDED.{c} ELSE sessions.{c} END"
                    for c in _FIRST) + ", "
        + ", ".join(f"{c} = CASE WHEN {keep_last} THEN EXCLUDED.{c} ELSE sessions.{c} END"
                    for c in _LAST)
        + ", end_ns = greatest(sessions.end_ns, EXCLUDED.end_ns)")


def _subtracted(source: str) -> str:
    """The upsert taking back the turns in `source` (contributions) from their sessions: a
    row whose first turn, latest turn or latest end was among them is marked stale."""
    return (
        "INSERT INTO sessions (project, session_id, turns, failed_turns, input_tokens, "
        "output_tokens, first_start_ns, first_trace_id, last_start_ns, last_trace_id, end_ns) "
        "SELECT project, session_id, -count(*), -count(*) FILTER (WHERE failed_turn), "
        "-sum(input_tokens), -sum(output_tokens), "
        f"{_first('start_ns')}, {_first('trace_id')}, "
        f"{_first('start_ns', True)}, {_first('trace_id', True)}, "
        "max(start_ns + duration_ms * 1000000) "
        f"FROM {source} a WHERE session_id IS NOT NULL GROUP BY project, session_id "
        "ORDER BY project, session_id "
        "ON CONFLICT (project, session_id) DO UPDATE SET "
        + ", ".join(f"{c} = sessions.{c} + EXCLUDED.{c}"
                    for c in ("turns", "failed_turns", "input_tokens", "output_tokens"))
        + ", stale = sessions.stale OR coalesce((EXCLUDED.first_start_ns, "
        "EXCLUDED.first_trace_id) <= (sessions.first_start_ns, sessions.first_trace_id) "
        "OR (EXCLUDED.last_start_ns, EXCLUDED.last_trace_id) >= (sessions.last_start_ns, "
        "sessions.last_trace_id) OR EXCLUDED.end_ns >= sessions.end_ns, true)")


def _users(source: str, sign: str) -> str:
    return (
        "INSERT INTO session_users (project, session_id, user_id, turns) "
        f"SELECT project, session_id, user_id, {sign} * count(*) FROM {source} "
        "WHERE session_id IS NOT NULL AND user_id IS NOT NULL "
        "GROUP BY project, session_id, user_id ORDER BY project, session_id, user_id "
        "ON CONFLICT (project, session_id, user_id) DO UPDATE SET "
        "turns = session_users.turns + EXCLUDED.turns")


def _models(source: str, sign: str) -> str:
    sums = ", ".join(f"{sign} * sum((u.value ->> {n})::bigint)"
                     for n in range(len(_SUMS) + 1))
    return (
        f"INSERT INTO session_models (project, session_id, model, calls, {', '.join(_SUMS)}) "
        f"SELECT c.project, c.session_id, u.key, {sums} "
        f"FROM {source} c CROSS JOIN LATERAL jsonb_each(c.usage_sums) u "
        "WHERE c.session_id IS NOT NULL "
        "GROUP BY c.project, c.session_id, u.key ORDER BY c.project, c.session_id, u.key "
        "ON CONFLICT (project, session_id, model) DO UPDATE SET "
        + ", ".join(f"{c} = session_models.{c} + EXCLUDED.{c}" for c in ("calls", *_SUMS)))


def _scores(source: str, latest: str) -> str:
    """The upsert adding the numbers in `latest` (project, trace_id, name, number_value, sign:
    each a turn's latest whole-run score of a name, added with sign 1 or taken back with -1)
    to the sessions of the turns in `source` (contributions)."""
    return (
        "INSERT INTO session_scores (project, session_id, name, scores, total) "
        "SELECT c.project, c.session_id, l.name, sum(l.sign), "
        "coalesce(sum(l.sign * l.number_value::numeric), 0) "
        f"FROM {source} c JOIN {latest} l ON l.project = c.project AND l.trace_id = c.trace_id "
        "WHERE c.session_id IS NOT NULL AND l.number_value IS NOT NULL "
        "GROUP BY c.project, c.session_id, l.name ORDER BY c.project, c.session_id, l.name "
        "ON CONFLICT (project, session_id, name) DO UPDATE SET "
        "scores = session_scores.scores + EXCLUDED.scores, "
        "total = session_scores.total + EXCLUDED.total")


def _latest(scores: str, sign: str) -> str:
    """Each trace's latest whole-run score of each name among `scores` (a relation with
    project, trace_id, id, step_id, name, number_value), with `sign`."""
    return (f"(SELECT DISTINCT ON (project, trace_id, name) project, trace_id, name, "
            f"number_value, {sign} AS sign FROM {scores} x WHERE step_id IS NULL "
            "ORDER BY project, trace_id, name, id DESC)")


def add_ctes(finalized: str) -> str:
    """CTEs (each starting with a comma) adding the runs in `finalized` (trajectories'
    columns, as they become final) to their sessions, their scores read from `rollup_scores`
    (storage/rollups.py read_scores). Read from the runs themselves, not joined with the
    contributions recorded beside: a run becoming final has none (store() took it back), and
    the planner, which expects one row of each, joined the two by a nested loop."""
    turns = (f"(SELECT f.*, f.has_error OR f.derivation_error IS NOT NULL AS failed_turn "
             f"FROM {finalized} f)")
    return (f", session_added AS ({_added(turns)})"
            f", session_users_added AS ({_users(finalized, '1')})"
            f", session_models_added AS ({_models(finalized, '1')})"
            f", session_scored AS ({_scores(finalized, _latest('rollup_scores', '1'))})")


def take_back_ctes(taken: str) -> str:
    """CTEs (each starting with a comma) taking back the runs whose contributions `taken`
    deleted from their sessions, their scores read from `rollup_scores`."""
    return (f", session_subtracted AS ({_subtracted(taken)})"
            f", session_users_subtracted AS ({_users(taken, '-1')})"
            f", session_models_subtracted AS ({_models(taken, '-1')})"
            f", session_unscored AS ({_scores(taken, _latest('rollup_scores', '-1'))})")


def score_added_ctes(stored: str) -> str:
    """CTEs (each starting with a comma) for scores just inserted (`stored`: project, trace_id,
    id, step_id, name, number_value): on a final turn, a new latest whole-run score of a name
    replaces the one before it (read from the statement's snapshot, which does not hold the
    new ones) in its session's figures."""
    return (
        f", session_new AS MATERIALIZED {_latest(stored, '1')}"
        ", session_old AS MATERIALIZED (SELECT DISTINCT ON (s.project, s.trace_id, s.name) "
        "s.project, s.trace_id, s.name, s.number_value, -1 AS sign FROM scores s "
        "JOIN session_new n ON s.project = n.project AND s.trace_id = n.trace_id "
        "AND s.name = n.name WHERE s.step_id IS NULL "
        "ORDER BY s.project, s.trace_id, s.name, s.id DESC)"
        ", session_rescored AS ("
        + _scores("rollup_contributions",
                  "(SELECT * FROM session_new UNION ALL SELECT * FROM session_old)") + ")")


def score_deleted_ctes(deleted: str) -> str:
    """CTEs (each starting with a comma) for a score just deleted (`deleted`: project,
    trace_id, id, step_id, name, number_value): its turn's latest whole-run score of its name
    before (read from the statement's snapshot, which still holds it) is taken back, and the
    latest without it added; the two are the same score, and cancel, unless the deleted one
    was the latest."""
    return (
        ", session_before AS MATERIALIZED (SELECT s.project, s.trace_id, s.id, s.step_id, "
        f"s.name, s.number_value FROM scores s JOIN {deleted} d ON s.project = d.project "
        "AND s.trace_id = d.trace_id AND s.name = d.name "
        "WHERE s.step_id IS NULL AND d.step_id IS NULL)"
        ", session_rescored AS ("
        + _scores("rollup_contributions",
                  f"({_latest('session_before', '-1')} UNION ALL "
                  + _latest(f"(SELECT b.* FROM session_before b JOIN {deleted} d "
                            "ON b.id <> d.id)", "1") + ")") + ")")


#: a session's ($1 project, $2 session id) remaining final turns are its contributions (a
#: partition being dropped still holds runs already taken back): its first, its latest and
#: its latest end, each read by an index of migration 0092
_FINAL_TURNS = "rollup_contributions c WHERE c.project = $1 AND c.session_id = $2"
_READ_STATS = (
    f"SELECT (SELECT row(c.start_ns, c.trace_id) FROM {_FINAL_TURNS} "
    "ORDER BY c.start_ns, c.trace_id LIMIT 1) AS first, "
    f"(SELECT row(c.start_ns, c.trace_id) FROM {_FINAL_TURNS} "
    "ORDER BY c.start_ns DESC, c.trace_id DESC LIMIT 1) AS last, "
    f"(SELECT max(c.start_ns + c.duration_ms * 1000000) FROM {_FINAL_TURNS}) AS end_ns")
#: the first turn's input preview and whether the latest was interrupted: $1 project, $2 and
#: $3 their trace ids
_READ_TURNS = (
    "SELECT (SELECT t.input_preview FROM trajectories t WHERE t.project = $1 "
    "AND t.trace_id = $2) AS preview, (SELECT t.interrupted FROM trajectories t "
    "WHERE t.project = $1 AND t.trace_id = $3) AS interrupted")
_WRITE_STATS = (
    "UPDATE sessions SET first_start_ns = $3, first_trace_id = $4, first_input_preview = $5, "
    "last_start_ns = $6, last_trace_id = $7, waiting = $8, end_ns = $9, stale = false "
    "WHERE project = $1 AND session_id = $2")


async def refresh(conn: Connection) -> int:
    """Read again the first turn, latest turn and latest end of the sessions this transaction
    marked stale, from their remaining final turns (a session left with none holds none);
    returns how many. Rows another transaction marks are that one's to refresh: it holds
    them locked until it commits, having refreshed them."""
    stale = await conn.fetch("SELECT project, session_id, turns FROM sessions WHERE stale")
    for row in stale:
        values: list[Any] = [None] * 7
        if row["turns"] > 0:
            stats = await conn.fetchrow(_READ_STATS, row["project"], row["session_id"])
            assert stats is not None and stats["first"] is not None
            (first_ns, first_id), (last_ns, last_id) = stats["first"], stats["last"]
            turns = await conn.fetchrow(_READ_TURNS, row["project"], first_id, last_id)
            assert turns is not None
            values = [first_ns, first_id, turns["preview"], last_ns, last_id,
                      turns["interrupted"], stats["end_ns"]]
        await conn.execute(_WRITE_STATS, row["project"], row["session_id"], *values)
    return len(stale)
