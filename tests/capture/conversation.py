"""Capture the two-turn conversation (script.CONVERSATION) under one Python instrumentation, in
its own process (the instrumentations patch LangChain globally and the OTel tracer provider can
be set only once):

  python -m tests.capture.conversation --instr openinference

Writes tests/fixtures/sessions/<instr>/conversation/http_NNN_*.{bin,json} (the receiver's
layout, which tests/captures.py replays). The agent is a create_react_agent with a checkpointer,
invoked twice on one thread: each invocation is one trace (one turn), and the second sends only
the new question. Every run carries LangGraph's `configurable.thread_id` and the metadata
`session_id` / `user_id`, as an application sets them; each instrumentation records what it
records of them (tests/capture/README.md, "Sessions"). cozeloop Python records neither: the
application tags the thread (`tags={"thread_id": ...}`), as Coze Loop's docs have it.

`--all` captures every client, the JS one too (js/conversation.mjs, @cozeloop/langchain), then
writes the ground truth (ground_truth.conversation()).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any

from tests.capture import agents, ground_truth, script
from tests.capture.run_python import record, summary

SESSIONS = Path(__file__).parent.parent / "fixtures" / "sessions"
#: the official OpenTelemetry LangChain instrumentation (opentelemetry-instrumentation-genai-
#: langchain) is `otel_genai`
OTEL_CLIENTS = ("openinference", "traceloop", "langsmith", "otel_genai")
CLIENTS = (*OTEL_CLIENTS, "cozeloop_python")
REPO = Path(__file__).parent.parent.parent


def capture_dir(instr: str) -> Path:
    return SESSIONS / instr / "conversation"


def build() -> Any:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.prebuilt import ToolNode, create_react_agent

    spec = script.CONVERSATION
    turns = [m for t in spec["turns"] for m in t["models"]]
    model = agents.ScriptedChatModel(agent=spec["agent"], turns=turns)
    return create_react_agent(model, ToolNode([agents.get_weather, agents.add]),
                              prompt=f"You are {spec['agent']}. Use tools.", name=spec["agent"],
                              checkpointer=InMemorySaver())


def run(graph: Any, callbacks: list[Any] | None = None) -> list[str]:
    """Both turns, in order, on one thread; the answers."""
    from langchain_core.messages import HumanMessage

    config: dict[str, Any] = {
        "configurable": {"thread_id": script.CONVERSATION_THREAD_ID},
        "metadata": {"session_id": script.CONVERSATION_SESSION_ID,
                     "user_id": script.CONVERSATION_USER_ID},
        "tags": ["trajhub-capture"],
    }
    if callbacks:
        config["callbacks"] = callbacks
    answers = []
    for i, turn in enumerate(script.CONVERSATION["turns"]):
        out = graph.invoke({"messages": [HumanMessage(turn["question"], id=f"human-{i + 1}")]},
                           config)
        answers.append(str(out["messages"][-1].content))
        time.sleep(0.05)  # the turns start apart, as a person's do
    return answers


def capture(instr: str) -> Path:
    outdir = capture_dir(instr)
    tags = {"thread_id": script.CONVERSATION_THREAD_ID, "user_id": script.CONVERSATION_USER_ID}
    record(instr, outdir, zlib.crc32(f"{instr}/sessions/conversation".encode()),
           lambda callbacks: print("answers:", run(build(), callbacks)), "conversation", tags)
    return outdir


def write_ground_truth() -> Path:
    path = SESSIONS / "ground_truth.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(ground_truth.conversation(), indent=2, ensure_ascii=False) + "\n")
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--instr", choices=CLIENTS)
    group.add_argument("--all", action="store_true")
    args = parser.parse_args()
    if args.all:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        failed = [c for c in CLIENTS if subprocess.run(
            [sys.executable, "-m", "tests.capture.conversation", "--instr", c], cwd=REPO,
            env=env).returncode]
        # the JS twin (js/conversation.mjs; js/ set up as tests/capture/README.md, "JS setup",
        # says)
        script.write_json()
        if subprocess.run(["node", "conversation.mjs"], cwd=REPO / "tests" / "capture" / "js",
                          env=env).returncode:
            failed.append("cozeloop_js")
        print("ground truth:", write_ground_truth().relative_to(REPO))
        if failed:
            print("FAILED:", *failed)
        return 1 if failed else 0
    print(summary(capture(args.instr), SESSIONS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
