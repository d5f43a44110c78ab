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
from typing import Any, Literal

from trajhub.records import Cli, Field, Record
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

SCORE = Record("Score", "A score of a trajectory, or of one step of it.", (
    Field("trace_id", str, "the trajectory it scores", written_by="key", example=TRACE_ID),
    Field("id", int, "the score's id (for deleting it)", written_by="database", example=17,
          cli=Cli("ID", right=True)),
    Field("step_id", str | None, "the step it scores (the step's `id` in the trajectory "
          "document, its span id); null for the whole trajectory", example=None,
          cli=Cli("STEP")),
    Field("name", str, "what it measures", example="correctness", cli=Cli("NAME")),
    Field("value", bool | float | str | None, "a number, a boolean or a category; null only "
          "when `error` says why the evaluator gave none", column=None, select=_VALUE_SQL,
          convert="score_value", written_by="", example=0.75, cli=Cli("VALUE", "value")),
    Field("data_type", Literal["number", "boolean", "category"] | None,
          "the value's type; null when there is no value", column="value_type",
          example="number"),
    Field("number_value", float | None, served=False),
    Field("category_value", str | None, served=False),
    Field("comment", str | None, "why, in words", example="the answer names the right city",
          cli=Cli("COMMENT", "clip", order=2)),
    Field("source", Literal["evaluator", "api", "human"], "who gave it: an evaluator "
          "(`evaluator` names it, with its config), a client through the API, or a person",
          example="api", cli=Cli("SOURCE")),
    Field("evaluator", str | None, "the evaluator's name (source `evaluator`)", example=None,
          cli=Cli("EVALUATOR")),
    Field("evaluator_config", dict[str, Any] | None, "the evaluator's config (source "
          "`evaluator`)", select="evaluator_config::text", convert="json", stored_type=str,
          example=None),
    Field("evaluation_id", int | None, "the dataset evaluation run that gave it, if one did",
          example=None),
    Field("author", str | None, "the name of the API key that created it (its id when the "
          "key has no name); the given `author` when the server runs without keys",
          example="alice", cli=Cli("AUTHOR")),
    Field("error", str | None, "why the evaluator could not score (then `value` is null)",
          example=None),
    # the insert reads it from the trajectory (storage/scores.py)
    Field("revision", int, "the trajectory's revision when it was scored",
          written_by="database", example=2,
          cli=Cli("REV", right=True)),
    Field("created_time", str, "RFC 3339: when it was created", column="created_ns",
          stored_type=int, convert="time", written_by="database",
          example="2026-11-22T10:05:00Z", cli=Cli("CREATED", "when", order=1)),
))


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


#: what `parse_score_condition` takes, as /openapi.json declares it (a number of at most 20
#: digits and a 2-digit exponent: no text it matches overflows to infinity)
SCORE_CONDITION_PATTERN = (r"^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,99}"
                           r"((>=|<=)[+-]?([0-9]{1,20}(\.[0-9]{0,20})?|\.[0-9]{1,20})"
                           r"([eE][+-]?[0-9]{1,2})?|!?=.+)$")

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
SCORE_CONFIG = Record("ScoreConfig", "What a project's scores of one name must be.", (
    Field("name", str, "the score's name", written_by="key", example="correctness",
          cli=Cli("NAME")),
    Field("data_type", Literal["number", "boolean", "category"], "the value's type",
          example="number", cli=Cli("TYPE")),
    Field("min", float | None, "the least number allowed (number only)", column="min_value",
          example=0.0, cli=Cli("MIN", "value", right=True)),
    Field("max", float | None, "the greatest number allowed (number only)",
          column="max_value", example=1.0, cli=Cli("MAX", "value", right=True)),
    Field("categories", list[str] | None, "the categories allowed (category only)",
          example=None, cli=Cli("CATEGORIES")),
    Field("description", str, "what it measures, for people", example="the answer is right",
          cli=Cli("DESCRIPTION", "clip")),
))


def outside_config(data_type: str | None, value: Any, config: Any) -> str | None:
    """Why a value does not fit a score config (a mapping of SCORE_CONFIG's fields), or None
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
