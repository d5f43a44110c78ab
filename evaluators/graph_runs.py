"""The LangGraph node steps of each graph run, in agentevals' GraphTrajectory shape.

agentevals reads a thread's checkpoints (`extract_langgraph_trajectory_from_thread`) and gives,
per graph run, the node names in order: `__start__` first for a run started from an input (not
for one resumed after an interrupt), `__interrupt__` right after the node that interrupted, and
a subgraph's nodes as `<parent node>:<node>`. trajhub has no checkpoints, only what the
instrumentations record: the `langgraph_node` / `langgraph_step` metadata on the model and tool
steps of each node. From it:

- a node visit is one LangGraph task: the steps with the same `langgraph_checkpoint_ns`
  ("<node>:<task id>") when the normalizer kept it, else a run of steps with the same (node,
  step counter), as `TrajectoryView` reads graph nodes. Without the task id, parallel tasks of
  one node in one super-step (`Send`, e.g. the prebuilt ReAct agent's one `tools` task per tool
  call) read as one visit. A node that ran no model or tool step leaves no trace and is not
  listed;
- a new graph run starts where the top-level graph's step counter goes back (a fresh
  invocation in the same trace); one trace is usually one run;
- a visit inside a subgraph is prefixed with its parent node: from the checkpoint namespace
  ("parent:<id>|node:<id>"), as agentevals does, else with the name of the nested agent entry,
  which is its node name in the parent graph (docs/trajectory-rules.md §7);
- a run was resumed when the trace's input is a LangGraph `Command(resume=...)`;
- the last run was interrupted when the root output carries LangGraph's `__interrupt__` key or
  a step's error is a GraphInterrupt / NodeInterrupt.
"""

from __future__ import annotations

from collections.abc import Mapping

from trajhub.evaluators.trajectory_view import (
    META_GRAPH_CHECKPOINT_NS,
    META_GRAPH_NODE,
    META_GRAPH_STEP,
    TrajectoryView,
)
from trajhub.normalizers.coerce import to_int
from trajhub.normalizers.document import decode_json_text

START = "__start__"
INTERRUPT = "__interrupt__"
_INTERRUPT_ERRORS = ("GraphInterrupt", "NodeInterrupt", "Interrupt(")


def graph_runs(view: TrajectoryView) -> list[list[str]]:
    """Node names per graph run; [] when the trajectory has no graph node metadata."""
    top = next((placed.agent.id for placed in view.placed
                if placed.step.metadata.get(META_GRAPH_NODE)), None)
    if top is None:
        return []
    runs: list[list[str]] = []
    last_task: tuple[str, ...] | None = None
    last_counter: int | None = None
    for placed in view.placed:
        step, agent = placed.step, placed.agent
        node = step.metadata.get(META_GRAPH_NODE, "")
        if not node:
            continue
        counter = step.metadata.get(META_GRAPH_STEP, "")
        namespace = step.metadata.get(META_GRAPH_CHECKPOINT_NS, "")
        if namespace:
            # "parent:<task id>|node:<task id>" inside a subgraph: agentevals' prefix rule
            nested = "|" in namespace
            name = f"{namespace.split(':')[0]}:{node}" if nested else node
            task: tuple[str, ...] = (namespace,)
        else:
            nested = agent.id != top
            name = f"{agent.name}:{node}" if nested and agent.name else node
            task = (agent.id, node, counter)
        if not nested:
            number = to_int(counter)
            if not runs or (
                number is not None and last_counter is not None and number < last_counter
            ):
                resumed = not runs and _resumed(view.input)  # only the trace's first run
                runs.append([] if resumed else [START])
                last_task = None
            if number is not None:
                last_counter = number
        if task != last_task:
            runs[-1].append(name)
            last_task = task
    if _interrupted(view):
        runs[-1].append(INTERRUPT)
    return runs


def _resumed(root_input: str) -> bool:
    decoded = decode_json_text(root_input)
    if isinstance(decoded, Mapping):
        return "resume" in decoded and set(decoded) <= {"resume", "goto", "update", "graph"}
    return isinstance(decoded, str) and decoded.lstrip().startswith("Command(resume=")


def _interrupted(view: TrajectoryView) -> bool:
    output = decode_json_text(view.output)
    if isinstance(output, Mapping) and INTERRUPT in output:
        return True
    errors = [step.error.msg for step in view.steps if step.error is not None]
    if view.error is not None:
        errors.append(view.error.msg)
    return any(marker in msg for msg in errors for marker in _INTERRUPT_ERRORS)
