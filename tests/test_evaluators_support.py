"""Builders of small trajectory documents (trajectory.schema.json) for the evaluator tests.

Named test_evaluators_* so it sits with the tests it serves; it holds no tests itself.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]

SPEC_DIR = Path(__file__).parent / "fixtures" / "spec"
_ids = itertools.count(1)


def _basic(duration: int = 10, error: tuple[int, str] | None = None) -> dict[str, Any]:
    info: dict[str, Any] = {"started_at": "1715400000000", "duration": str(duration)}
    if error is not None:
        info["error"] = {"code": error[0], "msg": error[1]}
    return info


def tool(
    name: str,
    args: Any = None,
    *,
    output: str = "ok",
    error: tuple[int, str] | None = None,
    raw_input: str | None = None,
    metadata: dict[str, str] | None = None,
) -> dict[str, Any]:
    step: dict[str, Any] = {
        "id": f"s{next(_ids)}",
        "type": "tool",
        "name": name,
        "input": raw_input if raw_input is not None else json.dumps(args or {}),
        "output": output,
        "basic_info": _basic(error=error),
    }
    if metadata:
        step["metadata"] = metadata
    return step


def model(
    output: str = "", *, input_tokens: int = 0, output_tokens: int = 0, node: str | None = None
) -> dict[str, Any]:
    step: dict[str, Any] = {
        "id": f"s{next(_ids)}",
        "type": "model",
        "name": "chat",
        "input": "",
        "output": output,
        "basic_info": _basic(),
        "model_info": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    }
    if node is not None:
        step["metadata"] = {"langgraph_node": node}
    return step


def agent(
    name: str, *steps: dict[str, Any], input: str = "", id: str | None = None
) -> dict[str, Any]:
    return {
        "id": id or f"a{next(_ids)}",
        "parent_id": "root",
        "name": name,
        "input": input,
        "output": "",
        "basic_info": _basic(),
        "steps": list(steps),
    }


def trajectory(
    *agents: dict[str, Any], input: str = "question", output: str = "answer", duration: int = 100
) -> dict[str, Any]:
    return {
        "id": "trace-1",
        "root_step": {
            "id": "root",
            "name": "session",
            "input": input,
            "output": output,
            "basic_info": _basic(duration),
        },
        "agent_steps": list(agents),
    }


def tools_run(*names: str, agent_name: str = "simple_agent") -> dict[str, Any]:
    """One agent, one model turn per tool call (sequential calls), then a final model turn."""
    steps: list[dict[str, Any]] = []
    for name in names:
        steps += [model(), tool(name)]
    return trajectory(agent(agent_name, *steps, model("done")))


def spec_example() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SPEC_DIR / "trajectory.example.json").read_text("utf-8"))
    return loaded


def validate(doc: dict[str, Any]) -> None:
    schema = json.loads((SPEC_DIR / "trajectory.schema.json").read_text("utf-8"))
    jsonschema.validate(doc, schema)
