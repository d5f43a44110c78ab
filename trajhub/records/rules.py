"""An online evaluation rule (a row of `GET /api/v1/rules`, of the `rules` table, and of
`trajhub rules list`) and a rule's backfill job, declared once (`trajhub.records`).

A rule belongs to a project: an evaluator with its config (any of trajhub's evaluators, the LLM
judges included, named and configured as a dataset evaluation names them), a trajectory filter
in the trajectory list's syntax (TrajectoryQuery's parameters, by name), a sample rate and an
on/off switch. Each enabled rule runs on every trajectory of its project that becomes final,
matches its filter and falls in its sample; its verdict is a score (source `evaluator`, with the
rule's id in `rule_id`). docs/rules.md says how the runs are queued.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from trajhub.records import Cli, Example, Record, Stored, computed, json_column
from trajhub.records.times import Created, Updated

#: what a rule's name may be (as a score name: trajhub.records.scores.NAME_PATTERN)
NAME_MAX = 100


class Rule(Record):
    """An online evaluation rule: an evaluator run on every new final trajectory of the project
    that matches a filter."""

    id: Annotated[int, Stored(written_by="database"), Cli("ID", right=True), Example(3)] = Field(
        default=0, description="the rule's id")
    name: Annotated[str, Cli("NAME"), Example("efficiency-prod")] = Field(
        default="", description="the rule's name, unique in its project; its scores are named "
        "after the evaluator")
    evaluator: Annotated[str, Cli("EVALUATOR"), Example("efficiency")] = Field(
        default="", description="the evaluator: one of the names `POST /api/v1/evaluations` "
        "takes, the LLM judges included")
    config: Annotated[
        dict[str, Any],
        json_column("config"),
        Example({"max_steps": 10}),
    ] = Field(default_factory=dict, description="the evaluator's config (as a dataset evaluation "
              "takes it)")
    expectations: Annotated[dict[str, Any] | None, json_column("expectations")] = Field(
        default=None, description="what the trajectory should have done, as an evaluation "
        "item's expectations (for evaluators that compare against them); null for none")
    filter: Annotated[
        dict[str, Any],
        json_column("filter"),
        Cli("FILTER", "clip", order=2),
        Example({"service": "weather-agent"}),
    ] = Field(default_factory=dict, description="the trajectories it runs on: the trajectory "
              "list's filters (`GET /api/v1/trajectories` query parameters) by name, e.g. "
              "{\"agent\": \"planner\", \"has_error\": false}; {} for all")
    sample_rate: Annotated[float, Cli("SAMPLE", "value", right=True), Example(1.0)] = Field(
        default=0.0, description="the share of matching trajectories it runs on, 0 to 1 (chosen "
        "by trace id, so a new revision of a sampled trajectory is sampled too)")
    enabled: Annotated[bool, Cli("ON", "yes"), Example(True)] = Field(
        default=False, description="on: it runs on new final trajectories")
    max_judge_calls_per_minute: int | None = Field(
        default=None, description="LLM judges: at most this many judge calls a minute for this "
        "rule (runs beyond wait); null for no cap")
    review_queue: Annotated[str | None, Example("triage")] = Field(
        default=None, description="the review queue (docs/review.md) its failures go to: a "
        "trajectory whose score from this rule is an error or below `fail_below`; null for none")
    fail_below: Annotated[float, Example(1.0)] = Field(
        default=0.0, description="a score below this is a failure (for `review_queue`); 1.0: "
        "anything short of a full score")
    created_time: Created = Field(default="", description="RFC 3339: when it was created")
    updated_time: Updated = Field(default="", description="RFC 3339: when it was last changed")
    pending_runs: Annotated[
        int,
        computed("(SELECT count(*) FROM rule_runs q WHERE q.rule_id = rules.id)"),
        Cli("PENDING", right=True),
        Example(0),
    ] = Field(default=0, description="runs queued and not yet done")


class RuleBackfill(Record):
    """A rule run over the existing trajectories matching its filter: how far it is."""

    rule_id: Annotated[int, Stored(written_by="key"), Example(3)] = Field(
        description="the rule")
    id: Annotated[int, Stored(written_by="database"), Cli("ID", right=True), Example(5)] = Field(
        default=0, description="the backfill's id")
    status: Annotated[
        Literal["running", "done"],
        computed("(CASE WHEN done_count >= total_count THEN 'done' ELSE 'running' END)"),
        Cli("STATUS"),
        Example("running"),
    ] = Field(default="running", description="running until every queued run is done")
    total: Annotated[
        int,
        Stored(column="total_count"),
        Cli("TOTAL", right=True),
        Example(120),
    ] = Field(default=0, description="the trajectories queued (matching the filter and in the "
              "sample)")
    done: Annotated[
        int,
        Stored(column="done_count", written_by="database"),
        Cli("DONE", right=True),
        Example(40),
    ] = Field(default=0, description="the runs finished so far (scored, errored or skipped)")
    created_time: Created = Field(default="", description="RFC 3339: when it was started")


#: why a rule's run ends without a score (never an error score: nothing was judged)
SKIP_REASONS = ("no-match", "superseded", "gone")
