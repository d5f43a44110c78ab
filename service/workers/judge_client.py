"""Sending a judge's request to an OpenAI-compatible chat.completions endpoint.

The judges' prompts and verdicts are pure (trajhub.evaluators.judges); this is the one place that
talks HTTP to a judge, and the one place that decides which URL, model and key a request uses:

- endpoint and model: the evaluation's own (`endpoint`, `model`), else the server's
  TRAJHUB_JUDGE_URL / TRAJHUB_JUDGE_MODEL;
- key: the server environment variable the evaluation names (`api_key_env`, which must start
  with TRAJHUB_JUDGE_KEY_), else TRAJHUB_JUDGE_API_KEY, but only towards the server's own URL:
  an evaluation that picks another endpoint must not make the server hand its key to it.

Keys stay in memory; an evaluation stores its options, which name a variable, never a key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from trajhub.evaluators import ConfigError, JudgeResponseError, JudgeSettings
from trajhub.service.config import Settings

TIMEOUT_SECONDS = 120.0


@dataclass(frozen=True)
class JudgeConnection:
    url: str
    model: str
    api_key: str | None = field(default=None, repr=False)


def resolve(judge: JudgeSettings, server: Settings, evaluator: str) -> JudgeConnection:
    """Where this evaluation's judge requests go; ConfigError (-> 400) when that is not known."""
    base = judge.endpoint or server.judge_url
    model = judge.model or server.judge_model
    if not base or not model:
        raise ConfigError(
            f"{evaluator} is not configured: give 'endpoint' and 'model' in its config, or start"
            " trajhub with TRAJHUB_JUDGE_URL and TRAJHUB_JUDGE_MODEL"
        )
    api_key: str | None = None
    if judge.api_key_env is not None:
        api_key = os.environ.get(judge.api_key_env)
        if not api_key:
            raise ConfigError(
                f"{evaluator}: option 'api_key_env': the server has no environment variable"
                f" {judge.api_key_env}"
            )
    elif _same_endpoint(base, server.judge_url):
        api_key = server.judge_api_key or None
    return JudgeConnection(_chat_url(base), model, api_key)


def _chat_url(base: str) -> str:
    base = base.rstrip("/")
    return base if base.endswith("/chat/completions") else base + "/chat/completions"


def _same_endpoint(a: str, b: str) -> bool:
    return bool(b) and _chat_url(a) == _chat_url(b)


class JudgeUnavailable(JudgeResponseError):
    """The judge could not be reached, or answered that it cannot serve now (HTTP 429 or 5xx):
    worth trying again later (online rules retry with backoff, docs/rules.md)."""


class JudgeClient:
    """One HTTP client for an evaluation's judge requests."""

    def __init__(self) -> None:
        self._client = httpx.AsyncClient(timeout=TIMEOUT_SECONDS)

    async def complete(self, connection: JudgeConnection, request: Mapping[str, Any]
                       ) -> Mapping[str, Any]:
        """The response body; JudgeResponseError for anything that is not a 200 with JSON."""
        headers = {"Authorization": f"Bearer {connection.api_key}"} if connection.api_key else {}
        try:
            response = await self._client.post(connection.url, json=request, headers=headers)
        except httpx.HTTPError as exc:
            raise JudgeUnavailable(f"judge unreachable: {exc!r}") from None
        if response.status_code == 429 or response.status_code >= 500:
            raise JudgeUnavailable(
                f"judge answered HTTP {response.status_code}: {response.text[:300]}")
        if response.status_code != 200:
            raise JudgeResponseError(
                f"judge answered HTTP {response.status_code}: {response.text[:300]}")
        try:
            body = response.json()
        except ValueError:
            raise JudgeResponseError("judge response is not JSON") from None
        if not isinstance(body, Mapping):
            raise JudgeResponseError("judge response is not a JSON object")
        return body

    async def aclose(self) -> None:
        await self._client.aclose()
