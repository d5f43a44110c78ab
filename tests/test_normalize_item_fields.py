"""Evaluation item fields from a trajectory: the user's request, the final answer, the rest.

Expected values are the scripted run's (tests/fake_agent.py: USER_QUESTION, react_script's last
turn) and the Eino fixtures' ground truth, never trajhub's output.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.normalize_support import FIXTURES, capture_sets, load_traces
from trajhub.normalizers import derive, trajectory_to_dict
from trajhub.normalizers.item_fields import PointerError, item_fields

CAPTURES = capture_sets()
QUESTION = "What's the weather in Paris, what is 2+3, and what is 1/0?"
ANSWER = "It is sunny and 22C in Paris. 2 + 3 = 5. 1/0 is undefined (division by zero)."


def _document(files: list[Path]) -> dict[str, Any]:
    traces = load_traces(files)
    spans = max(traces.values(), key=lambda s: (len(s), s[0].trace_id))
    return trajectory_to_dict(derive(spans).trajectory)


@pytest.mark.parametrize(
    "capture", sorted(n for n in CAPTURES if n.split("/")[1:2] == ["react.prebuilt.stream"])
)
def test_chat_run_gives_question_and_final_answer(capture: str) -> None:
    fields = item_fields(_document(CAPTURES[capture]))
    assert fields.input == QUESTION
    assert fields.reference_output == ANSWER
    assert fields.input != fields.reference_output
    assert fields.metadata["trace_id"]


@pytest.mark.parametrize("export", ["cozeloop", "apmplus"])
def test_eino_run(export: str) -> None:
    truth = json.loads((FIXTURES / "eino-real" / "react_tools" / "ground_truth.json").read_text())
    fields = item_fields(_document(CAPTURES[f"eino-real/react_tools/{export}"]))
    assert fields.input == truth["user_request"]
    assert fields.reference_output == truth["final_answer"]


def _doc(root_input: str, root_output: str) -> dict[str, Any]:
    return {"id": "t1", "root_step": {"input": root_input, "output": root_output}}


def test_conversation_before_the_request_goes_to_metadata() -> None:
    history = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "what is 2+2?"},
    ]
    final = {
        "role": "assistant",
        "content": "4",
        "tool_calls": [{"id": "c", "name": "calc", "arguments": {"e": "2+2"}}],
    }
    fields = item_fields(_doc(json.dumps(history), json.dumps(final)))
    assert fields.input == "what is 2+2?"
    assert fields.reference_output == "4"
    assert fields.metadata["input_messages"] == history
    assert fields.metadata["final_message"] == final


def test_documents_of_older_normalizers_give_the_same_fields() -> None:
    """Stored before payloads were canonical: the LangGraph state as the instrumentation sent."""
    state_in = {"messages": [{"type": "human", "data": {"content": "q?", "type": "human"}}]}
    state_out = {
        "messages": [
            {"type": "human", "data": {"content": "q?", "type": "human"}},
            {"type": "ai", "data": {"content": "a.", "type": "ai", "tool_calls": []}},
        ]
    }
    fields = item_fields(_doc(json.dumps(state_in), json.dumps(state_out)))
    assert (fields.input, fields.reference_output) == ("q?", "a.")


def test_not_chat_shaped_runs_keep_their_input_and_output() -> None:
    fields = item_fields(_doc('{"query": "x", "k": 3}', '{"hits": [1, 2]}'))
    assert fields.input == {"query": "x", "k": 3}
    assert fields.reference_output == {"hits": [1, 2]}
    plain = item_fields(_doc("just text", ""))
    assert (plain.input, plain.reference_output) == ("just text", None)


def test_pointers_choose_fields_of_custom_states() -> None:
    doc = _doc('{"task": {"question": "q?"}, "a/b": 1}', '{"report": {"summary": "s."}}')
    fields = item_fields(doc, input_pointer="/task/question", output_pointer="/report/summary")
    assert (fields.input, fields.reference_output) == ("q?", "s.")
    assert fields.metadata["run_input"] == {"task": {"question": "q?"}, "a/b": 1}
    assert item_fields(doc, input_pointer="/a~1b").input == 1  # RFC 6901 escape
    missing = item_fields(doc, output_pointer="/report/nope")
    assert missing.reference_output is None
    assert missing.metadata["output_pointer_missing"] == "/report/nope"
    with pytest.raises(PointerError):
        item_fields(doc, input_pointer="task")
