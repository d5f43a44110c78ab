"""The trajectory summary (a row of `GET /api/v1/trajectories`, of the `trajectories` table,
and of `trajhub trajectories list`) and the trajectory filter, declared once
(`trajhub.records`).

Adding a summary field: declare it here (`written_by="summary"`), fill the attribute of that
name in the normalizer's summary (normalizers/builder.py, `DerivedSummary` and `_summarize`),
and add its column in a migration (storage/migrations).
"""

from __future__ import annotations

from typing import Literal

from trajhub.records import Cli, Field, Filter, Param, Record

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"

COST = Record("CostView", "Tokens, each counted once, and money where a price source knows "
              "the models (docs/costs.md).", (
    Field("input_tokens", int, "all input tokens, cache reads and writes included",
          column=None, written_by="", example=130),
    Field("output_tokens", int, "all output tokens, reasoning included", column=None,
          written_by="", example=19),
    Field("cached_input_tokens", int, "the input tokens read from a prompt cache",
          column=None, written_by="", example=0),
    Field("cache_write_tokens", int, "the input tokens written to a prompt cache",
          column=None, written_by="", example=0),
    Field("reasoning_tokens", int, "the output tokens spent on reasoning", column=None,
          written_by="", example=0),
    Field("usd", float | None, "sum over the priced model steps; null when none had a price",
          column=None, written_by="", example=3.09e-05),
    Field("complete", bool, "every model step had a price", column=None, written_by="",
          example=True),
    Field("unpriced_models", list[str], column=None, written_by="", example=[]),
    Field("price_sources", list[str], "the sources that priced these steps, each with the "
          "date of its prices: `genai-prices <version>, data of <date>` or `TRAJHUB_PRICES "
          "<file>, as of <date>`", column=None, written_by="",
          example=["genai-prices 0.2.3, data of 2026-11-10"]),
    Field("currency", str, column=None, written_by="", example="USD"),
    Field("price_table", str, "the price sources configured, the one that wins first",
          column=None, written_by="", example="genai-prices 0.2.3, data of 2026-11-10"),
    Field("prices_as_of", str, "the date of the prices used: the TRAJHUB_PRICES table's "
          "`as_of` when only it priced the steps, else the date of genai-prices' data",
          column=None, written_by="", example="2026-11-10"),
))

_SUMMARY = "summary"

TRAJECTORY_SUMMARY = Record("TrajectorySummary", "A trajectory as the trajectory list shows it.", (
    Field("trace_id", str, written_by="key", example=TRACE_ID, cli=Cli("TRACE ID")),
    Field("status", Literal["open", "final"], "open while spans may still arrive, then final",
          written_by="database", example="final", cli=Cli("STATUS")),
    Field("revision", int, "how many times it was derived", written_by="database", example=1),
    Field("normalizer_version", str, "the normalizer version that derived it", example="1"),
    Field("framework", str, "langgraph, langchain, eino, … (empty when none was recognized)",
          written_by=_SUMMARY, example="langgraph"),
    Field("conventions", list[str], "the conventions its spans were read with",
          written_by=_SUMMARY, example=["openinference"]),
    Field("root_name", str, "the root span's name", written_by=_SUMMARY, example="LangGraph"),
    # Free text (`q`) is all that reads these two: stored cut and lower-cased
    # (storage/derivation_store.py, migration 0018), never served.
    Field("root_input", str, served=False, written_by=_SUMMARY),
    Field("root_output", str, served=False, written_by=_SUMMARY),
    Field("agent_names", list[str], "its agent (and graph) steps' names, in order",
          written_by=_SUMMARY, example=["LangGraph"], cli=Cli("AGENTS", order=1)),
    Field("tool_names", list[str], "the tools it called", written_by=_SUMMARY,
          example=["get_weather"], cli=Cli("TOOLS", order=1)),
    Field("model_names", list[str], "the models it called", written_by=_SUMMARY,
          example=["gpt-4o-mini"]),
    Field("start_time", str, "RFC 3339: when the run's root started", column="start_ns",
          stored_type=int, convert="time", written_by=_SUMMARY, example="2026-11-22T10:00:00Z",
          cli=Cli("START", "when")),
    Field("end_time", str, "RFC 3339: when the run's root ended (start_time + duration_ms)",
          column=None, select="start_ns + duration_ms::bigint * 1000000", convert="time",
          written_by="", example="2026-11-22T10:00:02.103000Z"),
    Field("duration_ms", int, "the root's duration in whole milliseconds",
          written_by=_SUMMARY, example=2103, cli=Cli("DURATION", "duration", right=True)),
    Field("step_count", int, "model and tool steps", written_by=_SUMMARY, example=3,
          cli=Cli("STEPS", right=True)),
    Field("model_step_count", int, written_by=_SUMMARY, example=2),
    Field("tool_step_count", int, written_by=_SUMMARY, example=1),
    Field("input_tokens", int, written_by=_SUMMARY, example=130,
          cli=Cli("TOKENS", "sum", right=True, plus=("output_tokens",))),
    Field("output_tokens", int, written_by=_SUMMARY, example=19),
    Field("failed_model_steps", int, written_by=_SUMMARY, example=0),
    Field("failed_tool_steps", int, written_by=_SUMMARY, example=0),
    Field("has_error", bool, "the root or any step failed", written_by=_SUMMARY,
          example=False, cli=Cli("ERROR", "yes")),
    Field("derivation_error", str | None, "why the trace could not be turned into a "
          "trajectory; null when it was"),
    Field("service", str | None, "the service that ran it", example="weather-agent"),
    Field("session_id", str | None, "session, conversation or thread id, where the "
          "instrumentation recorded one", example="session-demo-1"),
    Field("user_id", str | None, "user id, where the instrumentation recorded one",
          example="user-42"),
    Field("input_preview", str | None, "the start of the run's input (200 characters at most)",
          example="what is the weather in sf"),
    Field("output_preview", str | None, "the start of the run's output",
          example="It is sunny in sf."),
    #: JSON text: token usage per model name (normalizers.playback.model_usage), priced on read
    Field("model_usage", str, served=False, default="{}"),
    Field("cost", COST, "tokens, and money where a price source knows the models "
          "(genai-prices, TRAJHUB_PRICES)", column=None, select="model_usage", convert="cost",
          written_by=""),
))

_TEXT = ("text in the root input or output, ignoring case: the text must occur as written, "
         "and each of its words must begin a word of the input or output (`weath` finds "
         "'weather', `eather` does not). Words are split as PostgreSQL's text search splits "
         "them; only the first 100,000 characters of the input and of the output are "
         "searched. Text without letters or digits is matched by a slow scan.")

TRAJECTORY_FILTER = Filter("TrajectoryQuery", "Filters over trajectory summaries; every one "
                           "given must match.", (
    Param("start", str, "started at or after (RFC 3339 or Unix ns)", "start_ns >= {}",
          convert="time"),
    Param("end", str, "started before (RFC 3339 or Unix ns)", "start_ns < {}", convert="time"),
    # case-insensitive array containment, so the GIN indexes over the lower-cased names serve
    # these (migration 0008)
    Param("agent", str, "has an agent (or graph) step of this name (case-insensitive)",
          "trajhub_lower_all(agent_names) @> ARRAY[lower({})]"),
    Param("tool", str, "called this tool (case-insensitive)",
          "trajhub_lower_all(tool_names) @> ARRAY[lower({})]"),
    Param("model", str, "called this model (case-insensitive)",
          "trajhub_lower_all(model_names) @> ARRAY[lower({})]"),
    Param("framework", str, "langgraph, langchain, eino, …", "framework = {}"),
    Param("service", str, "the service (resource `service.name`, or Coze Loop's service "
          "name) of the run", "service = {}"),
    Param("session_id", str, "the session (conversation, thread) id the instrumentation "
          "recorded", "session_id = {}"),
    Param("user_id", str, "the user id the instrumentation recorded", "user_id = {}"),
    Param("status", Literal["open", "final"], "open (spans may still arrive) or final",
          custom=True),
    Param("failed_tool_steps", bool, "has (true) or lacks (false) failed tool steps",
          "failed_tool_steps > 0", "failed_tool_steps = 0", metavar="true|false"),
    Param("failed_model_steps", bool, "has (true) or lacks (false) failed model steps",
          "failed_model_steps > 0", "failed_model_steps = 0", metavar="true|false"),
    Param("has_error", bool, "the root or any step failed (true) or none did (false)",
          "has_error", "NOT has_error", metavar="true|false"),
    # the web UI hides runs without steps by default (README "Web UI")
    Param("has_steps", bool, "has at least one step (true) or none (false): an "
          "instrumentation's side traces, such as Traceloop's `create_agent`, have none",
          "step_count > 0", "step_count = 0", metavar="true|false"),
    Param("min_tokens", int, "at least this many input + output tokens",
          "input_tokens + output_tokens >= {}"),
    Param("max_tokens", int, "at most this many input + output tokens",
          "input_tokens + output_tokens <= {}"),
    Param("min_duration_ms", int, "lasted at least this many milliseconds",
          "duration_ms >= {}"),
    Param("max_duration_ms", int, "lasted at most this many milliseconds",
          "duration_ms <= {}"),
    # parsed by the API (trajhub.records.scores: parse_score_condition), a 400 when it does
    # not read; its condition is storage's (storage/trajectory_reads.py)
    Param("score", str, "its latest whole-run score of a name compares so: "
          "`<name><op><value>`, op one of >=, <= (numbers), =, != (a number, true/false, or "
          "a category as written); e.g. `correctness>=0.5`, `verdict=pass`. A trajectory "
          "without that score matches none of them", custom=True, convert="score",
          metavar="NAME<OP>VALUE"),
    Param("q", str, _TEXT, custom=True, metavar="TEXT",
          cli_help="text in the run's input or output (each of its words must begin a word "
                   "there; see the API's `q`)"),
))

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
