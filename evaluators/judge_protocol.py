"""What every LLM judge shares: its per-datasettings, the OpenAI-compatible request, the
strict reading of the answer, and the rendering of a trajectory for a prompt.

Pure: the service sends the request and hands the response body back. A judge answer that is not
exactly the JSON verdict asked for is a JudgeResponseError — a failed evaluation, never a pass,
or a broken judge would quietly approve everything.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Self
from urllib.parse import urlsplit

from trajhub.evaluators._config import ConfigError, config_from_mapping, require_type
from trajhub.evaluators.trajectory_view import TrajectoryView
from trajhub.normalizers.trajectory import Step

#: A per-evaluation API key comes from an environment variable of the server whose name starts
#: with this, so an evaluation request can only select among keys the operator set up for
#: judges, never have the server send some other secret (its database URL, say) to an endpoint
#: the request chose.
API_KEY_ENV_PREFIX = "TRAJHUB_JUDGE_KEY_"
_ENV_NAME = re.compile(r"[A-Z0-9_]+")
#: options every judge takes, besides its own
SETTINGS_OPTIONS = ("model", "temperature", "endpoint", "api_key_env")
#: characters of one payload shown to the judge; a long tool result must not crowd out the rest
PAYLOAD_LIMIT = 2000


class JudgeResponseError(ValueError):
    """The judge's answer cannot be trusted as a verdict."""


@dataclass(frozen=True)
class JudgeSettings:
    """Where and how to ask, per evaluation. None = the server's setting (TRAJHUB_JUDGE_URL,
    TRAJHUB_JUDGE_MODEL; its TRAJHUB_JUDGE_API_KEY goes to its own URL only)."""

    model: str | None = None
    temperature: float = 0.0
    #: an OpenAI-compatible base URL (".../v1") or the full ".../chat/completions" URL
    endpoint: str | None = None
    #: the name of the server's environment variable holding the key (never the key itself)
    api_key_env: str | None = None

    def check(self, evaluator: str) -> None:
        if self.model is not None:
            require_type(evaluator, "model", self.model, str)
            if not self.model:
                raise ConfigError(f"{evaluator}: option 'model' must be a non-empty string")
        require_type(evaluator, "temperature", self.temperature, int, float)
        if not 0 <= self.temperature <= 2:
            raise ConfigError(f"{evaluator}: option 'temperature' must be within [0, 2]")
        if self.endpoint is not None:
            require_type(evaluator, "endpoint", self.endpoint, str)
            url = urlsplit(self.endpoint)
            if url.scheme not in ("http", "https") or not url.netloc:
                raise ConfigError(f"{evaluator}: option 'endpoint' must be an http(s) URL")
        if self.api_key_env is not None:
            require_type(evaluator, "api_key_env", self.api_key_env, str)
            if not (
                self.api_key_env.startswith(API_KEY_ENV_PREFIX)
                and len(self.api_key_env) > len(API_KEY_ENV_PREFIX)
                and _ENV_NAME.fullmatch(self.api_key_env)
            ):
                raise ConfigError(
                    f"{evaluator}: option 'api_key_env' must name an environment variable"
                    f" {API_KEY_ENV_PREFIX}<NAME> (upper case, digits, _)"
                )


@dataclass(frozen=True)
class JudgeOptions(JudgeSettings):
    """The options every LLM judge's config starts with: where and how to ask. A judge's config
    subclasses it, names itself in `EVALUATOR`, and adds its own options."""

    EVALUATOR: ClassVar[str] = ""

    def __post_init__(self) -> None:
        self.check(self.EVALUATOR)

    @property
    def settings(self) -> JudgeSettings:
        return JudgeSettings(self.model, self.temperature, self.endpoint, self.api_key_env)

    @classmethod
    def from_dict(cls, options: Mapping[str, Any] | None) -> Self:
        refuse_raw_key(options, cls.EVALUATOR)
        return config_from_mapping(cls, options, cls.EVALUATOR)


@dataclass(frozen=True)
class JudgeContext:
    """What the item says besides its expectations."""

    input: Any = None
    reference_output: Any = None
    #: the item's reference run (its stored snapshot) when another run is being judged
    reference_trajectory: Mapping[str, Any] | None = None


def refuse_raw_key(options: Mapping[str, Any] | None, evaluator: str) -> None:
    if options and "api_key" in options:
        # it would be stored with the evaluation and shown by the API
        raise ConfigError(
            f"{evaluator}: a raw 'api_key' is not accepted; put the key in the server's"
            f" environment as {API_KEY_ENV_PREFIX}<NAME> and pass 'api_key_env'"
        )


def check_threshold(evaluator: str, value: Any) -> None:
    require_type(evaluator, "threshold", value, int, float)
    if not 0 <= value <= 1:
        raise ConfigError(f"{evaluator}: option 'threshold' must be within [0, 1]")


def chat_request(model: str, temperature: float, system: str, user: str) -> dict[str, Any]:
    """An OpenAI-compatible chat.completions request body asking for one JSON object."""
    return {
        "model": model,
        "temperature": temperature,
        "response_format": {"type": "json_object"},
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": user},
        ],
    }


def verdict_object(body: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """The JSON object a chat.completions response answers with, and the answering model's
    name. JudgeResponseError when the answer is an error, a refusal, truncated, or not one JSON
    object."""
    if not isinstance(body, Mapping):
        raise JudgeResponseError("response body is not an object")
    if body.get("error"):
        raise JudgeResponseError(f"judge returned an error: {body['error']!r}")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices:
        raise JudgeResponseError("response has no choices")
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, Mapping) else None
    if not isinstance(message, Mapping):
        raise JudgeResponseError("first choice has no message")
    if message.get("refusal"):
        raise JudgeResponseError(f"judge refused: {message['refusal']!r}")
    if choice.get("finish_reason") == "length":
        raise JudgeResponseError("judge answer was truncated (finish_reason=length)")
    content = message.get("content")
    if not isinstance(content, str):
        raise JudgeResponseError("message content is not a string")
    try:
        verdict = json.loads(content, parse_constant=_reject_constant)
    except ValueError as err:
        raise JudgeResponseError(f"message content is not JSON: {err}") from None
    if not isinstance(verdict, dict):
        raise JudgeResponseError("verdict is not a JSON object")
    model = body.get("model")
    return verdict, model if isinstance(model, str) else ""


def unit_score(verdict: Mapping[str, Any], key: str = "score") -> float:
    score = verdict.get(key)
    if isinstance(score, bool) or not isinstance(score, int | float):
        raise JudgeResponseError(f"verdict field {key!r} must be a number")
    if not math.isfinite(score) or not 0 <= score <= 1:
        raise JudgeResponseError(f"verdict field {key!r} must be within [0, 1], got {score!r}")
    return float(score)


def text_field(verdict: Mapping[str, Any], key: str) -> str:
    value = verdict.get(key)
    if not isinstance(value, str):
        raise JudgeResponseError(f"verdict field {key!r} must be a string")
    return value


def bool_field(verdict: Mapping[str, Any], key: str, where: str = "verdict") -> bool:
    value = verdict.get(key)
    if not isinstance(value, bool):
        raise JudgeResponseError(f"{where} field {key!r} must be a boolean")
    return value


def _reject_constant(name: str) -> Any:
    # json.loads accepts NaN/Infinity by default; they are not JSON and not a score.
    raise ValueError(f"{name} is not valid JSON")


# --- rendering a trajectory for a prompt -------------------------------------------------------


def render_steps(view: TrajectoryView) -> tuple[str, list[Step]]:
    """The run as numbered lines, one per model, tool and agent step, in execution order, with
    tool arguments, results and errors; and the tool steps in the order they are numbered as
    calls ("call 1", "call 2", …) in the text."""
    lines: list[str] = []
    calls: list[Step] = []
    for number, placed in enumerate(view.placed, 1):
        step = placed.step
        who = f"[{placed.agent.name}] " if placed.agent.name else ""
        if step.type == "tool":
            calls.append(step)
            head = f"{number}. {who}call {len(calls)}: tool {step.name}({clip(step.input)})"
            if step.error is not None:
                lines.append(f"{head} -> ERROR: {clip(step.error.msg) or step.error.code}")
            elif step.output:
                lines.append(f"{head} -> {clip(step.output)}")
            else:
                lines.append(f"{head} -> (no result recorded)")
        elif step.type == "model":
            text = f"{number}. {who}model {step.name} replied: {clip(step.output) or '(empty)'}"
            if step.error is not None:
                text += f" -> ERROR: {clip(step.error.msg)}"
            lines.append(text)
        else:
            lines.append(f"{number}. {who}{step.type} {step.name} ran")
    return "\n".join(lines) if lines else "(the run recorded no steps)", calls


def render_value(value: Any) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def section(title: str, body: str) -> str:
    return f"<{title}>\n{body}\n</{title}>"


def request_section(context: JudgeContext, view: TrajectoryView) -> str:
    """The user's request: the item's input when it gives one, else the run's own input."""
    return section("request", render_value(context.input) if context.input is not None
                   else clip(view.input) or "(not recorded)")


def clip(text: str) -> str:
    text = " ".join(text.split())
    if len(text) <= PAYLOAD_LIMIT:
        return text
    return text[:PAYLOAD_LIMIT] + f"… [{len(text) - PAYLOAD_LIMIT} more characters]"


def names(values: Sequence[str]) -> str:
    return ", ".join(values) if values else "none"
