"""SQL keeping sessions as rows (migration 0092, docs/sessions.md): each session's figures are
changed in the statements that change its turns (a turn stored, made final, expired, a
partition dropped) and its score rows in those that change a turn's scores.

The writers are CTE fragments those statements include, as monitoring's rollups
(storage/rollups.py) are: one statement per batch, no round trip per trace. A change is a set of
turns, each with a sign: -1 for a turn as it was counted (taken back), +1 as it now counts
(added); a turn stored again or made final is both. Sums move by addition. The first, latest
and last-ending turn move to an added turn that is earlier, later or ends later; when the turn
holding one is taken back and no added turn replaces it, it is looked up among the session's
other turns (through the session index; the last-ending turn by a read of them all, which only
a turn ending earlier than it did, or gone, asks for). Rows are locked and upserted in key
order, so two statements changing the same sessions never deadlock on them.
"""

from __future__ import annotations

from collections.abc import Sequence

#: what a turn contributes, as a change's turns give it (besides sign, project and trace id)
TURN_COLUMNS = (
    "session_id", "status", "start_ns", "duration_ms", "has_error", "derivation_error",
    "interrupted", "user_id", "input_preview", "input_tokens", "output_tokens",
    "cache_read_tokens", "cache_write_tokens", "reasoning_tokens", "derived_usd", "model_usage")
#: the final turns' figures, as run_rollups names them
FINAL_SUMS = ("duration_ms", "input_tokens", "output_tokens", "cache_read_tokens",
              "cache_write_tokens", "reasoning_tokens", "usd")
#: the figures summed over every turn
TURN_SUMS = ("turns", "open_turns", "failed_turns", "turn_input_tokens", "turn_output_tokens")
_SUMS = (*TURN_SUMS, "runs", "failed_runs", *FINAL_SUMS)
#: the first, latest and last-ending turn: (columns, order of the best first, the turns'
#: expressions for them, `{t}` standing for a turn's alias)
_ENDS = {
    "first": (("first_start_ns", "first_trace_id", "first_input_preview"), "ASC",
              ("{t}start_ns", "{t}trace_id", "{t}input_preview")),
    "last": (("last_start_ns", "last_trace_id", "last_interrupted"), "DESC",
             ("{t}start_ns", "{t}trace_id", "{t}interrupted")),
    "end": (("end_ns", "end_trace_id"), "DESC",
            ("{t}start_ns + {t}duration_ms::bigint * 1000000", "{t}trace_id")),
}
_SCORE_SUMS = ("scores", "total", "turns", "turn_total")
#: a model's billable tokens (trajhub_billable's order), as session_models names them
_MODEL_SUMS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
               "reasoning_tokens")


def turns(relation: str, sign: int, status: str | None = None, alias: str = "t") -> str:
    """A SELECT of a change's turns: the rows of `relation` (aliased `alias`) that have a
    session, with `sign`, counted with their own status or `status`."""
    columns = ", ".join(f"'{status}'::text AS status" if c == "status" and status
                        else f"{alias}.{c}" for c in TURN_COLUMNS)
    return (f"SELECT {sign} AS sign, {alias}.project, {alias}.trace_id, {columns} "
            f"FROM {relation} WHERE {alias}.session_id IS NOT NULL")


def _sum(expr: str, where: str | None = None) -> str:
    return (f"coalesce(sum({expr}) FILTER (WHERE {where}), 0)" if where
            else f"coalesce(sum({expr}), 0)")


def _ends_select() -> str:
    """The added turns' first, latest and last-ending turn, per session."""
    out = []
    for cols, order, exprs in _ENDS.values():
        plain = [e.format(t="") for e in exprs]
        by = ", ".join(f"{e} {order}" for e in plain[:2])
        out += [f"(array_agg({e} ORDER BY {by}) FILTER (WHERE sign > 0))[1] AS {c}"
                for c, e in zip(cols, plain, strict=True)]
    return ", ".join(out)


def _delta(source: str) -> str:
    """CTEs summing a change's turns (`source`) per session: session_change."""
    final = "status = 'final'"
    sums = {
        "turns": _sum("sign"), "open_turns": _sum("sign", "status = 'open'"),
        "failed_turns": _sum("sign", "has_error OR derivation_error IS NOT NULL"),
        "turn_input_tokens": _sum("sign * input_tokens"),
        "turn_output_tokens": _sum("sign * output_tokens"),
        "runs": _sum("sign", final), "failed_runs": _sum("sign", f"{final} AND has_error"),
        **{c: _sum(f"sign * {c}", final) for c in FINAL_SUMS if c != "usd"},
        "usd": _sum("sign * coalesce(derived_usd, 0)::numeric", final),
    }
    return (
        ", session_delta AS (SELECT project, session_id, "
        + ", ".join(f"{e} AS {c}" for c, e in sums.items())
        + f", array_agg(trace_id) AS ids, {_ends_select()} "
        f"FROM {source} GROUP BY project, session_id)"
        # the final turns' durations counted by bucket (as storage/rollups.py counts them)
        ", session_latency AS (SELECT project, session_id, "
        "trajhub_counts_at(array_agg(bucket), array_agg(n)) AS latency_counts FROM "
        "(SELECT project, session_id, trajhub_latency_bucket(duration_ms) AS bucket, "
        f"sum(sign) AS n FROM {source} WHERE {final} GROUP BY 1, 2, 3 HAVING sum(sign) <> 0) b "
        "GROUP BY 1, 2)"
        ", session_users AS (SELECT project, session_id, jsonb_object_agg(user_id, n) AS users "
        f"FROM (SELECT project, session_id, user_id, sum(sign) AS n FROM {source} "
        "WHERE user_id IS NOT NULL GROUP BY 1, 2, 3 HAVING sum(sign) <> 0) u GROUP BY 1, 2)"
        ", session_change AS (SELECT d.*, coalesce(l.latency_counts, '{}') AS latency_counts, "
        "coalesce(u.users, '{}') AS users FROM session_delta d "
        "LEFT JOIN session_latency l USING (project, session_id) "
        "LEFT JOIN session_users u USING (project, session_id))")


def _end_update(name: str) -> str:
    """UPDATE's SET of one of the ends (`s` the row, `d` its change): the best of the one held
    if its turn is not in the change, the added one, and, when the held one's turn is in the
    change and the added one does not reach it, the best of the session's other turns."""
    cols, order, exprs = _ENDS[name]
    turn = [e.format(t="t.") for e in exprs]
    worse = ">" if order == "ASC" else "<"
    others = (f"SELECT {', '.join(turn)} FROM trajectories t WHERE s.{cols[1]} = ANY(d.ids) "
              f"AND (d.{cols[1]} IS NULL OR (d.{cols[0]}, d.{cols[1]}) {worse} "
              f"(s.{cols[0]}, s.{cols[1]})) "
              "AND t.project = s.project AND t.session_id = s.session_id "
              "AND t.trace_id <> ALL(d.ids) "
              f"ORDER BY {turn[0]} {order}, {turn[1]} {order} LIMIT 1")
    names = [f"x{i}" for i in range(len(cols))]
    return (f"({', '.join(cols)}) = (SELECT {', '.join(f'c.{n}' for n in names)} FROM ("
            f"SELECT {', '.join(f's.{c}' for c in cols)} WHERE s.{cols[1]} <> ALL(d.ids) "
            f"UNION ALL SELECT {', '.join(f'd.{c}' for c in cols)} "
            f"WHERE d.{cols[1]} IS NOT NULL "
            f"UNION ALL ({others})) c({', '.join(names)}) "
            f"ORDER BY c.x0 {order}, c.x1 {order} LIMIT 1)")


def _end_combine(name: str) -> str:
    """ON CONFLICT's SET of one of the ends: a session another statement created meanwhile
    takes the added turn when it is better (nothing of it was taken back)."""
    cols, order, _ = _ENDS[name]
    better = "<=" if order == "ASC" else ">="
    wins = (f"(sessions.{cols[1]} IS NULL OR (EXCLUDED.{cols[0]}, EXCLUDED.{cols[1]}) {better} "
            f"(sessions.{cols[0]}, sessions.{cols[1]}))")
    return ", ".join(f"{c} = CASE WHEN {wins} THEN EXCLUDED.{c} ELSE sessions.{c} END"
                     for c in cols)


_ALL_ENDS = tuple(c for cols, _, _ in _ENDS.values() for c in cols)
_ROW_COLUMNS = ("project", "session_id", *_SUMS, "user_counts", "latency_counts", *_ALL_ENDS)


def _apply() -> str:
    """CTEs applying session_change to the rows: existing rows updated (locked in key order
    first), the others inserted in key order after them."""
    sums = ", ".join(f"{c} = s.{c} + d.{c}" for c in _SUMS)
    ends = ", ".join(_end_update(n) for n in _ENDS)
    inserted = ", ".join(
        "d.users" if c == "user_counts" else f"d.{c}" for c in _ROW_COLUMNS)
    combine = ", ".join(f"{c} = sessions.{c} + EXCLUDED.{c}" for c in _SUMS)
    return (
        ", session_locked AS (SELECT s.project, s.session_id FROM sessions s "
        "JOIN session_change d ON s.project = d.project AND s.session_id = d.session_id "
        "ORDER BY s.project, s.session_id FOR UPDATE OF s)"
        f", session_updated AS (UPDATE sessions s SET {sums}, "
        "user_counts = trajhub_add_keyed(s.user_counts, d.users), "
        f"latency_counts = trajhub_add_counts(s.latency_counts, d.latency_counts), {ends} "
        "FROM session_locked k JOIN session_change d "
        "ON d.project = k.project AND d.session_id = k.session_id "
        "WHERE s.project = k.project AND s.session_id = k.session_id "
        "RETURNING s.project, s.session_id)"
        f", session_inserted AS (INSERT INTO sessions ({', '.join(_ROW_COLUMNS)}) "
        f"SELECT {inserted} FROM session_change d WHERE NOT EXISTS (SELECT 1 FROM sessions s "
        "WHERE s.project = d.project AND s.session_id = d.session_id) "
        # after the updates (so that every statement locks its rows in the same order)
        "AND (SELECT count(*) FROM session_updated) >= 0 "
        "ORDER BY d.project, d.session_id "
        f"ON CONFLICT (project, session_id) DO UPDATE SET {combine}, "
        "user_counts = trajhub_add_keyed(sessions.user_counts, EXCLUDED.user_counts), "
        "latency_counts = trajhub_add_counts(sessions.latency_counts, EXCLUDED.latency_counts), "
        + ", ".join(_end_combine(n) for n in _ENDS) + ")")


def _score_rows(source: str, scores: str, sign: str) -> str:
    """A SELECT of per-session, per-name score figures of the turns in `source` (project,
    trace_id, session_id, status) from the scores in `scores` (a relation with scores'
    project, trace_id, id, name, step_id, number_value), times `sign`: every numeric score of
    a final turn, and each turn's latest whole-run score of each name when it is a number."""
    final = "t.status = 'final'"
    return (
        f"SELECT t.project, t.session_id, x.name, {sign} * x.scores AS scores, "
        f"{sign} * x.total AS total, {sign} * x.turns AS turns, "
        f"{sign} * x.turn_total AS turn_total FROM {source} t CROSS JOIN LATERAL ("
        f"SELECT f.name, count(*) FILTER (WHERE f.every AND {final}) AS scores, "
        f"coalesce(sum(f.value) FILTER (WHERE f.every AND {final}), 0) AS total, "
        "count(*) FILTER (WHERE NOT f.every) AS turns, "
        "coalesce(sum(f.value) FILTER (WHERE NOT f.every), 0) AS turn_total FROM ("
        "SELECT true AS every, sc.name, sc.number_value::text::numeric AS value "
        f"FROM {scores} sc WHERE sc.project = t.project AND sc.trace_id = t.trace_id "
        "AND sc.number_value IS NOT NULL UNION ALL "
        "SELECT false, l.name, l.number_value::text::numeric FROM ("
        f"SELECT DISTINCT ON (sc.name) sc.name, sc.number_value FROM {scores} sc "
        "WHERE sc.project = t.project AND sc.trace_id = t.trace_id AND sc.step_id IS NULL "
        "ORDER BY sc.name, sc.id DESC) l WHERE l.number_value IS NOT NULL) f "
        "GROUP BY f.name) x")


def _score_upsert(rows: str) -> str:
    """The upsert adding the score figures `rows` (a SELECT of _score_rows' columns, a name
    given more than once summed), in key order; figures summing to nothing are left out."""
    sums = ", ".join(f"sum({c})" for c in _SCORE_SUMS)
    return (
        f"INSERT INTO session_scores (project, session_id, name, {', '.join(_SCORE_SUMS)}) "
        f"SELECT project, session_id, name, {sums} FROM ({rows}) r GROUP BY 1, 2, 3 "
        f"HAVING ({sums}) <> (0, 0, 0, 0) ORDER BY 1, 2, 3 "
        "ON CONFLICT (project, session_id, name) DO UPDATE SET "
        + ", ".join(f"{c} = session_scores.{c} + EXCLUDED.{c}" for c in _SCORE_SUMS))


def _after(ctes: Sequence[str]) -> str:
    """A condition that holds once the data-modifying CTEs `ctes` (each returning rows) have
    run: a statement's writes to sessions wait for its writes to monitoring's rollups, so that
    every statement and transaction locks rollup rows before session rows (a store takes back
    its rollups in the statement before it stores), and none waits for the other's."""
    if not ctes:
        return "true"
    return " + ".join(f"(SELECT count(*) FROM {c})" for c in ctes) + " >= 0"


def change_ctes(turns_cte: str, after: Sequence[str] = ()) -> str:
    """CTEs (each starting with a comma) applying a change (`turns_cte`: a CTE of `turns()`'
    columns) to the sessions, their scores (as `scores` holds them at the statement's start),
    their model calls and their sums per model, after the CTEs `after` ran."""
    source = "session_source"
    return (
        f", session_source AS (SELECT * FROM {turns_cte} WHERE {_after(after)})"
        + _delta(source) + _apply()
        + f", session_scored AS ({_score_upsert(_score_rows(source, 'scores', 't.sign'))})"
        ", session_called AS (INSERT INTO session_calls "
        "(project, session_id, model, call, calls) "
        "SELECT t.project, t.session_id, c.model, c.call, sum(t.sign) "
        f"FROM {source} t CROSS JOIN LATERAL trajhub_model_calls(t.model_usage) c "
        "GROUP BY 1, 2, 3, 4 HAVING sum(t.sign) <> 0 ORDER BY 1, 2, 3, 4 "
        "ON CONFLICT (project, session_id, model, call) DO UPDATE SET "
        "calls = session_calls.calls + EXCLUDED.calls)"
        # and per model, their count and billable tokens summed
        ", session_modeled AS (INSERT INTO session_models (project, session_id, model, calls, "
        f"{', '.join(_MODEL_SUMS)}) SELECT project, session_id, model, sum(sign), "
        + ", ".join(f"sum(sign * b[{i}])" for i in range(1, len(_MODEL_SUMS) + 1))
        + " FROM (SELECT t.project, t.session_id, c.model, t.sign, trajhub_billable(c.call) AS b "
        f"FROM {source} t CROSS JOIN LATERAL trajhub_model_calls(t.model_usage) c "
        "WHERE jsonb_typeof(c.call) = 'array' AND jsonb_array_length(c.call) = 6) m "
        "GROUP BY 1, 2, 3 HAVING (sum(sign), "
        + ", ".join(f"sum(sign * b[{i}])" for i in range(1, len(_MODEL_SUMS) + 1))
        + ") <> (0, 0, 0, 0, 0, 0) ORDER BY 1, 2, 3 "
        "ON CONFLICT (project, session_id, model) DO UPDATE SET "
        + ", ".join(f"{c} = session_models.{c} + EXCLUDED.{c}" for c in ("calls", *_MODEL_SUMS))
        + ")")


#: scores' columns that score_ctes reads of a change
SCORE_COLUMNS = ("project", "trace_id", "id", "name", "step_id", "number_value")


def score_ctes(changed: str, added: bool, after: Sequence[str] = ()) -> str:
    """CTEs (each starting with a comma) changing the session scores of the trajectories whose
    scores `changed` (a CTE of SCORE_COLUMNS) adds (`added`) or deletes: their figures after
    the change less those before it, after the CTEs `after` ran."""
    columns = ", ".join(SCORE_COLUMNS)
    now = (f"(SELECT {columns} FROM scores UNION ALL SELECT {columns} FROM {changed})"
             if added else
             f"(SELECT {columns} FROM scores WHERE id <> ALL(ARRAY(SELECT id FROM {changed})))")
    return (
        ", session_scored_turns AS (SELECT t.project, t.trace_id, t.session_id, t.status "
        "FROM trajectories t JOIN (SELECT DISTINCT project, trace_id FROM "
        f"{changed}) c ON t.project = c.project AND t.trace_id = c.trace_id "
        f"WHERE t.session_id IS NOT NULL AND {_after(after)})"
        ", session_rescored AS ("
        + _score_upsert(_score_rows("session_scored_turns", now, "1") + " UNION ALL "
                        + _score_rows("session_scored_turns", "scores", "-1")) + ")")


def partition_take_back(trajectories: str) -> str:
    """The statement taking back the turns in one partition (the table `trajectories`),
    before the partition is dropped."""
    return (f"WITH session_turns AS ({turns(f'{trajectories} t', -1)})"
            + change_ctes("session_turns")
            + " SELECT count(*) FROM session_turns")
