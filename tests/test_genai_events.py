"""The official OTel GenAI LangChain instrumentation sending its message content as OTLP log
events gives the trajectory it gives with the content on its spans.

Each capture of `otel_genai_event_only` (content in `gen_ai.client.inference.operation.details`
log events only) and `otel_genai_span_and_event` (on the spans and in the events) is replayed
whole, over the transport it was captured on (tests/captures.py `replay_signals`), into a
project of its own on one server, and so is its `SPAN_ONLY` twin (`otel_genai`, same shape and
mode). The `invoke` captures send their logs before their traces, the `stream` ones after;
two send theirs only once their trajectory is final.
Both trajectories, read over REST, must give the same steps (kind, name, agent, status, usage,
payloads); and the model steps' payloads must be the script's (the ground truth,
`real-clients/ground_truth/`), not merely the twin's.

opentelemetry-util-genai 1.3b0 puts content in events for model calls only: in `EVENT_ONLY`
its tool spans carry no arguments or result and its agent and workflow spans no messages, and
nothing else carries them (tests/capture/README.md, "Content as log events"). So `EVENT_ONLY`
runs are compared on everything but those payloads, which are compared for `SPAN_AND_EVENT`.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from typing import Any

import httpx
import pytest

from tests.captures import CAPTURES, EVENT_CLIENTS, capture_runs, replay_signals
from tests.genai_events_support import documents, has_model_payloads, lines, view
from tests.harness import ServerProcess, final_trajectory, wait_for

GROUND_TRUTH = CAPTURES / "ground_truth"
RUNS = capture_runs()
EVENT_RUNS = sorted(run for run in RUNS if run.split("/")[0] in EVENT_CLIENTS)
RUNS_OF_TWINS = sorted({"otel_genai/" + r.split("/")[1] for r in EVENT_RUNS})
#: the client whose tool, agent and workflow spans lose their payloads (no event carries them)
MODEL_CONTENT_ONLY = "otel_genai_event_only"


def truth_of(run: str) -> dict[str, Any]:
    return json.loads((GROUND_TRUTH / f"{run.split('/')[1].split('.')[0]}.json").read_text())


#: the runs of one trace: a shape of several (its ground truth lists `runs`, as an interrupted
#: run and its resume) has its payloads checked run by run in tests/test_normalize_interrupts.py,
#: from the spans (so not in EVENT_ONLY, whose content is in its log records only)
ONE_TRACE_RUNS = [run for run in EVENT_RUNS if "runs" not in truth_of(run)]


def twin(run: str) -> str:
    return "otel_genai/" + run.split("/")[1]


def logs_first(run: str) -> bool:
    return run.endswith(".invoke")


def order(run: str) -> tuple[str, str]:
    return ("logs", "traces") if logs_first(run) else ("traces", "logs")


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@pytest.fixture(scope="module")
def docs(server: ServerProcess) -> dict[str, dict[str, Any]]:
    """run → its main trajectory document, for every event run and every twin, each replayed
    into a project of its own."""
    wanted: dict[str, tuple[str, str]] = {}
    for run in [*EVENT_RUNS, *RUNS_OF_TWINS]:
        project = "ev-" + uuid.uuid4().hex[:12]
        spans = replay_signals(run, server.http, server.grpc, project, order(run))
        wanted[run] = (project, spans.most_common(1)[0][0])
    return documents(server.http, wanted)


def test_every_shape_is_replayed_in_both_orders_over_both_transports() -> None:
    assert len(EVENT_RUNS) == 2 * len(RUNS_OF_TWINS)
    for client in EVENT_CLIENTS:
        runs = [r for r in EVENT_RUNS if r.startswith(client + "/")]
        combos = {(logs_first(r), {c.protocol for c in RUNS[r]}.pop()) for r in runs}
        assert combos == {(True, "http"), (True, "grpc"), (False, "http"), (False, "grpc")}


@pytest.mark.parametrize("run", EVENT_RUNS)
def test_event_run_gives_its_span_only_twins_steps(docs: dict[str, dict[str, Any]],
                                                   run: str) -> None:
    """Kind, name, agent, status and usage of every step: none of these is content, so they
    are on the spans in every content mode."""
    assert lines(view(docs[run], model_payloads=False, other_payloads=False)) == lines(
        view(docs[twin(run)], model_payloads=False, other_payloads=False))


@pytest.mark.parametrize("run", EVENT_RUNS)
def test_event_run_gives_its_span_only_twins_trajectory(docs: dict[str, dict[str, Any]],
                                                        run: str) -> None:
    others = not run.startswith(MODEL_CONTENT_ONLY + "/")
    assert lines(view(docs[run], other_payloads=others)) == lines(
        view(docs[twin(run)], other_payloads=others))


def _model_steps(doc: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(agent name, step) of every model step, in start order."""
    steps = [(a["name"], s) for a in doc["agent_steps"] for s in a["steps"]
             if s["type"] == "model"]
    return sorted(steps, key=lambda x: int(x[1]["basic_info"]["started_at"]))


@pytest.mark.parametrize("run", ONE_TRACE_RUNS)
def test_event_run_payloads_are_the_scripts(docs: dict[str, dict[str, Any]], run: str) -> None:
    truth = truth_of(run)
    doc = docs[run]
    # each agent's model calls: their usage, and the answer of those that answered
    want: dict[str, Counter[tuple[int, int, str | None]]] = {}
    for act in truth["activations"]:
        for s in act["steps"]:
            if s["type"] != "model":
                continue
            message: dict[str, Any] = {"content": s["content"], "role": "assistant"}
            if s["tool_calls"]:
                message["tool_calls"] = s["tool_calls"]
            answer = None if s["error"] else canonical(message)
            want.setdefault(act["agent"], Counter())[
                (s["input_tokens"], s["output_tokens"], answer)] += 1
    got: dict[str, Counter[tuple[int, int, str | None]]] = {}
    for agent, s in _model_steps(doc):
        answer = None if s["basic_info"].get("error") else s.get("output")
        got.setdefault(agent, Counter())[
            (s["model_info"]["input_tokens"], s["model_info"]["output_tokens"], answer)] += 1
    assert got == want
    # the first model call was asked the user's request
    first_input = json.loads(_model_steps(doc)[0][1]["input"])
    assert {"content": truth["user_request"], "role": "user"} in first_input
    if run.startswith(MODEL_CONTENT_ONLY + "/"):
        return
    # each tool call's arguments, and the result of those the script says (a handoff's result
    # is the framework's, a failed call's its error)
    def scripted(name: str, call_id: str | None, arguments: str | None,
                 output: str | None) -> tuple[str, str | None, str | None, str | None]:
        return (name, call_id, arguments, output if call_id in with_output else None)

    with_output = {s["tool_call_id"] for act in truth["activations"] for s in act["steps"]
                   if s["type"] == "tool" and s["error"] is None and s["handoff_to"] is None}
    tools = Counter(scripted(s["name"], s["metadata"].get("tool_call_id"), s.get("input"),
                             s.get("output"))
                    for a in doc["agent_steps"] for s in a["steps"] if s["type"] == "tool")
    assert tools == Counter(scripted(s["name"], s["tool_call_id"], canonical(s["arguments"]),
                                     s["output"])
                            for act in truth["activations"] for s in act["steps"]
                            if s["type"] == "tool")


#: an EVENT_ONLY run of each transport, for logs that come after the trajectory was final
LATE = [next(r for r in EVENT_RUNS if r.startswith(MODEL_CONTENT_ONLY + "/")
             and RUNS[r][0].protocol == transport) for transport in ("http", "grpc")]


@pytest.mark.parametrize("run", LATE)
def test_logs_after_the_final_trajectory_fill_it(server: ServerProcess, project: str,
                                                 docs: dict[str, dict[str, Any]],
                                                 run: str) -> None:
    """The trajectory derived from the spans alone is final; the logs then sent give it a new
    revision that has their content: the twin's trajectory."""
    trace_id = replay_signals(run, server.http, server.grpc, project,
                              ("traces",)).most_common(1)[0][0]
    with httpx.Client() as client:
        first = final_trajectory(client, server.http, project, trace_id)
        revision = int(first.headers["x-trajectory-revision"])
        replay_signals(run, server.http, server.grpc, project, ("logs",))

        def filled() -> dict[str, Any] | None:
            r = final_trajectory(client, server.http, project, trace_id)
            doc: dict[str, Any] = r.json()
            newer = int(r.headers["x-trajectory-revision"]) > revision
            return doc if newer and has_model_payloads(doc) else None

        doc = wait_for(filled, timeout=15, interval=0.2, what=f"{run}: a revision with the logs")
    assert lines(view(doc, other_payloads=False)) == lines(
        view(docs[twin(run)], other_payloads=False))
