"""Sessions: the trajectories of a project that share a session id (the summary's `session_id`,
read by convention in normalizers/run_context.py; docs/conventions.md, "Which id is the
session"). A session is stored as a row of the figures of its final turns, kept as each turn
becomes final and corrected as it is re-derived, scored or deleted (storage/session_rows.py,
docs/monitoring.md "Sessions"); a read adds the session's open turns to it
(storage/session_reads.py). Every field below is still what its turns aggregate to; each
`computed` select names the column of the read's `summaries` that holds it. Each filter is a
condition on the session's turns, checked on its latest turn as the list walks them.

Declared once here (`trajhub.records`) for the REST API (`GET /api/v1/sessions`,
`GET /api/v1/sessions/{session_id}`), the Python client and `trajhub sessions list|show`.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from trajhub.records import Cli, Condition, Example, Query, Record, Stored, computed
from trajhub.records.query_types import Int64, ScoreFilter, Text, TimeText
from trajhub.records.trajectories import TRACE_ID, CostView, empty_cost

SESSION_ID = "session-demo-1"


#: a turn's latest whole-run score of each name: a number, a boolean or a category
_TURN_SCORES = (
    "(SELECT coalesce(jsonb_object_agg(l.name, l.value), '{}'::jsonb) FROM ("
    "SELECT DISTINCT ON (sc.name) sc.name, CASE sc.value_type "
    "WHEN 'number' THEN to_jsonb(sc.number_value) "
    "WHEN 'boolean' THEN to_jsonb(sc.number_value = 1) "
    "ELSE to_jsonb(sc.category_value) END AS value FROM scores sc "
    "WHERE sc.project = trajectories.project AND sc.trace_id = trajectories.trace_id "
    "AND sc.step_id IS NULL ORDER BY sc.name, sc.id DESC) l WHERE l.value IS NOT NULL)")


class SessionSummary(Record):
    """A session as the session list shows it: an aggregate of its turns (the trajectories
    sharing its session id), read from its stored row and its open turns."""

    session_id: Annotated[
        str,
        Stored(column=None, written_by="key", select="session_id"),
        Cli("SESSION"),
        Example(SESSION_ID),
    ] = Field(description="the session (conversation, thread) id its turns share")
    turns: Annotated[
        int,
        computed("turns"),
        Cli("TURNS", right=True),
        Example(2),
    ] = Field(default=0, description="how many runs (trajectories) it holds")
    start_time: Annotated[
        str,
        computed("start_time", "time"),
        Cli("FIRST", "when", order=1),
        Example("2026-11-22T10:00:00Z"),
    ] = Field(default="", description="RFC 3339: when its first turn started")
    last_turn_time: Annotated[
        str,
        computed("last_turn_time", "time"),
        Cli("LAST", "when", order=1),
        Example("2026-11-22T10:05:00Z"),
    ] = Field(default="", description="RFC 3339: when its latest turn started (the list is newest "
              "first by this)")
    end_time: Annotated[
        str,
        computed("end_time", "time"),
        Example("2026-11-22T10:05:03.200000Z"),
    ] = Field(default="", description="RFC 3339: when its last turn to end ended")
    user_ids: Annotated[
        list[str],
        computed("user_ids"),
        Example(["user-42"]),
    ] = Field(default_factory=list, description="the user ids its turns recorded, sorted")
    input_tokens: Annotated[
        int,
        computed("input_tokens"),
        Cli("TOKENS", "sum", right=True, plus=("output_tokens",), order=2),
        Example(375),
    ] = Field(default=0, description="summed over its turns")
    output_tokens: Annotated[
        int,
        computed("output_tokens"),
        Example(37),
    ] = Field(default=0, description="summed over its turns")
    failed_turns: Annotated[
        int,
        computed("failed_turns"),
        Cli("FAILED", right=True, order=2),
        Example(0),
    ] = Field(default=0, description="turns whose root or any step failed, or that could not be "
              "derived")
    open_turns: Annotated[
        int,
        computed("open_turns"),
        Example(0),
    ] = Field(default=0, description="turns still open (spans may still arrive)")
    # the latest turn by the order `last_turn_time` uses (docs/trajectory-rules.md,
    # "Interrupted runs")
    waiting: Annotated[
        bool,
        computed("waiting"),
        Example(False),
    ] = Field(default=False, description="its latest turn was interrupted (LangGraph's "
              "interrupt()): the session waits for a person to answer and resume it")
    first_trace_id: Annotated[
        str,
        computed("first_trace_id"),
        Example(TRACE_ID),
    ] = Field(default="", description="the trajectory of its first turn")
    # the stored preview of the first turn's input: the start of the user's text
    # (service/derivation.py, normalizers/item_fields.py `run_texts`)
    first_input_preview: Annotated[
        str | None,
        computed("first_input_preview"),
        Cli("FIRST INPUT", "clip", order=3),
        Example("what is the weather in sf"),
    ] = Field(default=None, description="the start of the user's text in its first turn (200 "
              "characters at most)")
    # the latest whole-run score of each name of each turn (storage/trajectory_reads.py reads
    # the same one for the list's filter), averaged over the turns that have one
    scores: Annotated[
        dict[str, float],
        computed("scores", "json"),
        Example({"correctness": 0.75}),
    ] = Field(default_factory=dict, description="per score name, the mean over its turns of each "
              "turn's latest whole-run score of that name (a boolean counts 1 or 0; categories "
              "and errors are left out)")
    # JSON texts: token usage per model (the stored row's calls summed per model, then each
    # open turn's), summed and priced on read
    cost: Annotated[
        CostView,
        computed("cost", "cost_of_turns"),
    ] = Field(default_factory=empty_cost, description="tokens, and money where the price table "
              "lists the models (TRAJHUB_PRICES), over all its turns")


#: `input` and `output` are read from the turn's trajectory document (normalizers/item_fields.py:
#: the request and the final answer, as an evaluation item takes them); the select gives the
#: stored previews, which stand in when the trajectory has no document (it could not be derived)
class SessionTurn(Record):
    """One turn of a session: one run (trajectory), with the user's text and the answer."""

    trace_id: Annotated[str, Stored(written_by="key"), Example(TRACE_ID)] = Field(
        description="the turn's trajectory")
    status: Annotated[Literal["open", "final"], Stored(written_by=""), Example("final")] = Field(
        default="open", description="open while spans may still arrive, then final")
    start_time: Annotated[
        str,
        Stored(column="start_ns", written_by="", convert="time", stored_type=int),
        Example("2026-11-22T10:00:00Z"),
    ] = Field(default="", description="RFC 3339: when the turn started")
    duration_ms: Annotated[int, Stored(written_by=""), Example(2103)] = Field(
        default=0, description="the turn's duration in whole milliseconds")
    user_id: Annotated[str | None, Stored(written_by=""), Example("user-42")] = Field(
        default=None, description="the user id the turn recorded")
    agent_names: Annotated[list[str], Stored(written_by=""), Example(["assistant"])] = Field(
        default_factory=list, description="its agent (and graph) steps' names, in order")
    input: Annotated[
        str | None,
        computed("input_preview"),
        Example("what is the weather in sf"),
    ] = Field(default=None, description="the user's text: the content of the last user message of "
              "the run's input (its whole input as text when it is not chat-shaped); null when "
              "the run recorded none")
    output: Annotated[
        str | None,
        computed("output_preview"),
        Example("It is sunny in sf."),
    ] = Field(default=None, description="the answer: the content of the last assistant message of "
              "the run's output (its whole output as text when it is not chat-shaped); null when "
              "the run recorded none")
    has_error: Annotated[bool, Stored(written_by=""), Example(False)] = Field(
        default=False, description="the root or any step failed")
    interrupted: Annotated[bool, Stored(written_by=""), Example(False)] = Field(
        default=False, description="LangGraph's interrupt() ended the turn, waiting for a "
        "person; a later turn resumes it")
    derivation_error: Annotated[str | None, Stored(written_by="")] = Field(
        default=None, description="why the trace could not be turned into a trajectory; null when "
        "it was")
    input_tokens: Annotated[int, Stored(written_by=""), Example(130)] = 0
    output_tokens: Annotated[int, Stored(written_by=""), Example(19)] = 0
    cost: Annotated[
        CostView,
        computed("model_usage", "cost"),
    ] = Field(default_factory=empty_cost, description="tokens, and money where the price table "
              "lists the models")
    scores: Annotated[
        dict[str, float | bool | str],
        computed(_TURN_SCORES, "json"),
        Example({"correctness": 1.0, "verdict": "pass"}),
    ] = Field(default_factory=dict, description="its latest whole-run score of each name "
              "(docs/scores.md)")


_FAILED = "(s.has_error OR s.derivation_error IS NOT NULL)"
#: `s` was interrupted and its session's latest turn (by start, ties by trace id: the order
#: `waiting` takes) was: among the sessions of the project ($1) with an interrupted turn. Not
#: correlated with `s`'s session, which Citus refuses (deploy/SCALING.md, section 3).
_WAITING = ("(s.interrupted AND s.session_id IN (SELECT n.session_id FROM trajectories n "
            "WHERE n.project = $1 AND n.session_id IN (SELECT i.session_id FROM trajectories i "
            "WHERE i.project = $1 AND i.interrupted) GROUP BY n.session_id "
            "HAVING (array_agg(n.interrupted ORDER BY n.start_ns DESC, n.trace_id DESC))[1]))")


#: How storage/session_reads.py uses each condition: `t.…` is a condition on the start of the
#: session's latest turn (`t.start_ns`); `s.…` is a condition on any one turn `s` (the session
#: has such a turn, or, for a bool's negation `NOT …`, has none); `count(*) …` is a condition on
#: how many turns it has.
class SessionQuery(Query):
    """Filters over sessions; every one given must match. Each is a condition on the session as a
    whole (any of its turns)."""

    # a turn at or after the time: the latest turn is one
    start: Annotated[TimeText | None, Condition("t.start_ns >= {}", convert="time")] = Field(
        default=None, description="has a turn started at or after this (RFC 3339 or Unix ns)")
    end: Annotated[TimeText | None, Condition("s.start_ns < {}", convert="time")] = Field(
        default=None, description="has a turn started before this (RFC 3339 or Unix ns)")
    user_id: Annotated[Text | None, Condition("s.user_id = {}")] = Field(
        default=None, description="a turn recorded this user id")
    agent: Annotated[
        Text | None,
        Condition("trajhub_lower_all(s.agent_names) @> ARRAY[lower({})]"),
    ] = Field(default=None, description="a turn has an agent (or graph) step of this name "
              "(case-insensitive)")
    has_error: Annotated[
        bool | None,
        Condition(_FAILED, f"NOT {_FAILED}",
                  metavar="true|false"),
    ] = Field(default=None, description="some turn failed (true) or none did (false)")
    waiting: Annotated[
        bool | None,
        Condition(_WAITING, f"NOT {_WAITING}", metavar="true|false"),
    ] = Field(default=None, description="its latest turn was interrupted, so it waits for a "
              "person (true), or not (false)")
    min_turns: Annotated[Int64 | None, Condition("count(*) >= {}")] = Field(
        default=None, description="has at least this many turns")
    # parsed by the API (trajhub.records.scores: parse_score_condition); its condition is
    # the trajectory list's, on each turn (storage/session_reads.py)
    score: ScoreFilter = Field(default=None, description="some turn's latest whole-run score "
                               "of a name compares so: `<name><op><value>`, as the trajectory "
                               "list's `score` filter")
