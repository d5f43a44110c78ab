"""What a dataset item expects of a trajectory.

Seed 001's `ExpectedBehavior` (agents, tools per agent), Mastra's expected tool order, and an
optional expected trajectory of steps for agentevals-style matching. Stored as JSON with the item,
so `from_dict` validates and names the offending field: a bad expectation must fail when the set
is saved, not silently when it is evaluated.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from trajhub.evaluators.graph_runs import graph_runs
from trajhub.evaluators.trajectory_view import parse_trajectory

#: Step types an expected trajectory can name (model steps are not matched: their content is free).
EXPECTED_STEP_TYPES = ("tool", "agent", "graph")
#: Argument matchers, as agentevals names them (docs/evaluators.md §a3).
ARGS_MATCH_MODES = ("exact", "ignore", "subset", "superset")

#: An argument matcher as JSON can name it: a mode, or the dotted key paths to compare (only
#: those), as agentevals' per-tool overrides take them. The Python API also takes a callable.
ArgsMatchSpec = str | tuple[str, ...]


class ExpectationsError(ValueError):
    """A malformed expectations document; `field` is the dotted path of the offending field."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


def check_args_match_spec(value: Any) -> ArgsMatchSpec:
    """A matcher named in JSON: a mode name or a non-empty list of key paths (returned as a
    tuple). ValueError says what is wrong. An empty list is refused: agentevals silently falls
    back to the default matcher for it, which is never what the author of `[]` meant."""
    if isinstance(value, str):
        if value not in ARGS_MATCH_MODES:
            raise ValueError(
                f"must be one of {', '.join(ARGS_MATCH_MODES)} or a list of key paths"
            )
        return value
    if isinstance(value, list | tuple):
        if not value:
            raise ValueError(
                "an empty list of key paths would compare nothing; name at least one key path,"
                " or use 'ignore'"
            )
        for path in value:
            if not isinstance(path, str) or not path:
                raise ValueError("key paths must be non-empty strings")
        return tuple(value)
    raise ValueError(f"must be one of {', '.join(ARGS_MATCH_MODES)} or a list of key paths")


@dataclass(frozen=True)
class ExpectedStep:
    """One expected step. `args` None means "not specified": any arguments match. `args_match`
    overrides the evaluator's argument matcher for this step only. `turn` groups tool steps the
    agent issues together (one model turn); steps of a turn are listed together, turns in order.
    """

    type: str
    name: str
    args: Any = None
    args_match: ArgsMatchSpec | None = None
    turn: int | None = None

    def __post_init__(self) -> None:
        if self.type not in EXPECTED_STEP_TYPES:
            raise ExpectationsError("type", f"must be one of {', '.join(EXPECTED_STEP_TYPES)}")
        if not self.name:
            raise ExpectationsError("name", "must be a non-empty string")
        if self.args_match is not None:
            try:
                object.__setattr__(self, "args_match", check_args_match_spec(self.args_match))
            except ValueError as err:
                raise ExpectationsError("args_match", str(err)) from None
        if self.turn is not None and (
            isinstance(self.turn, bool) or not isinstance(self.turn, int) or self.turn < 0
        ):
            raise ExpectationsError("turn", "must be an integer >= 0")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "name": self.name}
        if self.args is not None:
            out["args"] = self.args
        if self.args_match is not None:
            out["args_match"] = (
                self.args_match if isinstance(self.args_match, str) else list(self.args_match)
            )
        if self.turn is not None:
            out["turn"] = self.turn
        return out


@dataclass(frozen=True)
class Expectations:
    #: agents expected to run (seed 001 `agents`)
    agents: tuple[str, ...] = ()
    #: tools expected per agent (seed 001 `tools`)
    tools: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: the expected sequence of tool calls (Mastra `expectedToolOrder`)
    tool_order: tuple[str, ...] = ()
    #: the expected trajectory for trajectory_match; None when the item does not specify one
    trajectory: tuple[ExpectedStep, ...] | None = None
    #: node names per graph run, as agentevals' GraphTrajectory `steps` (graph_trajectory_match)
    graph_runs: tuple[tuple[str, ...], ...] | None = None

    def __post_init__(self) -> None:
        # Python callers pass lists; store tuples so equality does not depend on the container.
        object.__setattr__(self, "agents", tuple(self.agents))
        object.__setattr__(self, "tool_order", tuple(self.tool_order))
        object.__setattr__(self, "tools", {a: tuple(t) for a, t in self.tools.items()})
        if self.trajectory is not None:
            object.__setattr__(self, "trajectory", tuple(self.trajectory))
            _check_turns(self.trajectory)
        if self.graph_runs is not None:
            object.__setattr__(self, "graph_runs", tuple(tuple(run) for run in self.graph_runs))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "agents": list(self.agents),
            "tools": {agent: list(tools) for agent, tools in self.tools.items()},
            "tool_order": list(self.tool_order),
        }
        if self.trajectory is not None:
            out["trajectory"] = [step.to_dict() for step in self.trajectory]
        if self.graph_runs is not None:
            out["graph_runs"] = [list(run) for run in self.graph_runs]
        return out

    @classmethod
    def from_dict(cls, data: Any) -> Expectations:
        if not isinstance(data, Mapping):
            raise ExpectationsError("expectations", "must be an object")
        unknown = sorted(
            set(data) - {"agents", "tools", "tool_order", "trajectory", "graph_runs"}
        )
        if unknown:
            raise ExpectationsError(str(unknown[0]), "unknown field")
        tools_raw = data.get("tools", {})
        if not isinstance(tools_raw, Mapping):
            raise ExpectationsError("tools", "must be an object of agent name -> list of tools")
        tools = {
            _agent_key(agent): _names(value, f"tools.{agent}") for agent, value in tools_raw.items()
        }
        trajectory_raw = data.get("trajectory")
        trajectory: tuple[ExpectedStep, ...] | None = None
        if trajectory_raw is not None:
            if not isinstance(trajectory_raw, list):
                raise ExpectationsError("trajectory", "must be a list of steps")
            trajectory = tuple(
                _expected_step(raw, f"trajectory[{i}]") for i, raw in enumerate(trajectory_raw)
            )
            _check_turns(trajectory)
        graph_raw = data.get("graph_runs")
        graph: tuple[tuple[str, ...], ...] | None = None
        if graph_raw is not None:
            if not isinstance(graph_raw, list):
                raise ExpectationsError("graph_runs", "must be a list of lists of node names")
            graph = tuple(_names(run, f"graph_runs[{i}]") for i, run in enumerate(graph_raw))
            if any(not run for run in graph):
                empty = next(i for i, run in enumerate(graph) if not run)
                raise ExpectationsError(f"graph_runs[{empty}]", "a graph run has node steps")
        return cls(
            agents=_names(data.get("agents", []), "agents"),
            tools=tools,
            tool_order=_names(data.get("tool_order", []), "tool_order"),
            trajectory=trajectory,
            graph_runs=graph,
        )


def expectations_from_trajectory(doc: Mapping[str, Any]) -> Expectations:
    """Pre-fill expectations from a (production) trajectory: what it did becomes what is expected,
    for a human to prune before the item joins a dataset.

    The expected trajectory lists the agents, then the graph node visits, then the tool calls with
    their decoded arguments and their turns (numbered from 0: calls issued together share one);
    each level of trajectory_match reads only the steps of its type. Agent and graph steps carry
    no args: their input is free text, not arguments. `graph_runs` records the LangGraph node
    steps of each graph run (graph_runs.py), when the trajectory has them.
    """
    view = parse_trajectory(doc)
    runs = graph_runs(view)
    steps: list[ExpectedStep] = [ExpectedStep("agent", a.name) for a in view.agents if a.name]
    steps += [ExpectedStep("graph", node.name) for node in view.graph_nodes if node.name]
    turns: dict[int, int] = {}
    for call in view.tool_calls:
        if call.name:
            turn = turns.setdefault(call.turn, len(turns))
            steps.append(ExpectedStep("tool", call.name, args=call.arguments, turn=turn))
    return Expectations(
        agents=tuple(name for name in view.agent_names() if name),
        tools={agent: tools for agent, tools in view.tools_by_agent().items() if agent and tools},
        tool_order=tuple(call.name for call in view.tool_calls if call.name),
        trajectory=tuple(steps),
        graph_runs=tuple(tuple(run) for run in runs) if runs else None,
    )


def _check_turns(steps: tuple[ExpectedStep, ...]) -> None:
    """Turns are given on every tool step or on none, and never go back: a turn's steps are
    listed together, so the listing order is the order of the turns."""
    tools = [(i, step) for i, step in enumerate(steps) if step.type == "tool"]
    with_turn = [i for i, step in tools if step.turn is not None]
    if with_turn and len(with_turn) != len(tools):
        missing = next(i for i, step in tools if step.turn is None)
        raise ExpectationsError(
            f"trajectory[{missing}].turn", "give a turn on every tool step or on none"
        )
    previous = -1
    for i, step in tools:
        if step.turn is not None:
            if step.turn < previous:
                raise ExpectationsError(
                    f"trajectory[{i}].turn",
                    f"turns must not go back ({step.turn} after {previous}); list a turn's"
                    " steps together",
                )
            previous = step.turn
    for i, step in enumerate(steps):
        if step.turn is not None and step.type != "tool":
            raise ExpectationsError(f"trajectory[{i}].turn", "only tool steps have a turn")


def _agent_key(agent: Any) -> str:
    if not isinstance(agent, str) or not agent:
        raise ExpectationsError("tools", f"agent name {agent!r} must be a non-empty string")
    return agent


def _names(value: Any, path: str) -> tuple[str, ...]:
    if not isinstance(value, list | tuple):
        raise ExpectationsError(path, "must be a list of strings")
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item:
            raise ExpectationsError(f"{path}[{i}]", "must be a non-empty string")
    return tuple(value)


def _expected_step(raw: Any, path: str) -> ExpectedStep:
    if not isinstance(raw, Mapping):
        raise ExpectationsError(path, "must be an object")
    unknown = sorted(set(raw) - {"type", "name", "args", "args_match", "turn"})
    if unknown:
        raise ExpectationsError(f"{path}.{unknown[0]}", "unknown field")
    for key in ("type", "name"):
        if not isinstance(raw.get(key), str):
            raise ExpectationsError(f"{path}.{key}", "must be a string")
    _check_json(raw.get("args"), f"{path}.args")
    turn = raw.get("turn")
    if isinstance(turn, float) and turn.is_integer():
        # JSON counts 2.0 as the integer 2 (and so does the REST API's schema)
        turn = int(turn)
    try:
        return ExpectedStep(raw["type"], raw["name"], raw.get("args"), raw.get("args_match"), turn)
    except ExpectationsError as err:
        raise ExpectationsError(f"{path}.{err.field}", err.problem) from None


def _check_json(value: Any, path: str) -> None:
    """Args are stored as JSON; reject what would not survive the round trip."""
    if value is None or isinstance(value, str | bool | int):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ExpectationsError(path, "must be a finite number")
        return
    if isinstance(value, list):
        for i, item in enumerate(value):
            _check_json(item, f"{path}[{i}]")
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ExpectationsError(path, "object keys must be strings")
            _check_json(item, f"{path}.{key}")
        return
    raise ExpectationsError(path, f"must be JSON, got {type(value).__name__}")
