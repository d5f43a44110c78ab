"""Sessions: the trajectories of a project that share a session id (the summary's `session_id`,
read by convention in normalizers/run_context.py; docs/conventions.md, "Which id is the
session"). A session is not stored: it is aggregated from the `trajectories` table when read
(storage/session_reads.py), so every field below is an aggregate over the session's turns
(`Field.select`), and each filter is a condition on the session's turns, checked on its latest
turn as the list walks them.

Declared once here (`trajhub.records`) for the REST API (`GET /api/v1/sessions`,
`GET /api/v1/sessions/{session_id}`), the Python client and `trajhub sessions list|show`.
"""

from __future__ import annotations

from typing import Any, Literal

from trajhub.records import Cli, Field, Filter, Param, Record
from trajhub.records.trajectories import COST, TRACE_ID

SESSION_ID = "session-demo-1"


def _aggregate(name: str, type_: Any, description: str, select: str, example: Any,
               convert: str = "", cli: Cli | None = None) -> Field:
    return Field(name, type_, description, column=None, select=select, convert=convert,
                 written_by="", example=example, cli=cli)


#: each score name's mean over the session's turns (their latest whole-run score of it); an
#: aggregate over the outer query's rows (the session's turns), evaluated at that level
_MEAN_SCORES = (
    "(SELECT coalesce(jsonb_object_agg(m.name, m.mean), '{}'::jsonb) FROM "
    # the outer query's aggregates, taken in a select list (not allowed in a WHERE)
    "(SELECT array_agg(trace_id) AS ids, min(project) AS project) turns CROSS JOIN LATERAL ("
    "SELECT l.name, avg(l.number_value) AS mean FROM ("
    "SELECT DISTINCT ON (sc.trace_id, sc.name) sc.name, sc.number_value FROM scores sc "
    "WHERE sc.project = turns.project AND sc.trace_id = ANY(turns.ids) "
    "AND sc.step_id IS NULL ORDER BY sc.trace_id, sc.name, sc.id DESC) l "
    "WHERE l.number_value IS NOT NULL GROUP BY l.name) m)")

#: a turn's latest whole-run score of each name: a number, a boolean or a category
_TURN_SCORES = (
    "(SELECT coalesce(jsonb_object_agg(l.name, l.value), '{}'::jsonb) FROM ("
    "SELECT DISTINCT ON (sc.name) sc.name, CASE sc.value_type "
    "WHEN 'number' THEN to_jsonb(sc.number_value) "
    "WHEN 'boolean' THEN to_jsonb(sc.number_value = 1) "
    "ELSE to_jsonb(sc.category_value) END AS value FROM scores sc "
    "WHERE sc.project = trajectories.project AND sc.trace_id = trajectories.trace_id "
    "AND sc.step_id IS NULL ORDER BY sc.name, sc.id DESC) l WHERE l.value IS NOT NULL)")

SESSION_SUMMARY = Record("SessionSummary", "A session as the session list shows it: an "
                         "aggregate of its turns (the trajectories sharing its session id).", (
    Field("session_id", str, "the session (conversation, thread) id its turns share",
          column=None, select="session_id", written_by="key", example=SESSION_ID,
          cli=Cli("SESSION")),
    _aggregate("turns", int, "how many runs (trajectories) it holds", "count(*)", 2,
               cli=Cli("TURNS", right=True)),
    _aggregate("start_time", str, "RFC 3339: when its first turn started", "min(start_ns)",
               "2026-11-22T10:00:00Z", convert="time", cli=Cli("FIRST", "when", order=1)),
    _aggregate("last_turn_time", str, "RFC 3339: when its latest turn started (the list is "
               "newest first by this)", "max(start_ns)", "2026-11-22T10:05:00Z",
               convert="time", cli=Cli("LAST", "when", order=1)),
    _aggregate("end_time", str, "RFC 3339: when its last turn to end ended",
               "max(start_ns + duration_ms::bigint * 1000000)", "2026-11-22T10:05:03.200000Z",
               convert="time"),
    _aggregate("user_ids", list[str], "the user ids its turns recorded, sorted",
               "array_remove(array_agg(DISTINCT user_id ORDER BY user_id), NULL)", ["user-42"]),
    _aggregate("input_tokens", int, "summed over its turns", "sum(input_tokens)::bigint", 375,
               cli=Cli("TOKENS", "sum", right=True, plus=("output_tokens",), order=2)),
    _aggregate("output_tokens", int, "summed over its turns", "sum(output_tokens)::bigint", 37),
    _aggregate("failed_turns", int, "turns whose root or any step failed, or that could not "
               "be derived", "count(*) FILTER (WHERE has_error OR derivation_error IS NOT NULL)",
               0, cli=Cli("FAILED", right=True, order=2)),
    _aggregate("open_turns", int, "turns still open (spans may still arrive)",
               "count(*) FILTER (WHERE status = 'open')", 0),
    _aggregate("first_trace_id", str, "the trajectory of its first turn",
               "(array_agg(trace_id ORDER BY start_ns, trace_id))[1]", TRACE_ID),
    # the stored preview of the first turn's input: the start of the user's text
    # (service/derivation.py, normalizers/item_fields.py `run_texts`)
    _aggregate("first_input_preview", str | None, "the start of the user's text in its first "
               "turn (200 characters at most)",
               "(array_agg(input_preview ORDER BY start_ns, trace_id))[1]",
               "what is the weather in sf", cli=Cli("FIRST INPUT", "clip", order=3)),
    # the latest whole-run score of each name of each turn (storage/trajectory_reads.py reads
    # the same one for the list's filter), averaged over the turns that have one
    _aggregate("scores", dict[str, float], "per score name, the mean over its turns of each "
               "turn's latest whole-run score of that name (a boolean counts 1 or 0; "
               "categories and errors are left out)", _MEAN_SCORES, {"correctness": 0.75},
               convert="json"),
    # JSON texts: each turn's token usage per model, summed and priced on read
    _aggregate("cost", COST, "tokens, and money where the price table lists the models "
               "(TRAJHUB_PRICES), over all its turns", "array_agg(model_usage)", None,
               convert="cost_of_turns"),
))

#: `input` and `output` are read from the turn's trajectory document (normalizers/item_fields.py:
#: the request and the final answer, as an evaluation item takes them); the select gives the
#: stored previews, which stand in when the trajectory has no document (it could not be derived)
SESSION_TURN = Record("SessionTurn", "One turn of a session: one run (trajectory), with the "
                      "user's text and the answer.", (
    Field("trace_id", str, "the turn's trajectory", written_by="key", example=TRACE_ID),
    Field("status", Literal["open", "final"], "open while spans may still arrive, then final",
          written_by="", example="final"),
    Field("start_time", str, "RFC 3339: when the turn started", column="start_ns",
          stored_type=int, convert="time", written_by="", example="2026-11-22T10:00:00Z"),
    Field("duration_ms", int, "the turn's duration in whole milliseconds", written_by="",
          example=2103),
    Field("user_id", str | None, "the user id the turn recorded", written_by="",
          example="user-42"),
    Field("agent_names", list[str], "its agent (and graph) steps' names, in order",
          written_by="", example=["assistant"]),
    Field("input", str | None, "the user's text: the content of the last user message of the "
          "run's input (its whole input as text when it is not chat-shaped); null when the "
          "run recorded none", column=None, select="input_preview", written_by="",
          example="what is the weather in sf"),
    Field("output", str | None, "the answer: the content of the last assistant message of "
          "the run's output (its whole output as text when it is not chat-shaped); null when "
          "the run recorded none", column=None, select="output_preview", written_by="",
          example="It is sunny in sf."),
    Field("has_error", bool, "the root or any step failed", written_by="", example=False),
    Field("derivation_error", str | None, "why the trace could not be turned into a "
          "trajectory; null when it was", written_by="", example=None),
    Field("input_tokens", int, written_by="", example=130),
    Field("output_tokens", int, written_by="", example=19),
    Field("cost", COST, "tokens, and money where the price table lists the models",
          column=None, select="model_usage", convert="cost", written_by=""),
    Field("scores", dict[str, float | bool | str], "its latest whole-run score of each name "
          "(docs/scores.md)", column=None, select=_TURN_SCORES, convert="json",
          written_by="", example={"correctness": 1.0, "verdict": "pass"}),
))

_FAILED = "(s.has_error OR s.derivation_error IS NOT NULL)"

#: How storage/session_reads.py uses each condition: `t.…` is a condition on the session's
#: latest turn `t`; `s.…` is a condition on any one turn `s` (the session has such a turn, or,
#: for a bool's negation `NOT …`, has none); `count(*) …` is a condition on how many turns it has.
SESSION_FILTER = Filter("SessionQuery", "Filters over sessions; every one given must match. "
                        "Each is a condition on the session as a whole (any of its turns).", (
    # a turn at or after the time: the latest turn is one
    Param("start", str, "has a turn started at or after this (RFC 3339 or Unix ns)",
          "t.start_ns >= {}", convert="time"),
    Param("end", str, "has a turn started before this (RFC 3339 or Unix ns)",
          "s.start_ns < {}", convert="time"),
    Param("user_id", str, "a turn recorded this user id", "s.user_id = {}"),
    Param("agent", str, "a turn has an agent (or graph) step of this name (case-insensitive)",
          "trajhub_lower_all(s.agent_names) @> ARRAY[lower({})]"),
    Param("has_error", bool, "some turn failed (true) or none did (false)", _FAILED,
          f"NOT {_FAILED}", metavar="true|false"),
    Param("min_turns", int, "has at least this many turns", "count(*) >= {}"),
    # parsed by the API (trajhub.records.scores: parse_score_condition); its condition is
    # the trajectory list's, on each turn (storage/session_reads.py)
    Param("score", str, "some turn's latest whole-run score of a name compares so: "
          "`<name><op><value>`, as the trajectory list's `score` filter",
          custom=True, convert="score", metavar="NAME<OP>VALUE"),
))
