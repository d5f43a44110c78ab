"""A score (a row of `GET /api/v1/trajectories/{id}/scores`, of the `scores` table, and of
`trajhub scores list`), declared once (`trajhub.records`), and the score condition of the
trajectory list's `score` filter and `score:<name>` sort.

A score judges one trajectory, or one step of it (by step id: the step's span id, which a
re-derivation keeps, so a step's scores stay on that step in every revision). Its value is a
number, a boolean or a category (a string). Who made it is its `source`: `evaluator` (an
evaluator, named with its config: a dataset evaluation writes one per verdict, and an online
rule will too), `api` (a client), or `human` (a reviewer; the author is the key's name).

Stored values: `value_type` says which of the value columns holds the value: `number_value` for
a number (a boolean is stored there too, as 1 or 0, so one column sorts and compares them), and
`category_value` for a category. A score an evaluator could not give has no value and an
`error` instead.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field

from trajhub.records import Cli, Example, Record, Stored, StoredOnly, computed, json_column
from trajhub.records.times import CreatedTime
from trajhub.records.trajectories import TRACE_ID

#: what a score name may be: letters, digits and `_.:/-`, starting with a letter or digit, so
#: that `score=<name><op><value>` reads unambiguously
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:/-]*$"
NAME_MAX = 100
#: a category's, comment's and error's longest text
CATEGORY_MAX = 200
COMMENT_MAX = 10_000
SOURCES = ("evaluator", "api", "human")
DATA_TYPES = ("number", "boolean", "category")

# the served value, from the stored columns, as JSON text (the API reads it back with its
# "score_value" converter, numbers as floats)
_VALUE_SQL = ("(CASE value_type WHEN 'number' THEN to_jsonb(number_value) "
              "WHEN 'boolean' THEN to_jsonb(number_value <> 0) "
              "WHEN 'category' THEN to_jsonb(category_value) END)::text")


class Score(Record):
    """A score of a trajectory, or of one step of it."""

    stored_only = (
        StoredOnly("number_value", float | None),
        StoredOnly("category_value", str | None),
    )

    trace_id: Annotated[str, Stored(written_by="key"), Example(TRACE_ID)] = Field(
        description="the trajectory it scores")
    id: Annotated[int, Stored(written_by="database"), Cli("ID", right=True), Example(17)] = Field(
        default=0, description="the score's id (for deleting it)")
    step_id: Annotated[str | None, Cli("STEP")] = Field(
        default=None, description="the step it scores (the step's `id` in the trajectory "
        "document, its span id); null for the whole trajectory")
    name: Annotated[str, Cli("NAME"), Example("correctness")] = Field(
        default="", description="what it measures")
    value: Annotated[
        bool | float | str | None,
        computed(_VALUE_SQL, "score_value"),
        Cli("VALUE", "value"),
        Example(0.75),
    ] = Field(default=None, description="a number, a boolean or a category; null only when "
              "`error` says why the evaluator gave none")
    data_type: Annotated[
        Literal["number", "boolean", "category"] | None,
        Stored(column="value_type"),
        Example("number"),
    ] = Field(default=None, description="the value's type; null when there is no value")
    comment: Annotated[
        str | None,
        Cli("COMMENT", "clip", order=2),
        Example("the answer names the right city"),
    ] = Field(default=None, description="why, in words")
    source: Annotated[Literal["evaluator", "api", "human"], Cli("SOURCE"), Example("api")] = Field(
        default="evaluator", description="who gave it: an evaluator (`evaluator` names it, with "
        "its config), a client through the API, or a person")
    evaluator: Annotated[str | None, Cli("EVALUATOR")] = Field(
        default=None, description="the evaluator's name (source `evaluator`)")
    evaluator_config: Annotated[dict[str, Any] | None, json_column("evaluator_config")] = Field(
        default=None, description="the evaluator's config (source `evaluator`)")
    evaluation_id: int | None = Field(default=None, description="the dataset evaluation that "
                                      "gave it, if one did")
    rule_id: int | None = Field(default=None, description="the online evaluation rule that gave "
                                "it, if one did (docs/rules.md)")
    author: Annotated[str | None, Cli("AUTHOR"), Example("alice")] = Field(
        default=None, description="the name of the API key that created it (its id when the key "
        "has no name); the given `author` when the server runs without keys")
    error: str | None = Field(default=None, description="why the evaluator could not score (then "
                              "`value` is null)")
    # the insert reads it from the trajectory (storage/scores.py)
    revision: Annotated[
        int,
        Stored(written_by="database"),
        Cli("REV", right=True),
        Example(2),
    ] = Field(default=0, description="the trajectory's revision when it was scored")
    created_time: Annotated[
        CreatedTime,
        Cli("CREATED", "when", order=1),
        Example("2026-11-22T10:05:00Z"),
    ] = Field(default="", description="RFC 3339: when it was created")


# ------------------------------------------------------------------- the trajectory list's filter


@dataclass(frozen=True)


class ScoreCondition:
    """`score=<name><op><value>` of the trajectory list: the trajectory's latest whole-run
    score of that name compares so. `>=` and `<=` take a number (numbers compare); `=` and `!=`
    match a number (when the value reads as one), a boolean (`true`, `false`), or a category
    (the text as written)."""

    name: str
    op: Literal[">=", "<=", "=", "!="]
    text: str
    number: float | None
    boolean: bool | None


#: what `parse_score_condition` takes is SCORE_CONDITION_PATTERN (trajhub.records.query_types)
_CONDITION = re.compile(r"([A-Za-z0-9][A-Za-z0-9_.:/-]*)(>=|<=|!=|=)(.*)", re.DOTALL)


def number_of(text: str) -> float | None:
    """The finite number `text` spells, else None."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def parse_score_condition(raw: str) -> ScoreCondition:
    """ValueError saying what is wrong with a `score` filter."""
    match = _CONDITION.fullmatch(raw)
    if match is None:
        raise ValueError(f"score must read <name><op><value> with op one of >=, <=, =, != "
                         f"(e.g. correctness>=0.5), got {raw[:80]!r}")
    name, op, text = match.groups()
    if len(name) > NAME_MAX:
        raise ValueError(f"score: the name is over {NAME_MAX} characters")
    if not text:
        raise ValueError(f"score: no value after {op!r} in {raw[:80]!r}")
    number = number_of(text)
    if op in (">=", "<=") and number is None:
        raise ValueError(f"score: {op} compares numbers, and {text[:80]!r} is not one")
    boolean = {"true": True, "false": False}.get(text)
    return ScoreCondition(name, op, text, number, boolean)  # type: ignore[arg-type]


SCORE_SORT_PREFIX = "score:"


def score_sort_name(sort: str) -> str | None:
    """The score name of a `score:<name>` sort, else None."""
    return sort[len(SCORE_SORT_PREFIX):] if sort.startswith(SCORE_SORT_PREFIX) else None


# ----------------------------------------------------------------------------- score configs


#: a score config (a row of `GET /api/v1/score-configs`, of the `score_configs` table): the
#: type, range or categories a project's score of that name must have. A score of a name with
#: no config is not checked.
class ScoreConfig(Record):
    """What a project's scores of one name must be."""

    name: Annotated[str, Stored(written_by="key"), Cli("NAME"), Example("correctness")] = Field(
        description="the score's name")
    data_type: Annotated[
        Literal["number", "boolean", "category"],
        Cli("TYPE"),
        Example("number"),
    ] = Field(default="number", description="the value's type")
    min: Annotated[
        float | None,
        Stored(column="min_value"),
        Cli("MIN", "value", right=True),
        Example(0.0),
    ] = Field(default=None, description="the least number allowed (number only)")
    max: Annotated[
        float | None,
        Stored(column="max_value"),
        Cli("MAX", "value", right=True),
        Example(1.0),
    ] = Field(default=None, description="the greatest number allowed (number only)")
    categories: Annotated[list[str] | None, Cli("CATEGORIES")] = Field(
        default=None, description="the categories allowed (category only)")
    description: Annotated[str, Cli("DESCRIPTION", "clip"), Example("the answer is right")] = Field(
        default="", description="what it measures, for people")


def outside_config(data_type: str | None, value: Any, config: Any) -> str | None:
    """Why a value does not fit a score config (a mapping of ScoreConfig's fields), or None
    when it does."""
    expected = config["data_type"]
    if data_type != expected:
        return f"its config takes a {expected}, and {value!r} is a {data_type}"
    if expected == "number":
        low, high = config["min"], config["max"]
        if (low is not None and value < low) or (high is not None and value > high):
            bounds = (f"{low} to {high}" if low is not None and high is not None
                      else f"at least {low}" if low is not None else f"at most {high}")
            return f"{value!r} is outside its config's range ({bounds})"
    if expected == "category" and config["categories"] is not None \
            and value not in config["categories"]:
        return (f"{value!r} is not one of its config's categories "
                f"({', '.join(config['categories'])})")
    return None
