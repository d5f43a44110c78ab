"""What the GenAI event tests compare of two trajectory documents (REST `GET
/api/v1/trajectories/{id}`): the steps, without ids, times or the service's name.

Two runs of one script under one instrumentation, one sending its message content on the spans
and one as OTLP log events, must give the same `view`."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import httpx

from tests.harness import final_trajectory

#: ids the frameworks draw at random in each run (langgraph-supervisor's transfer-back
#: messages): two captures of one shape differ in these, whatever carried the content
RANDOM_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _payload(value: Any) -> Any:
    return RANDOM_ID.sub("<uuid>", value) if isinstance(value, str) else value


def _error(step: dict[str, Any]) -> str | None:
    error = step["basic_info"].get("error")
    return None if error is None else str(error.get("msg", ""))


def _usage(step: dict[str, Any]) -> tuple[int, ...] | None:
    info = step.get("model_info")
    if info is None:
        return None
    return (info["input_tokens"], info["output_tokens"], info["input_read_cached_tokens"],
            info["input_creation_cached_tokens"], info["reasoning_tokens"])


def step_view(step: dict[str, Any], *, payloads: bool = True) -> dict[str, Any]:
    """One step: kind, name, status, usage, tool call id, and (`payloads`) input and output,
    which hold a model step's messages, its system instructions among them."""
    out = {"type": step["type"], "name": step["name"], "error": _error(step),
           "usage": _usage(step), "tool_call_id": step["metadata"].get("tool_call_id"),
           "handoff_to": step["metadata"].get("handoff_to")}
    if payloads:
        out |= {"input": _payload(step.get("input")), "output": _payload(step.get("output"))}
    return out


def view(doc: dict[str, Any], *, model_payloads: bool = True,
         other_payloads: bool = True) -> dict[str, Any]:
    """The trajectory's root and agent steps with their steps (`step_view`). Steps that ran in
    parallel start in any order, so each agent's tool and sub-agent steps are compared as
    sorted lists, its model steps in order; agent steps are sorted by name and tool calls for
    the same reason (a `Send` fan-out runs one agent three times at once). `model_payloads` /
    `other_payloads` keep the inputs and outputs of model steps / of every other step."""
    def steps(agent: dict[str, Any]) -> dict[str, Any]:
        models = [step_view(s, payloads=model_payloads) for s in agent["steps"]
                  if s["type"] == "model"]
        others = sorted((step_view(s, payloads=other_payloads) for s in agent["steps"]
                         if s["type"] != "model"), key=repr)
        return {"kinds": [s["type"] for s in agent["steps"]], "models": models,
                "others": others}

    agents = [{"name": a["name"], "error": _error(a),
               "tokens": (a["metrics_info"]["input_tokens"], a["metrics_info"]["output_tokens"]),
               **({"input": _payload(a.get("input")), "output": _payload(a.get("output"))}
                  if other_payloads else {}),
               **steps(a)} for a in doc["agent_steps"]]
    root = doc["root_step"]
    return {"root": {"name": root["name"], "error": _error(root),
                     "tokens": (root["metrics_info"]["input_tokens"],
                                root["metrics_info"]["output_tokens"]),
                     **({"input": _payload(root.get("input")),
                         "output": _payload(root.get("output"))} if other_payloads else {})},
            "agents": sorted(agents, key=repr)}


def lines(view_: dict[str, Any]) -> list[str]:
    """A view as indented JSON lines: comparing these, a failure names the lines that differ."""
    return json.dumps(view_, indent=1, sort_keys=True, ensure_ascii=False).splitlines()


def has_model_payloads(doc: dict[str, Any]) -> bool:
    """Whether every model step that answered has an output."""
    models = [s for a in doc["agent_steps"] for s in a["steps"] if s["type"] == "model"]
    return bool(models) and all(s.get("output") for s in models if _error(s) is None)


def documents(base: str, wanted: dict[str, tuple[str, str]], content_wait: float = 10
              ) -> dict[str, dict[str, Any]]:
    """key → the final trajectory document of (project, trace id). A trace whose logs came
    after it was derived gets a new revision once they are read: each document whose model
    steps lack their payloads is read again until they have them or `content_wait` seconds
    (shared by all) have passed; then it is returned as it is, for the test to say what lacks."""
    out: dict[str, dict[str, Any]] = {}
    with httpx.Client() as client:
        for key, (project, trace_id) in wanted.items():
            out[key] = final_trajectory(client, base, project, trace_id).json()
        deadline = time.monotonic() + content_wait
        for key, (project, trace_id) in wanted.items():
            while not has_model_payloads(out[key]) and time.monotonic() < deadline:
                time.sleep(0.2)
                out[key] = final_trajectory(client, base, project, trace_id).json()
    return out
