"""Real clients against a real server: the OTel SDK's own OTLP exporters (gRPC and HTTP) and
the cozeloop Python SDK tracing the scripted LangGraph agent (tests/fake_agent.py)."""

from __future__ import annotations

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as HttpExporter,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

from tests.harness import ServerProcess, final_trajectory, get_json, wait_for


def exporter(kind: str, server: ServerProcess, project: str) -> SpanExporter:
    headers = {"trajhub-project": project}
    if kind == "grpc":
        return GrpcExporter(endpoint=server.grpc, insecure=True, headers=headers)
    return HttpExporter(endpoint=f"{server.http}/v1/traces", headers=headers)


@pytest.mark.parametrize("kind", ["grpc", "http"])
def test_otel_sdk_exporter_spans_read_back(kind: str, server: ServerProcess,
                                           project: str) -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": f"sdk-{kind}",
                                                        "team": "agents"}))
    provider.add_span_processor(BatchSpanProcessor(exporter(kind, server, project)))
    tracer = provider.get_tracer("trajhub.tests", "2.0")
    with tracer.start_as_current_span("agent run", kind=SpanKind.SERVER) as root:
        root.set_attribute("gen_ai.operation.name", "invoke_agent")
        with tracer.start_as_current_span("chat gpt") as llm:
            llm.set_attributes({"gen_ai.operation.name": "chat",
                                "gen_ai.request.model": "gpt-4o-mini",
                                "gen_ai.usage.input_tokens": 12, "gen_ai.usage.output_tokens": 3,
                                "temperature": 0.5, "stream": True, "stop": ["\n", "END"]})
            llm.add_event("first token", {"index": 0})
        with tracer.start_as_current_span("execute_tool add",
                                          links=[Link(llm.get_span_context())]) as tool:
            tool.set_attributes({"gen_ai.operation.name": "execute_tool",
                                 "gen_ai.tool.name": "add"})
            tool.set_status(Status(StatusCode.ERROR, "bad arguments"))
    provider.force_flush()
    provider.shutdown()
    trace_id = format(root.get_span_context().trace_id, "032x")

    with httpx.Client() as c:
        tree = get_json(c, f"{server.http}/api/v1/traces/{trace_id}", project=project)["spans"]
        assert [s["name"] for s in tree] == ["agent run"]
        root_view = tree[0]
        assert root_view["kind"] == "server"
        assert root_view["resource"]["service.name"] == f"sdk-{kind}"
        assert root_view["scope"] == {"name": "trajhub.tests", "version": "2.0"}
        children = {s["name"]: s for s in root_view["children"]}
        assert set(children) == {"chat gpt", "execute_tool add"}
        llm_view = children["chat gpt"]
        assert llm_view["attributes"]["gen_ai.usage.input_tokens"] == 12
        assert llm_view["attributes"]["temperature"] == 0.5
        assert llm_view["attributes"]["stream"] is True
        assert llm_view["attributes"]["stop"] == ["\n", "END"]
        assert llm_view["events"][0]["name"] == "first token"
        assert children["execute_tool add"]["status"] == {"code": "error",
                                                          "message": "bad arguments"}
        otlp = get_json(c, f"{server.http}/api/v1/traces/{trace_id}", project=project,
                        format="otlp")
        spans = [s for rs in otlp["resourceSpans"] for ss in rs["scopeSpans"]
                 for s in ss["spans"]]
        tool_span = next(s for s in spans if s["name"] == "execute_tool add")
        assert tool_span["links"][0]["spanId"] == llm_view["span_id"]

        listed = wait_for(lambda: get_json(c, f"{server.http}/api/v1/traces",
                                           project=project)["items"], what="trace listed")
        assert listed[0]["trace_id"] == trace_id
        assert listed[0]["span_count"] == 3 and listed[0]["error_count"] == 1
        assert listed[0]["root_span_name"] == "agent run"
        assert listed[0]["service_name"] == f"sdk-{kind}"


def test_cozeloop_python_sdk_traces_a_langgraph_agent(server: ServerProcess, project: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The cozeloop SDK works by changing only its base URL."""
    import cozeloop
    from cozeloop.integration.langchain.trace_callback import LoopTracer

    from tests import fake_agent

    client = cozeloop.new_client(api_base_url=server.http, workspace_id=project,
                                 api_token="pat_offline")
    try:
        handler = LoopTracer.get_callback_handler(client)
        graph = fake_agent.build_graph("react", "prebuilt")
        fake_agent.run_graph(graph, stream=True, callbacks=[handler])
        client.flush()
    finally:
        client.close()

    with httpx.Client() as c:
        items = wait_for(lambda: get_json(c, f"{server.http}/api/v1/traces",
                                          project=project)["items"], what="cozeloop trace")
        trace_id = items[0]["trace_id"]
        doc = final_trajectory(c, server.http, project, trace_id).json()
        # the SDK exports in batches, so the trace may be listed before its root arrives; once
        # the trajectory is final, the whole trace is in
        listed = get_json(c, f"{server.http}/api/v1/traces", project=project)["items"]
        assert [t["root_span_name"] for t in listed] == ["LangGraph"]
    steps = doc["agent_steps"][0]["steps"]
    assert [s["type"] for s in steps] == ["model", "tool", "tool", "model", "tool", "model"]
    assert sorted(s["name"] for s in steps[1:3]) == ["add", "get_weather"]
    assert steps[4]["name"] == "divide" and "error" in steps[4]["basic_info"]
    assert doc["root_step"]["metrics_info"]["input_tokens"] == 530
    assert doc["root_step"]["metrics_info"]["output_tokens"] == 73
