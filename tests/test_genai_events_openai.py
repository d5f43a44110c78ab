"""The official OTel GenAI instrumentations of the `openai` client, live: content sent as OTLP
log events gives the trajectory that content on the spans gives, and it is what the client sent
and the model answered.

tests/genai_openai_client.py runs one scripted weather conversation (a tool call, the tool's
result, the answer; plain and streaming, one trace each) on the official `openai` client against
tests/fake_openai.py, in a process of its own per instrumentation and content mode, exporting
traces and logs to the test server over OTLP/HTTP or OTLP/gRPC:

- opentelemetry-instrumentation-genai-openai 1.3b0 (opentelemetry-util-genai 1.3b0) with
  `SPAN_ONLY` (the baseline), `EVENT_ONLY` and `SPAN_AND_EVENT`;
- opentelemetry-instrumentation-openai-v2 2.4b0 with `SPAN_ONLY` (the baseline) and
  `EVENT_ONLY` in the current conventions, and with its older ones
  (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true, no stability opt-in): events
  `gen_ai.{system,user,assistant,tool}.message` and `gen_ai.choice` with their content in the
  record's body. It runs in a venv of its own (`.venv-openai-v2`, pyproject.toml's `openai-v2`
  extra, which the first run makes with uv; README.md "Tests"), on opentelemetry-util-genai
  0.4b0: openai-v2 imports util-genai APIs that 1.2b0 removed, genai-openai needs 1.3b0, and
  from 1.0b0 util-genai always answers that the current conventions are on.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests import fake_openai
from tests.genai_events_support import documents, lines, view
from tests.genai_openai_client import AGENT
from tests.harness import ServerProcess

REPO = Path(__file__).parent.parent
#: the interpreter each instrumentation runs on (openai-v2's venv: see above)
PYTHON = {"genai_openai": Path(sys.executable),
          "openai_v2": REPO / ".venv-openai-v2" / "bin" / "python"}
#: (instrumentation, content mode, transport) of each run; the first of each instrumentation is
#: its span-only baseline
CONFIGS = [("genai_openai", "SPAN_ONLY", "http"), ("genai_openai", "EVENT_ONLY", "http"),
           ("genai_openai", "EVENT_ONLY", "grpc"), ("genai_openai", "SPAN_AND_EVENT", "grpc"),
           ("openai_v2", "SPAN_ONLY", "grpc"), ("openai_v2", "EVENT_ONLY", "http"),
           ("openai_v2", "EVENT_ONLY", "grpc"), ("openai_v2", "true", "http"),
           ("openai_v2", "true", "grpc")]
BASELINE = {"genai_openai": CONFIGS[0], "openai_v2": CONFIGS[4]}
EVENT_CONFIGS = [c for c in CONFIGS if c not in BASELINE.values()]
#: openai-v2's older conventions send an assistant message that calls tools without its text
#: (its `message_to_event` keeps only the tool calls), so their payloads can hold less than the
#: span-only baseline's; `test_model_steps_hold_what_was_sent_and_answered` states that loss
LOSSY = [c for c in EVENT_CONFIGS if c[1] == "true"]
KINDS = ("plain", "stream")
Config = tuple[str, str, str]


def make_openai_v2_venv() -> None:
    """Make `.venv-openai-v2` with pyproject.toml's `openai-v2` extra, unless it is there with
    those pins: built aside and renamed into place, so a run that stops half-way leaves none
    behind."""
    venv = PYTHON["openai_v2"].parent.parent
    pins = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["openai-v2"]
    made_with = venv / "trajhub-pins.json"
    if made_with.exists() and json.loads(made_with.read_text()) == pins:
        return
    shutil.rmtree(venv, ignore_errors=True)
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    assert uv, "uv is installed with the test extra (README.md, \"Tests\")"
    aside = Path(tempfile.mkdtemp(prefix=".venv-openai-v2.", dir=REPO))
    try:
        for cmd in ([uv, "venv", "-q", "--python", sys.executable, str(aside)],
                    [uv, "pip", "install", "-q", "--python", str(aside / "bin" / "python"),
                     *pins]):
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, done.stderr
        (aside / made_with.name).write_text(json.dumps(pins))
        os.rename(aside, venv)
    finally:
        shutil.rmtree(aside, ignore_errors=True)


@pytest.fixture(scope="module")
def runs(server: ServerProcess) -> tuple[dict[tuple[Config, str], dict[str, Any]],
                                         list[dict[str, Any]]]:
    """(config, "plain" | "stream") → the trajectory document of that conversation, and every
    request the fake model received."""
    make_openai_v2_venv()
    fake = fake_openai.FakeOpenAI()
    wanted: dict[tuple[Config, str], tuple[str, str]] = {}
    try:
        for config in CONFIGS:
            instr, content, transport = config
            project = "oa-" + uuid.uuid4().hex[:12]
            done = subprocess.run(
                [str(PYTHON[instr]), "-m", "tests.genai_openai_client", "--instr", instr,
                 "--content", content, "--transport", transport, "--http", server.http,
                 "--grpc", server.grpc, "--project", project, "--openai", fake.url],
                cwd=REPO, capture_output=True, text=True, timeout=120)
            assert done.returncode == 0, done.stderr
            for kind, trace_id in json.loads(done.stdout.splitlines()[-1]).items():
                wanted[config, kind] = (project, trace_id)
    finally:
        fake.close()
    docs = documents(server.http, {f"{c}/{k}": v for (c, k), v in wanted.items()})
    return {key: docs[f"{key[0]}/{key[1]}"] for key in wanted}, fake.requests


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("config", [c for c in EVENT_CONFIGS if c not in LOSSY], ids="-".join)
def test_event_mode_gives_the_span_only_trajectory(runs: Any, config: Config,
                                                   kind: str) -> None:
    docs, _ = runs
    _ran(docs, config, kind)
    assert lines(view(docs[config, kind])) == lines(view(docs[BASELINE[config[0]], kind]))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("config", EVENT_CONFIGS, ids="-".join)
def test_event_mode_gives_the_span_only_steps(runs: Any, config: Config, kind: str) -> None:
    """Everything but the payloads, which no content mode moves off the spans."""
    docs, _ = runs
    _ran(docs, config, kind)
    assert lines(view(docs[config, kind], model_payloads=False, other_payloads=False)) == lines(
        view(docs[BASELINE[config[0]], kind], model_payloads=False, other_payloads=False))


def _ran(docs: dict[tuple[Config, str], Any], config: Config, kind: str) -> None:
    assert (config, kind) in docs, f"{config} sent no {kind} conversation"


def _canonical(message: dict[str, Any], tools: dict[str, str], lossy: bool = False
               ) -> dict[str, Any]:
    """An OpenAI chat message in trajhub's canonical form (docs/trajectory-rules.md §8): a tool
    result is named after the tool its call id called (`tools`: call id → tool name). `lossy`:
    as openai-v2's older events send it, an assistant message that calls tools has no text."""
    out: dict[str, Any] = {"role": message["role"]}
    if lossy and message.get("tool_calls"):
        out["content"] = ""  # a message's content is always there (§8), empty here
    elif message.get("content"):
        out["content"] = message["content"]
    if message.get("tool_calls"):
        out["tool_calls"] = [{"id": c["id"], "name": c["function"]["name"],
                              "arguments": json.loads(c["function"]["arguments"])}
                             for c in message["tool_calls"]]
    if message.get("tool_call_id"):
        out["tool_call_id"] = message["tool_call_id"]
        out["name"] = tools[message["tool_call_id"]]
    return out


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("config", CONFIGS, ids="-".join)
def test_model_steps_hold_what_was_sent_and_answered(runs: Any, config: Config,
                                                     kind: str) -> None:
    docs, requests = runs
    _ran(docs, config, kind)
    doc = docs[config, kind]
    (agent,) = doc["agent_steps"]
    assert agent["name"] == AGENT
    models = [s for s in agent["steps"] if s["type"] == "model"]
    assert len(models) == 2
    # what the client sent: the fake model saw the same two requests in every run
    sent = [r for r in requests if bool(r.get("stream")) == (kind == "stream")][:2]
    for step, request in zip(models, sent, strict=True):
        content, calls, prompt, completion = fake_openai.turn(request)
        tools = {c["id"]: c["function"]["name"] for m in request["messages"]
                 for c in m.get("tool_calls") or []}
        assert step["input"], "no input messages"
        assert json.loads(step["input"]) == [_canonical(m, tools, config in LOSSY)
                                             for m in request["messages"]]
        answer: dict[str, Any] = {"content": content, "role": "assistant"}
        if calls:
            answer["tool_calls"] = calls
        assert step["output"] == _dumps(answer)
        assert (step["model_info"]["input_tokens"], step["model_info"]["output_tokens"]) == (
            prompt, completion)
