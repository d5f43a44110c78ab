"""The trajectory summary (a row of `GET /api/v1/trajectories`, of the `trajectories` table,
and of `trajhub trajectories list`) and the trajectory filter, declared once
(`trajhub.records`).

Adding a summary field: declare it here (`Stored(written_by="summary")`), fill the attribute of that
name in the normalizer's summary (normalizers/builder.py, `DerivedSummary` and `_summarize`),
and add its column in a migration (storage/migrations).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from trajhub.records import (
    SERVED_ONLY,
    Cli,
    Condition,
    Example,
    Query,
    Record,
    Stored,
    StoredOnly,
    computed,
)
from trajhub.records.query_types import Int64, ScoreFilter, Text, TimeText

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


class CostView(Record):
    """Tokens, each counted once, and money where a price source knows the models
    (docs/costs.md)."""

    input_tokens: Annotated[int, SERVED_ONLY, Example(130)] = Field(
        default=0, description="all input tokens, cache reads and writes included")
    output_tokens: Annotated[int, SERVED_ONLY, Example(19)] = Field(
        default=0, description="all output tokens, reasoning included")
    cached_input_tokens: Annotated[int, SERVED_ONLY, Example(0)] = Field(
        default=0, description="the input tokens read from a prompt cache")
    cache_write_tokens: Annotated[int, SERVED_ONLY, Example(0)] = Field(
        default=0, description="the input tokens written to a prompt cache")
    reasoning_tokens: Annotated[int, SERVED_ONLY, Example(0)] = Field(
        default=0, description="the output tokens spent on reasoning")
    usd: Annotated[float | None, SERVED_ONLY, Example(3.09e-05)] = Field(
        default=None, description="sum over the priced model steps; null when none had a price")
    complete: Annotated[bool, SERVED_ONLY, Example(True)] = Field(
        default=False, description="every model step had a price")
    unpriced_models: Annotated[list[str], SERVED_ONLY, Example([])] = Field(default_factory=list)
    price_sources: Annotated[
        list[str],
        SERVED_ONLY,
        Example(["genai-prices 0.2.3, data of 2026-11-10"]),
    ] = Field(default_factory=list, description="the sources that priced these steps, each with "
              "the date of its prices: `genai-prices <version>, data of <date>` or "
              "`TRAJHUB_PRICES <file>, as of <date>`")
    currency: Annotated[str, SERVED_ONLY, Example("USD")] = ""
    price_table: Annotated[
        str,
        SERVED_ONLY,
        Example("genai-prices 0.2.3, data of 2026-11-10"),
    ] = Field(default="", description="the price sources configured, the one that wins first")
    prices_as_of: Annotated[str, SERVED_ONLY, Example("2026-11-10")] = Field(
        default="", description="the date of the prices used: the TRAJHUB_PRICES table's `as_of` "
        "when only it priced the steps, else the date of genai-prices' data")


def empty_cost() -> CostView:
    """What a client reads when an answer has no cost (an older server's)."""
    return CostView()


class TrajectorySummary(Record):
    """A trajectory as the trajectory list shows it."""

    stored_only = (
        # Free text (`q`) is all that reads these two: stored cut and lower-cased
        # (storage/derivation_store.py, migration 0018), never served.
        StoredOnly("root_input", str, Stored(written_by="summary")),
        StoredOnly("root_output", str, Stored(written_by="summary")),
        #: JSON text: token usage per model name (normalizers.playback.model_usage), priced on read
        StoredOnly("model_usage", str, Stored(default="{}")),
        #: JSON text: the same usage's billable tokens summed per model (evaluators/pricing.py
        #: `usage_sums`), which a session's row adds up (storage/session_rows.py)
        StoredOnly("usage_sums", str, Stored(default="{}")),
        # What monitoring's rollups group and sum (storage/rollups.py, migration 0080): the
        # run name, release and prompt version (normalizers/run_labels.py), the model calls'
        # cache and reasoning tokens and their money as priced when derived.
        StoredOnly("run_name", str | None, Stored(default=None)),
        StoredOnly("release", str | None, Stored(default=None)),
        StoredOnly("prompt_version", str | None, Stored(default=None)),
        StoredOnly("cache_read_tokens", int, Stored(default=0)),
        StoredOnly("cache_write_tokens", int, Stored(default=0)),
        StoredOnly("reasoning_tokens", int, Stored(default=0)),
        StoredOnly("derived_usd", float | None, Stored(default=None)),
    )

    trace_id: Annotated[str, Stored(written_by="key"), Cli("TRACE ID"), Example(TRACE_ID)]
    status: Annotated[
        Literal["open", "final"],
        Stored(written_by="database"),
        Cli("STATUS"),
        Example("final"),
    ] = Field(default="open", description="open while spans may still arrive, then final")
    revision: Annotated[int, Stored(written_by="database"), Example(1)] = Field(
        default=0, description="how many times it was derived")
    normalizer_version: Annotated[str, Example("1")] = Field(
        default="", description="the normalizer version that derived it")
    framework: Annotated[str, Stored(written_by="summary"), Example("langgraph")] = Field(
        default="", description="langgraph, langchain, eino, … (empty when none was recognized)")
    conventions: Annotated[
        list[str],
        Stored(written_by="summary"),
        Example(["openinference"]),
    ] = Field(default_factory=list, description="the conventions its spans were read with")
    root_name: Annotated[str, Stored(written_by="summary"), Example("LangGraph")] = Field(
        default="", description="the name of its root step (its root agent or graph)")
    agent_names: Annotated[
        list[str],
        Stored(written_by="summary"),
        Cli("AGENTS", order=1),
        Example(["LangGraph"]),
    ] = Field(default_factory=list, description="its agent (and graph) steps' names, in order")
    tool_names: Annotated[
        list[str],
        Stored(written_by="summary"),
        Cli("TOOLS", order=1),
        Example(["get_weather"]),
    ] = Field(default_factory=list, description="the tools it called")
    model_names: Annotated[
        list[str],
        Stored(written_by="summary"),
        Example(["gpt-4o-mini"]),
    ] = Field(default_factory=list, description="the models it called")
    start_time: Annotated[
        str,
        Stored(column="start_ns", written_by="summary", convert="time", stored_type=int),
        Cli("START", "when"),
        Example("2026-11-22T10:00:00Z"),
    ] = Field(default="", description="RFC 3339: when the run's root started")
    end_time: Annotated[
        str,
        computed("start_ns + duration_ms::bigint * 1000000", "time"),
        Example("2026-11-22T10:00:02.103000Z"),
    ] = Field(default="", description="RFC 3339: when the run's root ended (start_time + "
              "duration_ms)")
    duration_ms: Annotated[
        int,
        Stored(written_by="summary"),
        Cli("DURATION", "duration", right=True),
        Example(2103),
    ] = Field(default=0, description="the root's duration in whole milliseconds")
    step_count: Annotated[
        int,
        Stored(written_by="summary"),
        Cli("STEPS", right=True),
        Example(3),
    ] = Field(default=0, description="model and tool steps")
    model_step_count: Annotated[int, Stored(written_by="summary"), Example(2)] = 0
    tool_step_count: Annotated[int, Stored(written_by="summary"), Example(1)] = 0
    input_tokens: Annotated[
        int,
        Stored(written_by="summary"),
        Cli("TOKENS", "sum", right=True, plus=("output_tokens",)),
        Example(130),
    ] = 0
    output_tokens: Annotated[int, Stored(written_by="summary"), Example(19)] = 0
    failed_model_steps: Annotated[int, Stored(written_by="summary"), Example(0)] = 0
    failed_tool_steps: Annotated[int, Stored(written_by="summary"), Example(0)] = 0
    has_error: Annotated[
        bool,
        Stored(written_by="summary"),
        Cli("ERROR", "yes"),
        Example(False),
    ] = Field(default=False, description="the root or any step failed")
    interrupted: Annotated[
        bool,
        Stored(written_by="summary"),
        Example(False),
    ] = Field(default=False, description="LangGraph's interrupt() ended the run, waiting for a "
              "person; a later run on its thread resumes it (not failed: the root's metadata "
              "names the interrupting tool or node and its payload)")
    derivation_error: str | None = Field(default=None, description="why the trace could not be "
                                         "turned into a trajectory; null when it was")
    service: Annotated[str | None, Example("weather-agent")] = Field(
        default=None, description="the service that ran it")
    session_id: Annotated[str | None, Example("session-demo-1")] = Field(
        default=None, description="session, conversation or thread id, where the instrumentation "
        "recorded one")
    user_id: Annotated[str | None, Example("user-42")] = Field(
        default=None, description="user id, where the instrumentation recorded one")
    input_preview: Annotated[str | None, Example("what is the weather in sf")] = Field(
        default=None, description="the start of the run's input (200 characters at most)")
    output_preview: Annotated[str | None, Example("It is sunny in sf.")] = Field(
        default=None, description="the start of the run's output")
    cost: Annotated[
        CostView,
        computed("model_usage", "cost"),
    ] = Field(default_factory=empty_cost, description="tokens, and money where a price source "
              "knows the models (genai-prices, TRAJHUB_PRICES)")


_TEXT = ("text in the root input or output, ignoring case: the text must occur as written, "
         "and each of its words must begin a word of the input or output (`weath` finds "
         "'weather', `eather` does not). Words are split as PostgreSQL's text search splits "
         "them; only the first 100,000 characters of the input and of the output are "
         "searched. Text without letters or digits is matched by a slow scan.")


class TrajectoryQuery(Query):
    """Filters over trajectory summaries; every one given must match."""

    start: Annotated[TimeText | None, Condition("start_ns >= {}", convert="time")] = Field(
        default=None, description="started at or after (RFC 3339 or Unix ns)")
    end: Annotated[TimeText | None, Condition("start_ns < {}", convert="time")] = Field(
        default=None, description="started before (RFC 3339 or Unix ns)")
    # case-insensitive array containment, so the GIN indexes over the lower-cased names serve
    # these (migration 0008)
    agent: Annotated[
        Text | None,
        Condition("trajhub_lower_all(agent_names) @> ARRAY[lower({})]"),
    ] = Field(default=None, description="has an agent (or graph) step of this name "
              "(case-insensitive)")
    tool: Annotated[
        Text | None,
        Condition("trajhub_lower_all(tool_names) @> ARRAY[lower({})]"),
    ] = Field(default=None, description="called this tool (case-insensitive)")
    model: Annotated[
        Text | None,
        Condition("trajhub_lower_all(model_names) @> ARRAY[lower({})]"),
    ] = Field(default=None, description="called this model (case-insensitive)")
    framework: Annotated[Text | None, Condition("framework = {}")] = Field(
        default=None, description="langgraph, langchain, eino, …")
    service: Annotated[Text | None, Condition("service = {}")] = Field(
        default=None, description="the service (resource `service.name`, or Coze Loop's service "
        "name) of the run")
    # the labels monitoring's time series group by (docs/monitoring.md), so that a chart's
    # point opens the runs behind it
    run_name: Annotated[Text | None, Condition("run_name = {}")] = Field(
        default=None, description="the run name: its `trajhub.run` attribute")
    release: Annotated[Text | None, Condition("release = {}")] = Field(
        default=None, description="the run's release: the resource's `service.version`")
    prompt_version: Annotated[Text | None, Condition("prompt_version = {}")] = Field(
        default=None, description="the prompt version the run recorded")
    session_id: Annotated[Text | None, Condition("session_id = {}")] = Field(
        default=None, description="the session (conversation, thread) id the instrumentation "
        "recorded")
    user_id: Annotated[Text | None, Condition("user_id = {}")] = Field(
        default=None, description="the user id the instrumentation recorded")
    status: Annotated[Literal["open", "final"] | None, Condition(custom=True)] = Field(
        default=None, description="open (spans may still arrive) or final")
    failed_tool_steps: Annotated[
        bool | None,
        Condition("failed_tool_steps > 0", "failed_tool_steps = 0", metavar="true|false"),
    ] = Field(default=None, description="has (true) or lacks (false) failed tool steps")
    failed_model_steps: Annotated[
        bool | None,
        Condition("failed_model_steps > 0", "failed_model_steps = 0", metavar="true|false"),
    ] = Field(default=None, description="has (true) or lacks (false) failed model steps")
    has_error: Annotated[
        bool | None,
        Condition("has_error", "NOT has_error", metavar="true|false"),
    ] = Field(default=None, description="the root or any step failed (true) or none did (false)")
    interrupted: Annotated[
        bool | None,
        Condition("interrupted", "NOT interrupted", metavar="true|false"),
    ] = Field(default=None, description="LangGraph's interrupt() ended the run, waiting for a "
              "person (true), or not (false)")
    # the web UI hides runs without steps by default (README "Web UI")
    has_steps: Annotated[
        bool | None,
        Condition("step_count > 0", "step_count = 0", metavar="true|false"),
    ] = Field(default=None, description="has at least one step (true) or none (false): an "
              "instrumentation's side traces, such as Traceloop's `create_agent`, have none")
    min_tokens: Annotated[Int64 | None, Condition("input_tokens + output_tokens >= {}")] = Field(
        default=None, description="at least this many input + output tokens")
    max_tokens: Annotated[Int64 | None, Condition("input_tokens + output_tokens <= {}")] = Field(
        default=None, description="at most this many input + output tokens")
    min_duration_ms: Annotated[Int64 | None, Condition("duration_ms >= {}")] = Field(
        default=None, description="lasted at least this many milliseconds")
    max_duration_ms: Annotated[Int64 | None, Condition("duration_ms <= {}")] = Field(
        default=None, description="lasted at most this many milliseconds")
    # parsed by the API (trajhub.records.scores: parse_score_condition), a 400 when it does
    # not read; its condition is storage's (storage/trajectory_reads.py)
    score: ScoreFilter = Field(
        default=None, description="its latest whole-run score of a name compares so: "
        "`<name><op><value>`, op one of >=, <= (numbers), =, != (a number, true/false, or a "
        "category as written); e.g. `correctness>=0.5`, `verdict=pass`. A trajectory "
        "without that score matches none of them")
    q: Annotated[
        Text | None,
        Condition(custom=True, metavar="TEXT",
                  cli_help="text in the run's input or output (each of its words must begin a "
                           "word there; see the API's `q`)"),
    ] = Field(default=None, description=_TEXT)


#: how the list may be sorted: name → the column(s) it sorts by (paired with trace_id)
TRAJECTORY_SORTS = {
    "start_time": "start_ns",
    "duration": "duration_ms",
    "tokens": "(input_tokens + output_tokens)",
    "steps": "step_count",
}
#: and `score:<name>`: by the latest whole-run score of that name (a number, or a boolean as 1
#: or 0); the list then holds only the trajectories that have one, so that the keyset cursor
#: (score, trace id) orders every row it pages over (storage/trajectory_reads.py)
SCORE_SORT = "score:<name>"
SORT_PATTERN = ("^(" + "|".join(TRAJECTORY_SORTS)
                + r"|score:[A-Za-z0-9][A-Za-z0-9_.:/-]{0,99})$")
