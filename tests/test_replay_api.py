"""Replay over a real server: playback events, run contract and recorded tool results of ingested
real-client captures (every instrumentation), revisions, multi-agent runs, costs in summaries,
and run-to-run comparison of live runs of the scripted agent (tests/fake_agent.py) — including a
hybrid replay over recorded tools, re-ingested and compared.

Ground truth is the scripted model's script (tests/fake_agent.py, tests/replay_agent.py) and the
agent's own prompt and tool definitions."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain_core.utils.function_calling import convert_to_openai_tool
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from tests import fake_agent
from tests.captures import replay_run
from tests.cli_runner import run_cli
from tests.eino_real_support import capture_files
from tests.eino_real_support import truth as eino_truth
from tests.harness import ServerProcess, final_trajectory, get_json, wait_for

INSTRUMENTATIONS = ["openinference", "traceloop", "langsmith", "cozeloop_python", "cozeloop_js"]
SYSTEM_PROMPT = "You are a helpful assistant. Use tools."  # create_react_agent(prompt=...)
# the react script: (input, output, cache-read) tokens per model turn
SCRIPT_TOKENS = [(120, 30, 64), (180, 18, 96), (230, 25, 0)]


def canonical_hash(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def ingest_capture(server: ServerProcess, project: str, run: str) -> str:
    # the run's trace: the one with most spans (Traceloop also exports a one-span trace)
    trace_id = replay_run(run, server.http, server.grpc, project).most_common(1)[0][0]
    with httpx.Client() as c:
        final_trajectory(c, server.http, project, trace_id)
    return trace_id


def events(c: httpx.Client, server: ServerProcess, project: str, trace_id: str
           ) -> tuple[httpx.Response, list[dict[str, Any]]]:
    r = c.get(f"{server.http}/api/v1/trajectories/{trace_id}/events",
              params={"project": project})
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/x-ndjson")
    return r, [json.loads(line) for line in r.text.splitlines()]


def run_agent(server: ServerProcess, project: str, script: str,
              tools_from: str | None = None) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "tests.replay_agent", server.http, project, script]
    if tools_from:
        cmd += ["--tools-from", tools_from]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).parent.parent)
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["trace_id"]
    with httpx.Client() as c:
        final_trajectory(c, server.http, project, out["trace_id"])
    return out


@pytest.mark.parametrize("instrumentation", INSTRUMENTATIONS)
def test_playback_contract_and_tool_results_of_every_instrumentation(
        instrumentation: str, server: ServerProcess, project: str) -> None:
    trace_id = ingest_capture(server, project, f"{instrumentation}/react.prebuilt.stream")
    with httpx.Client() as c:
        r, evs = events(c, server, project, trace_id)
        steps = [e for e in evs if e["type"] in ("model", "tool")]
        # the script: [get_weather + add] → [divide(1, 0) fails] → answer
        assert [e["type"] for e in steps] == ["model", "tool", "tool", "model", "tool", "model"]
        assert sorted(e["name"] for e in steps[1:3]) == ["add", "get_weather"]
        assert steps[4]["name"] == "divide" and steps[4]["error"] is not None
        assert [e["error"] for i, e in enumerate(steps) if i != 4] == [None] * 5
        assert [(e["tokens"]["input"], e["tokens"]["output"]) for e in steps
                if e["type"] == "model"] == [(i, o) for i, o, _ in SCRIPT_TOKENS]
        assert {e["agent"] for e in steps} == {"LangGraph"}
        assert [e["seq"] for e in evs] == list(range(len(evs)))
        starts = [e["started_at_ms"] for e in evs]
        assert starts == sorted(starts)
        # the time vocabulary's start_time, and the deprecated started_at_ms, name one moment
        assert [round(datetime.fromisoformat(e["start_time"]).timestamp() * 1000)
                for e in evs] == starts
        assert r.headers["x-trajectory-revision"] == r.headers["etag"].strip('"')
        model_cost = steps[0]["cost"]
        # fake-gpt-4o-mini has no price
        assert model_cost == {"usd": None, "priced_as": None, "price_source": None}

        results = get_json(c, f"{server.http}/api/v1/trajectories/{trace_id}/tool-results",
                           project=project)
        by_name = {t["tool_name"]: t for t in results["results"]}
        assert set(by_name) == {"get_weather", "add", "divide"}
        assert {n: t["call_id"] for n, t in by_name.items()} == {
            "get_weather": "call_weather_1", "add": "call_add_1", "divide": "call_div_1"}
        assert by_name["add"]["arguments_hash"] == canonical_hash({"a": 2, "b": 3})
        assert by_name["divide"]["arguments_hash"] == canonical_hash({"a": 1, "b": 0})
        assert by_name["divide"]["error"] is not None
        assert "Sunny, 22C in Paris" in by_name["get_weather"]["output"]
        assert "5" in by_name["add"]["output"]

        contract = get_json(c, f"{server.http}/api/v1/trajectories/{trace_id}/contract",
                            project=project)
        assert [v["value"] for v in contract["model_names"]["values"]] == [fake_agent.MODEL_NAME]
        assert [v["value"] for v in contract["system_prompt_hash"]["values"]] == [
            sha(SYSTEM_PROMPT)]
        assert [v["value"] for v in contract["sampling"]["temperature"]["values"]] == [0]
        assert contract["framework"]["values"][0]["value"] == "langgraph"
        assert contract["sampling"]["seed"] == {"known": False, "values": []}
        assert "sampling.seed" in contract["unknown"]
        for field in ("model_names", "system_prompt_hash", "framework"):
            assert all(v["source"] for v in contract[field]["values"])
        tool_schemas = sorted((convert_to_openai_tool(t)["function"] for t in fake_agent.TOOLS),
                              key=lambda f: f["name"])
        expected = sha(json.dumps(
            [{"name": f["name"], "description": f["description"],
              "parameters": f["parameters"]} for f in tool_schemas],
            sort_keys=True, separators=(",", ":"), ensure_ascii=False))
        if instrumentation == "cozeloop_js":  # @cozeloop/langchain records no tool definitions
            assert "tool_schema_hash" in contract["unknown"]
        else:
            assert [v["value"] for v in contract["tool_schema_hash"]["values"]] == [expected]
            assert contract["tool_names"]["values"][0]["value"] == ["add", "divide",
                                                                    "get_weather"]


def test_summaries_carry_cost_and_unknown_models_say_so(server: ServerProcess,
                                                         project: str) -> None:
    trace_id = ingest_capture(server, project, "openinference/react.prebuilt.stream")
    with httpx.Client() as c:
        (item,) = get_json(c, f"{server.http}/api/v1/trajectories", project=project)["items"]
    assert item["trace_id"] == trace_id
    cost = item["cost"]
    assert cost["input_tokens"] == sum(i for i, _, _ in SCRIPT_TOKENS)
    assert cost["output_tokens"] == sum(o for _, o, _ in SCRIPT_TOKENS)
    assert cost["cached_input_tokens"] == sum(k for _, _, k in SCRIPT_TOKENS)
    assert cost["usd"] is None and cost["complete"] is False
    assert cost["unpriced_models"] == [fake_agent.MODEL_NAME]
    # the fake model is in no price source: nothing priced, the configured source is named
    assert cost["price_sources"] == []
    assert cost["price_table"].startswith("genai-prices 0.2.3, data of ")


def test_routes_404_and_400(server: ServerProcess, project: str) -> None:
    missing = "ab" * 16
    with httpx.Client() as c:
        for path in ("events", "contract", "tool-results"):
            r = c.get(f"{server.http}/api/v1/trajectories/{missing}/{path}",
                      params={"project": project})
            assert r.status_code == 404 and missing in r.json()["detail"]
        r = c.get(f"{server.http}/api/v1/trajectories/compare",
                  params={"project": project, "a": "nothex", "b": missing})
        assert r.status_code == 400 and "nothex" in r.json()["detail"]
        # /trajectories/compare is the compare route, not a trajectory named "compare"
        r = c.get(f"{server.http}/api/v1/trajectories/compare", params={"project": project})
        assert r.status_code == 400 and "a" in r.json()["detail"]


def _export(spans: list[Any], server: ServerProcess, project: str) -> None:
    exporter = OTLPSpanExporter(endpoint=f"{server.http}/v1/traces",
                                headers={"trajhub-project": project})
    assert exporter.export(spans).name == "SUCCESS"


def test_late_span_changes_events_tool_results_and_contract(server: ServerProcess,
                                                            project: str) -> None:
    """GenAI-convention spans in two exports: the second, late, adds a tool call and a model
    call with another temperature; events, tool results and contract follow the revision."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "late"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("tests.replay")
    with tracer.start_as_current_span("invoke_agent planner") as root:
        root.set_attributes({"gen_ai.operation.name": "invoke_agent",
                             "gen_ai.agent.name": "planner"})
        with tracer.start_as_current_span("chat gpt-4o-mini") as llm:
            llm.set_attributes({"gen_ai.operation.name": "chat",
                                "gen_ai.request.model": "gpt-4o-mini",
                                "gen_ai.request.temperature": 0.2,
                                "gen_ai.usage.input_tokens": 1000,
                                "gen_ai.usage.output_tokens": 500})
        with tracer.start_as_current_span("execute_tool search") as tool:
            tool.set_attributes({"gen_ai.operation.name": "execute_tool",
                                 "gen_ai.tool.name": "search", "gen_ai.tool.call.id": "call_1",
                                 "gen_ai.tool.call.arguments": '{"q": "paris"}',
                                 "gen_ai.tool.call.result": "Paris is in France"})
        with tracer.start_as_current_span("execute_tool lookup") as late_tool:
            late_tool.set_attributes({"gen_ai.operation.name": "execute_tool",
                                      "gen_ai.tool.name": "lookup", "gen_ai.tool.call.id": "call_2",
                                      "gen_ai.tool.call.arguments": '{"id": 7}'})
            late_tool.set_status(Status(StatusCode.ERROR, "lookup failed"))
        with tracer.start_as_current_span("chat gpt-4o-mini") as late_llm:
            late_llm.set_attributes({"gen_ai.operation.name": "chat",
                                     "gen_ai.request.model": "gpt-4o-mini",
                                     "gen_ai.request.temperature": 0.9})
    provider.shutdown()
    trace_id = format(root.get_span_context().trace_id, "032x")
    finished = memory.get_finished_spans()
    late_ids = {late_tool.get_span_context().span_id, late_llm.get_span_context().span_id}
    _export([s for s in finished if s.context.span_id not in late_ids], server, project)
    with httpx.Client() as c:
        first = final_trajectory(c, server.http, project, trace_id)
        r1, ev1 = events(c, server, project, trace_id)
        tr1 = get_json(c, f"{server.http}/api/v1/trajectories/{trace_id}/tool-results",
                       project=project)
        ct1 = get_json(c, f"{server.http}/api/v1/trajectories/{trace_id}/contract",
                       project=project)
        _export([s for s in finished if s.context.span_id in late_ids], server, project)
        revision = int(first.headers["x-trajectory-revision"])
        wait_for(lambda: int(final_trajectory(c, server.http, project, trace_id)
                             .headers["x-trajectory-revision"]) > revision,
                 what="revision bump")
        r2, ev2 = events(c, server, project, trace_id)
        tr2 = get_json(c, f"{server.http}/api/v1/trajectories/{trace_id}/tool-results",
                       project=project)
        ct2 = get_json(c, f"{server.http}/api/v1/trajectories/{trace_id}/contract",
                       project=project)
    assert [(e["type"], e["name"]) for e in ev1] == [("model", "chat gpt-4o-mini"),
                                                     ("tool", "search")]
    assert [e["type"] for e in ev2] == ["model", "tool", "tool", "model"]
    assert {e["agent"] for e in ev2} == {"planner"}
    assert int(r2.headers["x-trajectory-revision"]) > int(r1.headers["x-trajectory-revision"])
    assert [t["tool_name"] for t in tr1["results"]] == ["search"]
    assert [t["tool_name"] for t in tr2["results"]] == ["search", "lookup"]
    assert tr2["results"][1]["error"]["msg"] == "lookup failed"
    assert tr2["results"][0]["arguments_hash"] == canonical_hash({"q": "paris"})
    assert tr2["revision"] > tr1["revision"] and ct2["revision"] > ct1["revision"]
    assert [v["value"] for v in ct1["sampling"]["temperature"]["values"]] == [0.2]
    assert [v["value"] for v in ct2["sampling"]["temperature"]["values"]] == [0.2, 0.9]
    # gpt-4o-mini's list price (openai.com/api/pricing): $0.15 / 1M input, $0.60 / 1M output:
    # 1000 × 0.15e-6 + 500 × 0.60e-6
    assert ev1[0]["cost"]["usd"] == pytest.approx(0.00045)
    assert ev1[0]["cost"]["priced_as"] == "openai:gpt-4o-mini"
    assert ev1[0]["cost"]["price_source"].startswith("genai-prices 0.2.3, data of ")


def test_multi_agent_events_name_their_agents(server: ServerProcess, project: str) -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "team"}))
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("tests.replay")

    def chat(name: str) -> None:
        with tracer.start_as_current_span(f"chat {name}") as s:
            s.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.request.model": name})

    def tool(name: str, args: str) -> None:
        with tracer.start_as_current_span(f"execute_tool {name}") as s:
            s.set_attributes({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                              "gen_ai.tool.call.arguments": args})

    with tracer.start_as_current_span("invoke_agent supervisor") as root:
        root.set_attributes({"gen_ai.operation.name": "invoke_agent",
                             "gen_ai.agent.name": "supervisor"})
        chat("gpt-4o")
        with tracer.start_as_current_span("invoke_agent researcher") as sub:
            sub.set_attributes({"gen_ai.operation.name": "invoke_agent",
                                "gen_ai.agent.name": "researcher"})
            chat("gpt-4o-mini")
            tool("search", '{"q": "x"}')
        chat("gpt-4o")
    provider.shutdown()
    _export(list(memory.get_finished_spans()), server, project)
    trace_id = format(root.get_span_context().trace_id, "032x")
    with httpx.Client() as c:
        final_trajectory(c, server.http, project, trace_id)
        _, evs = events(c, server, project, trace_id)
    assert evs[3]["agent_path"] == ["supervisor", "researcher"]
    assert [(e["agent"], e["type"], e["name"]) for e in evs] == [
        ("supervisor", "model", "chat gpt-4o"),
        ("supervisor", "agent", "researcher"),
        ("researcher", "model", "chat gpt-4o-mini"),
        ("researcher", "tool", "search"),
        ("supervisor", "model", "chat gpt-4o"),
    ]


def trajhub_cli(*args: str, tty: bool = False) -> str:
    """Run the `trajhub` command; with `tty`, its stdout is a pseudo-terminal."""
    if not tty:
        done = run_cli(*args, keep_trajhub_env=True)
        assert done.returncode == 0, done.stderr
        return done.stdout
    # a terminal is a process's: the command runs as one here
    cmd = [sys.executable, "-m", "trajhub", *args]
    import os
    import pty

    leader, follower = pty.openpty()
    with subprocess.Popen(cmd, stdout=follower, stderr=subprocess.PIPE) as proc:
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        assert proc.wait(60) == 0
    os.close(leader)
    return b"".join(chunks).decode()


def test_replay_cli_prints_a_timeline_plain_when_piped_coloured_on_a_terminal(
        server: ServerProcess, project: str) -> None:
    trace_id = ingest_capture(server, project, "cozeloop_python/react.prebuilt.stream")
    args = ("replay", trace_id, "--url", server.http, "--project", project)
    plain = trajhub_cli(*args)
    assert "\x1b[" not in plain
    steps = [line for line in plain.splitlines() if line.startswith("+")]
    assert [line.split()[3] for line in steps] == ["model", "tool", "tool", "model", "tool",
                                                   "model"]
    assert "divide" in steps[4] and "ERROR" in steps[4]
    assert "120→30 tok" in steps[0] and "[LangGraph]" in steps[0]
    coloured = trajhub_cli(*args, tty=True)
    assert "\x1b[" in coloured and "divide" in coloured
    missing = subprocess.run([sys.executable, "-m", "trajhub", "replay", "ab" * 16, "--url",
                              server.http, "--project", project], capture_output=True,
                             text=True, timeout=60)
    assert missing.returncode == 2 and "HTTP 404" in missing.stderr


def test_a_price_file_prices_steps_agents_runs_and_summaries(
        database: Any, tmp_path: Path, project: str) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"as_of": "2026-01-01", "models": {
        fake_agent.MODEL_NAME: {"input": 1.0, "output": 2.0, "cached_input": 0.5}}}))
    priced = ServerProcess.start(database.url, tmp_path, extra_env={
        "TRAJHUB_PRICES": str(prices)})
    try:
        trace_id = ingest_capture(priced, project, "openinference/react.prebuilt.stream")
        # per 1M tokens: uncached input × 1.0 + cached × 0.5 + output × 2.0
        expected = [((i - k) * 1.0 + k * 0.5 + o * 2.0) / 1e6 for i, o, k in SCRIPT_TOKENS]
        with httpx.Client() as c:
            _, evs = events(c, priced, project, trace_id)
            cost = get_json(c, f"{priced.http}/api/v1/trajectories/{trace_id}/cost",
                            project=project)
            (item,) = get_json(c, f"{priced.http}/api/v1/trajectories",
                               project=project)["items"]
            same = get_json(c, f"{priced.http}/api/v1/trajectories/compare", project=project,
                            a=trace_id, b=trace_id)
    finally:
        priced.stop()
    assert [e["cost"]["usd"] for e in evs if e["type"] == "model"] == pytest.approx(expected)
    assert [s["usd"] for s in cost["steps"]] == pytest.approx(expected)
    assert cost["run"]["usd"] == pytest.approx(sum(expected)) and cost["run"]["complete"]
    assert [(a["agent"], a["cost"]["usd"]) for a in cost["agents"]] == [
        ("LangGraph", pytest.approx(sum(expected)))]
    assert cost["run"]["price_table"].startswith(f"TRAJHUB_PRICES {prices}, as of 2026-01-01 "
                                                 "over genai-prices 0.2.3")
    assert cost["run"]["price_sources"] == [f"TRAJHUB_PRICES {prices}, as of 2026-01-01"]
    assert cost["steps"][0]["price_source"] == f"TRAJHUB_PRICES {prices}, as of 2026-01-01"
    assert item["cost"]["usd"] == pytest.approx(sum(expected))
    assert item["cost"]["prices_as_of"] == "2026-01-01"
    assert same["a"]["cost"]["usd"] == pytest.approx(sum(expected))
    assert same["deltas"]["cost_usd"] == 0


def test_openapi_documents_the_replay_routes(server: ServerProcess) -> None:
    with httpx.Client(timeout=30) as c:
        spec = get_json(c, f"{server.http}/openapi.json")
    paths = spec["paths"]
    for path in ("/api/v1/trajectories/compare", "/api/v1/trajectories/{trace_id}/contract",
                 "/api/v1/trajectories/{trace_id}/events",
                 "/api/v1/trajectories/{trace_id}/tool-results",
                 "/api/v1/trajectories/{trace_id}/cost", "/api/v1/regressions"):
        assert path in paths, path
    events_doc = paths["/api/v1/trajectories/{trace_id}/events"]["get"]["responses"]["200"]
    assert "application/x-ndjson" in events_doc["content"]
    assert "StepEventView" in spec["components"]["schemas"]
    assert "RegressionReport" in spec["components"]["schemas"]


def ingest_eino(server: ServerProcess, project: str, shape: str, export: str) -> str:
    """Replay a real Eino capture (tests/fixtures/eino-real): the cozeloop requests to the ingest
    API as sent, the apmplus gRPC export's request as OTLP/HTTP protobuf (the same message)."""
    with httpx.Client() as c:
        for body in capture_files(shape, export):
            if export == "cozeloop":
                url, content_type = "/v1/loop/traces/ingest", "application/json"
            else:
                url, content_type = "/v1/traces", "application/x-protobuf"
            r = c.post(f"{server.http}{url}", content=body.read_bytes(),
                       headers={"content-type": content_type, "trajhub-project": project})
            assert r.status_code == 200, r.text
        items = wait_for(lambda: get_json(c, f"{server.http}/api/v1/trajectories",
                                          project=project)["items"], what="eino trajectory")
        (item,) = items
        final_trajectory(c, server.http, project, item["trace_id"])
        return str(item["trace_id"])


@pytest.mark.parametrize("export", ["cozeloop", "apmplus"])
@pytest.mark.parametrize("shape", ["react_tools", "adk_failure"])
def test_eino_runs_play_back_with_agents_tools_and_unknown_prices(
        shape: str, export: str, server: ServerProcess, project: str) -> None:
    truth = eino_truth(shape)
    steps = [s for a in truth["activations"] for s in a["steps"]]
    model_calls = [s for s in steps if s["type"] == "model"]
    tool_calls = [s for s in steps if s["type"] == "tool"]
    trace_id = ingest_eino(server, project, shape, export)
    with httpx.Client() as c:
        _, evs = events(c, server, project, trace_id)
        results = get_json(c, f"{server.http}/api/v1/trajectories/{trace_id}/tool-results",
                           project=project)["results"]
        contract = get_json(c, f"{server.http}/api/v1/trajectories/{trace_id}/contract",
                            project=project)
        cost = get_json(c, f"{server.http}/api/v1/trajectories/{trace_id}/cost",
                        project=project)
    models = [e for e in evs if e["type"] == "model"]
    assert [(e["tokens"]["input"], e["tokens"]["output"]) for e in models] == [
        (m["input_tokens"], m["output_tokens"]) for m in model_calls]
    # each model call belongs to the run's agent (in adk_failure, to the ReAct graph inside
    # `planner`)
    assert {name for e in models for name in e["agent_path"]} >= {
        a["agent"] for a in truth["activations"]}
    assert sorted((r["tool_name"], r["call_id"], r["arguments_hash"], r["error"] is not None)
                  for r in results) == sorted(
        (t["name"], t["tool_call_id"], canonical_hash(json.loads(t["arguments"])),
         t["error"] is not None) for t in tool_calls)
    assert [v["value"] for v in contract["model_names"]["values"]] == ["scripted-chat"]
    # the scripted model is in no price table: the cost is not complete, and says so
    assert cost["run"]["complete"] is False
