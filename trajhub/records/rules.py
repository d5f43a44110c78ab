"""An online evaluation rule (a row of `GET /api/v1/rules`, of the `rules` table, and of
`trajhub rules list`) and a rule's backfill job, declared once (`trajhub.records`).

A rule belongs to a project: an evaluator with its config (any of trajhub's evaluators, the LLM
judges included, named and configured as a dataset evaluation names them), a trajectory filter
in the trajectory list's syntax (TRAJECTORY_FILTER's parameters, by name), a sample rate and an
on/off switch. Each enabled rule runs on every trajectory of its project that becomes final,
matches its filter and falls in its sample; its verdict is a score (source `evaluator`, with the
rule's id in `rule_id`). docs/rules.md says how the runs are queued.
"""

from __future__ import annotations

from typing import Any, Literal

from trajhub.records import Cli, Field, Record

#: what a rule's name may be (as a score name: trajhub.records.scores.NAME_PATTERN)
NAME_MAX = 100

RULE = Record("Rule", "An online evaluation rule: an evaluator run on every new final "
              "trajectory of the project that matches a filter.", (
    Field("id", int, "the rule's id", written_by="database", example=3,
          cli=Cli("ID", right=True)),
    Field("name", str, "the rule's name, unique in its project; its scores are named after "
          "the evaluator", example="efficiency-prod", cli=Cli("NAME")),
    Field("evaluator", str, "the evaluator: one of the names `POST /api/v1/evaluations` "
          "takes, the LLM judges included", example="efficiency", cli=Cli("EVALUATOR")),
    Field("config", dict[str, Any], "the evaluator's config (as a dataset evaluation takes "
          "it)", select="config::text", convert="json", stored_type=str,
          example={"max_steps": 10}),
    Field("expectations", dict[str, Any] | None, "what the trajectory should have done, as an "
          "evaluation item's expectations (for evaluators that compare against them); null "
          "for none", select="expectations::text", convert="json", stored_type=str,
          example=None),
    Field("filter", dict[str, Any], "the trajectories it runs on: the trajectory list's "
          "filters (`GET /api/v1/trajectories` query parameters) by name, e.g. "
          "{\"agent\": \"planner\", \"has_error\": false}; {} for all",
          select="filter::text", convert="json", stored_type=str,
          example={"service": "weather-agent"}, cli=Cli("FILTER", "clip", order=2)),
    Field("sample_rate", float, "the share of matching trajectories it runs on, 0 to 1 "
          "(chosen by trace id, so a new revision of a sampled trajectory is sampled too)",
          example=1.0, cli=Cli("SAMPLE", "value", right=True)),
    Field("enabled", bool, "on: it runs on new final trajectories", example=True,
          cli=Cli("ON", "yes")),
    Field("max_judge_calls_per_minute", int | None, "LLM judges: at most this many judge "
          "calls a minute for this rule (runs beyond wait); null for no cap", example=None),
    Field("review_queue", str | None, "the annotation queue (docs/review.md) its failures go "
          "to: a trajectory whose score from this rule is an error or below `fail_below`; null "
          "for none", example="triage"),
    Field("fail_below", float, "a score below this is a failure (for `review_queue`); 1.0: "
          "anything short of a full score", example=1.0),
    Field("created_time", str, "RFC 3339: when it was created", column="created_ns",
          stored_type=int, convert="time", written_by="database",
          example="2026-11-22T10:00:00Z"),
    Field("updated_time", str, "RFC 3339: when it was last changed", column="updated_ns",
          stored_type=int, convert="time", written_by="database",
          example="2026-11-22T10:00:00Z"),
    Field("pending_runs", int, "runs queued and not yet done", column=None,
          select="(SELECT count(*) FROM rule_runs q WHERE q.rule_id = rules.id)",
          written_by="", example=0, cli=Cli("PENDING", right=True)),
))

BACKFILL = Record("RuleBackfill", "A rule run over the existing trajectories matching its "
                  "filter: how far it is.", (
    Field("rule_id", int, "the rule", written_by="key", example=3),
    Field("id", int, "the backfill's id", written_by="database", example=5,
          cli=Cli("ID", right=True)),
    Field("status", Literal["running", "done"], "running until every queued run is done",
          column=None, select="(CASE WHEN done_count >= total_count THEN 'done' "
          "ELSE 'running' END)", written_by="", example="running", cli=Cli("STATUS")),
    Field("total", int, "the trajectories queued (matching the filter and in the sample)",
          column="total_count", example=120, cli=Cli("TOTAL", right=True)),
    Field("done", int, "the runs finished so far (scored, errored or skipped)",
          column="done_count", written_by="database", example=40,
          cli=Cli("DONE", right=True)),
    Field("created_time", str, "RFC 3339: when it was started", column="created_ns",
          stored_type=int, convert="time", written_by="database",
          example="2026-11-22T10:00:00Z"),
))

#: why a rule's run ends without a score (never an error score: nothing was judged)
SKIP_REASONS = ("no-match", "superseded", "gone")
