"""Multi-agent runs (docs/trajectory-rules.md §7) under every instrumentation, against ground
truth.

Every capture `tests/fixtures/real-clients/<client>/<shape>.<graph>.<mode>/` of a shape with a
ground-truth file (`real-clients/ground_truth/<shape>.json`, written from the scripted models'
turns, never from trajhub) must give:

- one agent step per activation, named after the agent, in activation order, under the right
  parent (or inside the right tool, for an agent called from a tool);
- each activation's own model, tool and sub-agent steps, in order (parallel tool calls in any
  order among themselves), with the scripted payloads (§8);
- handoff tool steps marked `handoff` / `handoff_to`;
- token totals per activation and for the root, and the cache read / cache write / reasoning
  totals (where the instrumentation records them: `DETAIL_GAPS`);
- exactly the failed model and tool steps of the script, each in its agent;
- the run's error on the root when the run raised, and only then.

Sub-agents that ran in parallel (one `parallel_group`, e.g. fanned out with `Send`) may come in
any order: each is matched to its ground-truth activation by the tool calls it made.
A span that carries one fact under two conventions (OpenInference with its OTel GenAI
dual-write, `openinference_genai`) must give the same numbers: nothing is counted twice.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.capture import script
from tests.normalize_support import REAL, capture_sets, load_traces, parallel_shape
from trajhub.normalizers import derive
from trajhub.normalizers.trajectory import AgentStep, Step, Trajectory

CAPTURES = capture_sets()
GROUND_TRUTH = REAL / "ground_truth"
#: clients whose trace of a run is flat and carries no agent (Traceloop JS hangs every span under
#: the workflow span, names chains by class and records no metadata: tests/capture/README.md,
#: "Known gaps"): only the run's error is checked here, the rest by tests/test_traceloop_js.py
FLAT = frozenset({"traceloop_js"})
DETAILS = ("cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
#: client, or client and mode → the token details its instrumentation does not record
#: (tests/capture/README.md, "Known gaps"); for these the derived count must be 0 (nothing
#: invented), not the script's
_OPENAI_USAGE = frozenset({"cache_write_tokens"})
DETAIL_GAPS: dict[str, frozenset[str]] = {
    # (OpenInference without streaming records no cache-write count either, but the usage_metadata
    # of its output.value has it, and trajhub reads it from there: normalizers/openinference.py)
    # without streaming, cozeloop's LangChain callback reads the provider's OpenAI-style
    # `token_usage`, which has no cache-write count (no input_creation_cached_tokens)
    "cozeloop_python/invoke": _OPENAI_USAGE,
    # @cozeloop/langchain 0.0.3 reads only llmOutput.tokenUsage's prompt, completion and total
    # counts (its parseUsage): no token details at all
    "cozeloop_js": frozenset(DETAILS),
    # its LangChain callback records no reasoning count at all (tests/fixtures/README.md)
    "traceloop": frozenset({"reasoning_tokens"}),
}


#: clients that record a tool error returned to the model (not raised) only as its text, without
#: the ToolMessage's `status: "error"`: under them that step is not failed, as trajhub does not
#: guess failure from a tool's text (docs/trajectory-rules.md §4; tests/capture/README.md,
#: "Known gaps")
RETURNED_ERROR_GAPS = frozenset({"otel_genai", "otel_genai_event_only", "otel_genai_span_and_event",
                                 "cozeloop_python"})
#: shape → the tool calls whose error the tool returned rather than raised
RETURNED_ERRORS: dict[str, frozenset[str]] = {"mcp_tools": frozenset({"call_convert_1"})}


def _fails_in(capture: str, shape: str, step: dict[str, Any]) -> bool:
    """Whether a ground-truth step is a failed step in this capture."""
    if not step.get("error"):
        return False
    return not (capture.split("/")[0] in RETURNED_ERROR_GAPS
                and step.get("tool_call_id") in RETURNED_ERRORS.get(shape, frozenset()))


def _output(capture: str, step: dict[str, Any]) -> Any:
    """A ground-truth tool step's result in this capture: the JS twin's (`output_js`) where the
    JS library answers other text than the Python one."""
    if capture.split("/")[0].endswith("_js") and "output_js" in step:
        return step["output_js"]
    return step["output"]


def _gaps(capture: str) -> frozenset[str]:
    client, run = capture.split("/")[:2]
    return DETAIL_GAPS.get(client, frozenset()) | DETAIL_GAPS.get(
        f"{client}/{run.rsplit('.', 1)[-1]}", frozenset())


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _cases(*, flat: bool) -> list[tuple[str, str]]:
    """(capture name, shape) of every capture whose shape has a ground truth (and whose client
    is not `FLAT`, unless `flat`)."""
    # a shape of several runs on one thread has its own test (tests/test_normalize_interrupts.py)
    shapes = {p.stem for p in GROUND_TRUTH.glob("*.json")} - script.INTERRUPT_SHAPES
    out = []
    for name in sorted(CAPTURES):
        parts = name.split("/")
        if parts[0] == "eino-real":
            continue  # Eino's own shapes and ground truth: tests/test_eino_real.py
        if len(parts) == 3 and parts[1].split(".")[0] in shapes and (
                flat or parts[0] not in FLAT):
            out.append((name, parts[1].split(".")[0]))
    return out


CASES = _cases(flat=False)
ALL_CASES = _cases(flat=True)


def _truth(shape: str) -> dict[str, Any]:
    return json.loads((GROUND_TRUTH / f"{shape}.json").read_text())  # type: ignore[no-any-return]


def _run(files: list[Path]) -> Trajectory:
    traces = load_traces(files)
    spans = max(traces.values(), key=lambda s: (len(s), s[0].trace_id))
    return derive(spans).trajectory


def _call_ids(steps: list[Any]) -> tuple[str, ...]:
    return tuple(sorted(
        str(s["tool_call_id"]) if isinstance(s, dict) else s.metadata.get("tool_call_id", "")
        for s in steps if (s["type"] if isinstance(s, dict) else s.type) == "tool"))


def _aligned(trajectory: Trajectory, truth: dict[str, Any]) -> list[AgentStep]:
    """The trajectory's agent steps in ground-truth activation order: activations that ran in
    parallel (agent steps of one `parallel_group`) may come in any order among themselves; each
    is put where the ground-truth activation with the same tool calls is."""
    agents = list(trajectory.agent_steps)
    acts = truth["activations"]
    if len(agents) != len(acts):
        return agents
    groups: dict[tuple[int, int], list[int]] = {}
    for act in acts:
        for step in act["steps"]:
            if step["type"] == "agent" and step.get("parallel_group") is not None:
                groups.setdefault((act["index"], step["parallel_group"]), []).append(
                    step["activation"])
    for members in groups.values():
        by_calls = {_call_ids(agents[i].steps): agents[i] for i in members}
        for i in members:
            agents[i] = by_calls.get(_call_ids(acts[i]["steps"]), agents[i])
    return agents


def _owner(trajectory: Trajectory) -> dict[str, tuple[int, Step]]:
    """step id → (index of the agent step that holds it, the step)."""
    return {
        step.id: (index, step)
        for index, agent in enumerate(trajectory.agent_steps)
        for step in agent.steps
    }


def _parent(trajectory: Trajectory, agent: AgentStep,
            order: list[AgentStep] | None = None) -> tuple[int | None, str | None]:
    """(index in `order` (default: the trajectory's order) of the parent activation, name of
    the tool it ran in, if any)."""
    ids = [a.id for a in (order if order is not None else trajectory.agent_steps)]
    if agent.parent_id in ids:
        return ids.index(agent.parent_id), None
    owner = _owner(trajectory).get(agent.parent_id)
    if owner is not None and owner[1].type == "tool":
        return ids.index(trajectory.agent_steps[owner[0]].id), owner[1].name
    return None, None



def _expected_steps(activation: dict[str, Any]) -> list[tuple[str, str]]:
    return parallel_shape(
        [
            (s["type"], s.get("name") or s.get("agent") or "", s.get("parallel_group"))
            for s in activation["steps"]
        ]
    )


def _actual_steps(agent: AgentStep, expected: dict[str, Any]) -> list[tuple[str, str]]:
    groups = {s["name"]: s.get("parallel_group") for s in expected["steps"] if s["type"] == "tool"}
    steps = []
    for step in agent.steps:
        if step.type in ("agent", "graph"):
            steps.append(("agent", step.name, None))
        else:
            name = "" if step.type == "model" else step.name
            steps.append((step.type, name, groups.get(step.name) if step.type == "tool" else None))
    return parallel_shape(steps)


def _replace_steps(agent: AgentStep, steps: list[Step]) -> AgentStep:
    return replace(agent, steps=steps)


@pytest.mark.parametrize(("capture", "shape"), CASES)
def test_activations(capture: str, shape: str) -> None:
    truth = _truth(shape)
    trajectory = _run(CAPTURES[capture])
    agents = _aligned(trajectory, truth)
    assert [a.name for a in agents] == [a["agent"] for a in truth["activations"]]
    for agent, expected in zip(agents, truth["activations"], strict=True):
        assert _parent(trajectory, agent, agents) == (expected["parent"], expected["via_tool"]), \
            agent.name
        own = _replace_steps(
            agent,
            [
                s
                for s in agent.steps
                if not (
                    s.type in ("agent", "graph")
                    and any(a.id == s.id and _parent(trajectory, a)[1] is not None for a in agents)
                )
            ],
        )
        assert _actual_steps(own, expected) == _expected_steps(expected), agent.name


@pytest.mark.parametrize(("capture", "shape"), CASES)
def test_tokens_per_agent_and_root(capture: str, shape: str) -> None:
    truth = _truth(shape)
    trajectory = _run(CAPTURES[capture])
    root = trajectory.root_step.metrics_info
    assert (root.input_tokens, root.output_tokens) == (
        truth["root"]["input_tokens"],
        truth["root"]["output_tokens"],
    )
    for agent, expected in zip(_aligned(trajectory, truth), truth["activations"], strict=True):
        metrics = agent.metrics_info
        assert (metrics.input_tokens, metrics.output_tokens) == (
            expected["input_tokens"],
            expected["output_tokens"],
        ), agent.name


def _details(steps: list[Step]) -> dict[str, int]:
    """The cache read / cache write / reasoning totals of some model steps."""
    infos = [s.model_info for s in steps if s.type == "model" and s.model_info is not None]
    return {
        "cache_read_tokens": sum(i.input_read_cached_tokens for i in infos),
        "cache_write_tokens": sum(i.input_creation_cached_tokens for i in infos),
        "reasoning_tokens": sum(i.reasoning_tokens for i in infos),
    }


def _want_details(counts: dict[str, Any], gaps: frozenset[str]) -> dict[str, int]:
    return {k: 0 if k in gaps else int(counts.get(k, 0)) for k in DETAILS}


@pytest.mark.parametrize(("capture", "shape"), CASES)
def test_token_details_per_agent_and_root(capture: str, shape: str) -> None:
    """Cache read, cache write and reasoning tokens: each model call's once, per activation and
    for the whole run (a dual-written span counts once)."""
    truth = _truth(shape)
    gaps = _gaps(capture)
    trajectory = _run(CAPTURES[capture])
    agents = _aligned(trajectory, truth)
    every_step = [s for a in agents for s in a.steps]
    assert _details(every_step) == _want_details(truth["root"], gaps)
    for agent, expected in zip(agents, truth["activations"], strict=True):
        assert _details(agent.steps) == _want_details(expected, gaps), agent.name


@pytest.mark.parametrize(("capture", "shape"), CASES)
def test_failed_steps(capture: str, shape: str) -> None:
    """Exactly the model and tool calls that raised are failed steps, each in its agent."""
    truth = _truth(shape)
    trajectory = _run(CAPTURES[capture])
    for agent, expected in zip(_aligned(trajectory, truth), truth["activations"], strict=True):
        failed = sorted((s.type, s.name if s.type == "tool" else "") for s in agent.steps
                        if s.type in ("model", "tool") and s.failed)
        want = sorted((s["type"], s.get("name", "") if s["type"] == "tool" else "")
                      for s in expected["steps"] if _fails_in(capture, shape, s))
        assert failed == want, agent.name


@pytest.mark.parametrize(("capture", "shape"), ALL_CASES)
def test_root_error(capture: str, shape: str) -> None:
    truth = _truth(shape)
    trajectory = _run(CAPTURES[capture])
    error = trajectory.root_step.basic_info.error
    if truth["root"]["error"] is None:
        assert error is None
        # nor did any agent fail (a handoff's ParentCommand is routing, not an error)
        assert [a.name for a in trajectory.agent_steps if a.basic_info.error is not None] == []
    else:
        assert error is not None
        assert truth["root"]["error"]["message"] in error.msg


@pytest.mark.parametrize(("capture", "shape"), CASES)
def test_steps_and_payloads(capture: str, shape: str) -> None:
    truth = _truth(shape)
    trajectory = _run(CAPTURES[capture])
    for agent, expected in zip(_aligned(trajectory, truth), truth["activations"], strict=True):
        models = [s for s in agent.steps if s.type == "model"]
        want_models = [s for s in expected["steps"] if s["type"] == "model"]
        for step, want in zip(models, want_models, strict=True):
            assert step.model_info is not None
            assert (step.model_info.input_tokens, step.model_info.output_tokens) == (
                want["input_tokens"],
                want["output_tokens"],
            )
            if want.get("error"):
                continue  # a failed call answered nothing
            message: dict[str, Any] = {"content": want["content"], "role": "assistant"}
            if want["tool_calls"]:
                message["tool_calls"] = want["tool_calls"]
            assert step.output == canonical(message), agent.name
        tools = sorted(
            (s for s in agent.steps if s.type == "tool"),
            key=lambda s: s.metadata.get("tool_call_id", ""),
        )
        want_tools = sorted(
            (s for s in expected["steps"] if s["type"] == "tool"),
            key=lambda s: str(s["tool_call_id"]),
        )
        for step, want in zip(tools, want_tools, strict=True):
            assert step.name == want["name"]
            assert step.metadata.get("tool_call_id") == want["tool_call_id"]
            assert step.input == canonical(want["arguments"])
            assert (step.basic_info.error is not None) == _fails_in(capture, shape, want), \
                step.name
            if want["error"] is None and want["handoff_to"] is None:
                assert step.output == _output(capture, want)
            if want["handoff_to"] is not None:
                assert step.metadata.get("handoff") == "true"
                assert step.metadata.get("handoff_to") == want["handoff_to"]
            else:
                assert "handoff" not in step.metadata


def test_every_shape_is_captured_under_several_instrumentations() -> None:
    clients: dict[str, set[str]] = {}
    for capture, shape in CASES:
        clients.setdefault(shape, set()).add(capture.split("/")[0])
    assert clients and all(len(c) >= 2 for c in clients.values()), clients


def _oi_run(*, last_fails: bool, retried: bool, root_output: str = "") -> Trajectory:
    from tests.normalize_spans import span
    from trajhub.normalizers.model import STATUS_ERROR

    kind = "openinference.span.kind"
    node = '{{"langgraph_node": "{}"}}'.format
    spans = [
        span("r", "", "LangGraph", 0, 100, {kind: "CHAIN", "output.value": root_output}),
        span("m", "r", "llm", 1, 10, {kind: "LLM", "metadata": node("agent")}),
        span(
            "t",
            "r",
            "book",
            11,
            20,
            {kind: "TOOL", "tool.name": "book", "metadata": node("tools")},
            status=STATUS_ERROR if last_fails else 0,
            message="ValueError: rejected",
        ),
    ]
    if retried:
        spans.append(span("m2", "r", "llm", 21, 30, {kind: "LLM", "metadata": node("agent")}))
    return derive(spans).trajectory


def test_root_carries_the_error_only_its_failed_last_step_recorded() -> None:
    """§7: some instrumentations mark only the failing child; a run whose last call failed
    and that produced no output ended in that error."""
    failed = _oi_run(last_fails=True, retried=False)
    error = failed.root_step.basic_info.error
    assert error is not None and error.msg == "ValueError: rejected"
    assert failed.root_step.metadata["error_from_step"] == "t"
    # a failed call the agent recovered from (the model ran again) is not the run's error
    assert _oi_run(last_fails=True, retried=True).root_step.basic_info.error is None
    # nor is one of a run that answered
    answered = _oi_run(last_fails=True, retried=False, root_output='{"messages": []}')
    assert answered.root_step.basic_info.error is None
    assert _oi_run(last_fails=False, retried=False).root_step.basic_info.error is None


def test_a_tool_named_transfer_to_is_a_handoff_only_to_an_agent() -> None:
    from tests.normalize_spans import span

    kind = "openinference.span.kind"
    spans = [
        span("r", "", "LangGraph", 0, 100, {kind: "CHAIN", "output.value": "done"}),
        span("m", "r", "llm", 1, 10, {kind: "LLM", "metadata": '{"langgraph_node": "agent"}'}),
        span(
            "t",
            "r",
            "transfer_to_savings",
            11,
            20,
            {kind: "TOOL", "tool.name": "transfer_to_savings", "output.value": "moved 10 EUR"},
        ),
    ]
    (tool,) = [s for s in derive(spans).trajectory.agent_steps[0].steps if s.type == "tool"]
    assert "handoff" not in tool.metadata  # no agent called "savings" ran: a banking tool


DUAL_WRITE = sorted(c for c, _ in CASES if c.startswith("openinference_genai/"))


@pytest.mark.parametrize("capture", DUAL_WRITE)
def test_dual_written_model_spans_carry_both_conventions(capture: str) -> None:
    """The openinference_genai captures do write each model call's tokens twice (so the token
    tests above, which want each call's count once, test the dual write), and are read as
    OpenInference."""
    spans = [s for spans in load_traces(CAPTURES[capture]).values() for s in spans]
    models = [s for s in spans if s.attributes.get("openinference.span.kind") == "LLM"]
    assert models
    for span in models:
        if "llm.token_count.prompt" not in span.attributes:
            continue  # the failed call of model_failure reported no usage
        assert span.attributes["gen_ai.usage.input_tokens"] == span.attributes[
            "llm.token_count.prompt"]
        assert span.attributes.get("gen_ai.operation.name") == "chat"
    trajectory = _run(CAPTURES[capture])
    assert all(
        s.metadata.get("span_type") == "LLM"
        for agent in trajectory.agent_steps for s in agent.steps if s.type == "model"
    )


def test_create_agent_hooks_and_routing_are_not_agents() -> None:
    """§7: an instrumentation that reports a create_agent middleware hook or routing function as
    an `invoke_agent` span of its own does not make it an agent or a step; only the agent that
    runs it is one, with its model call."""
    from tests.normalize_spans import span

    op = "gen_ai.operation.name"

    def agent(span_id: str, name: str, start: int, end: int) -> Any:
        return span(span_id, "a" if span_id != "a" else "", f"invoke_agent {name}", start, end,
                    {op: "invoke_agent", "gen_ai.agent.name": name})

    spans = [
        agent("a", "assistant", 0, 100),
        agent("h1", "note_turn.before_model", 1, 2),
        span("m", "a", "chat fake-gpt", 3, 10, {op: "chat", "gen_ai.usage.input_tokens": 5,
                                                 "gen_ai.usage.output_tokens": 1}),
        agent("h2", "ToolCallLimitMiddleware.after_model", 11, 12),
        agent("r", "model_to_tools", 13, 14),
        agent("h3", "check_reply.after_agent", 15, 16),
    ]
    trajectory = derive(spans).trajectory
    assert [a.name for a in trajectory.agent_steps] == ["assistant"]
    assert [s.type for s in trajectory.agent_steps[0].steps] == ["model"]
    assert trajectory.root_step.metrics_info.input_tokens == 5


#: `create_agent`'s middleware hooks (`<middleware>.<hook>`) as node runs, whatever prefix the
#: instrumentation gives the span (Traceloop's `execute_task `)
_HOOK = re.compile(r"(^|\s)\w+\.(before|after)_(model|agent)$|\.wrap_(model|tool)_call$")
#: clients that send no span per hook (tests/capture/README.md, "Known gaps": the OTel GenAI
#: instrumentation reports only agents, model and tool calls; traceloop_js names chain spans by
#: their class)
_NO_HOOK_SPANS = frozenset({"otel_genai", "otel_genai_span_and_event", "traceloop_js"})
_HOOK_CASES = [(c, s) for c, s in ALL_CASES if s in ("create_agent_middleware", "deep_agent")]


@pytest.mark.parametrize(("capture", "shape"), _HOOK_CASES)
def test_create_agent_hook_time_stays_inside_its_agent(capture: str, shape: str) -> None:
    """§7: a middleware hook's span is no step, and its time lies inside the outermost agent's
    (both read in whole ms, so up to 1 ms of rounding at each end)."""
    traces = load_traces(CAPTURES[capture])
    spans = max(traces.values(), key=lambda s: (len(s), s[0].trace_id))
    hooks = [s for s in spans if _HOOK.search(s.name)]
    if capture.split("/")[0] in _NO_HOOK_SPANS:
        assert hooks == []
        return
    assert hooks, "the capture holds its hooks' spans"
    trajectory = derive(spans).trajectory
    steps = [s for a in trajectory.agent_steps for s in a.steps]
    assert not [s.name for s in steps if _HOOK.search(s.name)]
    outer = trajectory.agent_steps[0].basic_info
    start = outer.started_at_ms
    duration = outer.duration_ms
    assert start is not None and duration is not None
    for hook in hooks:
        assert start - 1 <= hook.start_ns // 1_000_000, hook.name
        assert hook.end_ns // 1_000_000 <= start + duration + 1, hook.name
