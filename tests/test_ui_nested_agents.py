"""A supervisor that hands work to a sub-agent, traced with the OTel SDK's own OTLP exporter
(GenAI semantic conventions), as the UI shows it: one lane per agent activation, the sub-agent
nested under its supervisor, tokens per agent, the failed tool step marked in the lane of the
agent that made it. The expected figures are the ones this test's script records."""

from __future__ import annotations

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import Status, StatusCode

from tests.harness import ServerProcess, final_trajectory
from tests.ui_support import artifacts_dir, browser_page, require_browser


@pytest.fixture(autouse=True)
def _browser() -> None:
    require_browser()


def chat(tracer: object, model: str, tokens_in: int, tokens_out: int) -> None:
    with tracer.start_as_current_span(f"chat {model}") as span:  # type: ignore[attr-defined]
        span.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.request.model": model,
                             "gen_ai.usage.input_tokens": tokens_in,
                             "gen_ai.usage.output_tokens": tokens_out})


def run_supervisor(server: ServerProcess, project: str) -> str:
    provider = TracerProvider(resource=Resource.create({"service.name": "ui-supervisor"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(
        endpoint=f"{server.http}/v1/traces", headers={"trajhub-project": project})))
    tracer = provider.get_tracer("tests.ui")
    with tracer.start_as_current_span("invoke_agent supervisor") as root:
        root.set_attributes({"gen_ai.operation.name": "invoke_agent",
                             "gen_ai.agent.name": "supervisor"})
        chat(tracer, "gpt-4o", 100, 10)
        with tracer.start_as_current_span("invoke_agent researcher") as sub:
            sub.set_attributes({"gen_ai.operation.name": "invoke_agent",
                                "gen_ai.agent.name": "researcher"})
            chat(tracer, "gpt-4o-mini", 40, 4)
            with tracer.start_as_current_span("execute_tool search_web") as tool:
                tool.set_attributes({"gen_ai.operation.name": "execute_tool",
                                     "gen_ai.tool.name": "search_web",
                                     "gen_ai.tool.call.id": "call_1",
                                     "gen_ai.tool.call.arguments": '{"query": "trajhub"}'})
                tool.set_status(Status(StatusCode.ERROR, "search backend timed out"))
        chat(tracer, "gpt-4o", 50, 5)
    provider.shutdown()
    return format(root.get_span_context().trace_id, "032x")


def test_sub_agent_has_its_own_nested_lane(server: ServerProcess, project: str) -> None:
    from playwright.sync_api import expect

    trace_id = run_supervisor(server, project)
    with httpx.Client() as client:
        final_trajectory(client, server.http, project, trace_id)

    with browser_page(server.http, artifacts_dir("nested-agents")) as ui:
        page = ui.page
        ui.open(f"#/trajectories/{trace_id}?project={project}")
        lanes = page.locator(".timeline .lane:not(.axis)")
        expect(lanes).to_have_count(2)
        supervisor, researcher = lanes.nth(0), lanes.nth(1)
        expect(supervisor.locator(".lane-name")).to_have_text("supervisor")
        expect(researcher.locator(".lane-name")).to_contain_text("researcher")
        expect(researcher).to_contain_text("started by supervisor")
        assert "depth-1" in (researcher.get_attribute("class") or "")
        # each agent's own model steps: supervisor 100+50 in / 10+5 out, researcher 40 / 4
        expect(supervisor).to_contain_text("150 → 15 tok")
        expect(researcher).to_contain_text("40 → 4 tok")
        expect(page.locator("#totals")).to_contain_text("190 in → 19 out")
        # the failed tool call is the researcher's, not the supervisor's
        expect(researcher.locator(".bar.failed")).to_have_count(1)
        expect(supervisor.locator(".bar.failed")).to_have_count(0)
        # the supervisor's steps show the hand-off as a nested agent step
        expect(page.locator("#step-table tbody tr", has_text="nested agent")).to_contain_text(
            "researcher")
        researcher.locator(".bar.failed").click()
        expect(page.locator("#step-error")).to_contain_text("search backend timed out")
        ui.shot("01-nested-agents")

        # keyboard: Enter opens a step, arrows walk the steps in lane order, arrows switch tabs
        detail_title = page.locator("#step-detail h2")
        page.locator("#step-table .step-button").first.focus()
        page.keyboard.press("Enter")
        expect(detail_title).to_contain_text("chat gpt-4o")
        page.keyboard.press("ArrowDown")
        expect(detail_title).to_contain_text("researcher")
        for _ in range(3):
            page.keyboard.press("ArrowDown")
        expect(detail_title).to_contain_text("search_web")
        expect(page.locator("#step-error")).to_contain_text("search backend timed out")
        page.get_by_role("tab", name="Timeline").focus()
        page.keyboard.press("ArrowRight")
        expect(page.get_by_role("tab", name="Playback")).to_have_attribute("aria-selected", "true")
        expect(page.get_by_role("tab", name="Playback")).to_be_focused()
        expect(page.locator("#playback")).to_contain_text("search_web")
        # left from the first tab wraps around to the last
        page.keyboard.press("ArrowLeft")
        page.keyboard.press("ArrowLeft")
        expect(page.get_by_role("tab", name="Revisions")).to_have_attribute("aria-selected",
                                                                            "true")
        page.get_by_role("tab", name="Span tree").click()
        expect(page.locator("#span-tree")).to_contain_text("execute_tool search_web")
        ui.assert_clean()
