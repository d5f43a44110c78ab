"""Dataset items as JSON, and the export and import formats.

- `jsonl`: trajhub's own format, one item per line; it round-trips through import.
- `csv`: one row per item, lists and objects as JSON in their cells, for spreadsheets.
- `agentevals`: one line per item with the reference trajectory as OpenAI chat messages (with
  `tool_calls`), the form agentevals' trajectory evaluators take as `reference_outputs`.
- `atif`: one ATIF trajectory per item (docs/atif.md): the item's stored trajectory, or for an
  item without one its input and reference output as a user and an agent step; the item itself
  (id, expectations, tags, metadata) in `extra.trajhub.item`.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from typing import Any

import orjson

from trajhub.evaluators import (
    Expectations,
    ExpectationsError,
    parse_trajectory,
    to_agentevals_messages,
)
from trajhub.normalizers.atif import EXTRA_KEY, SCHEMA_VERSION, to_atif
from trajhub.normalizers.document import parse_document
from trajhub.storage.datasets import NewItem, json_text

FORMATS = ("jsonl", "csv", "agentevals", "atif")
MEDIA_TYPES = {"jsonl": "application/x-ndjson", "csv": "text/csv; charset=utf-8",
               "agentevals": "application/x-ndjson", "atif": "application/x-ndjson"}
CSV_COLUMNS = ("id", "input", "reference_output", "expected_agents", "expected_tools",
               "expected_tool_order", "expectations", "tool_calls", "source_trace_id", "tags",
               "metadata")
#: an item's moments, which an import ignores (`created_at`, `updated_at` their deprecated
#: aliases)
_STAMPS = ("created_time", "updated_time", "created_at", "updated_at")
_IMPORT_KEYS = {"id", "input", "reference_output", "expectations", "metadata", "tags",
                "source_trace_id", "trajectory", *_STAMPS, "dataset"}


def _loads(text: str | None) -> Any:
    return None if text is None else orjson.loads(text)


def _iso(ts: Any) -> str:
    return str(ts.isoformat()).replace("+00:00", "Z")


def item_json(row: Mapping[str, Any], dataset: str) -> dict[str, Any]:
    """The API form of an item row. The trajectory snapshot, when selected, is embedded as its
    stored bytes (orjson.Fragment), not re-encoded."""
    out: dict[str, Any] = {
        "id": row["id"],
        "dataset": dataset,
        "input": _loads(row["input"]),
        "reference_output": _loads(row["reference_output"]),
        "expectations": _loads(row["expectations"]),
        "metadata": _loads(row["metadata"]),
        "source_trace_id": row["source_trace_id"],
        "tags": list(row["tags"]),
        "created_time": _iso(row["created_at"]),
        "updated_time": _iso(row["updated_at"]),
        "created_at": _iso(row["created_at"]),
        "updated_at": _iso(row["updated_at"]),
    }
    if "trajectory" in row:
        out["trajectory"] = orjson.Fragment(row["trajectory"]) if row["trajectory"] else None
    return out


def jsonl_line(row: Mapping[str, Any]) -> bytes:
    item = {key: value for key, value in item_json(row, "").items()
            if key != "dataset" and key not in _STAMPS}
    return orjson.dumps(item) + b"\n"


def agentevals_line(row: Mapping[str, Any]) -> bytes:
    item = item_json(row, "")
    expectations = item["expectations"] or {}
    if row["trajectory"]:
        messages = to_agentevals_messages(orjson.loads(row["trajectory"]))
    else:
        messages = messages_from_expectations(item["input"], item["reference_output"],
                                               expectations)
    return orjson.dumps({
        "id": item["id"],
        "inputs": item["input"],
        "reference_outputs": messages,
        "metadata": {"source_trace_id": item["source_trace_id"], "tags": item["tags"],
                     "reference_output": item["reference_output"],
                     "expectations": expectations, "item_metadata": item["metadata"]},
    }) + b"\n"


def atif_line(row: Mapping[str, Any]) -> bytes:
    item = item_json(row, "")
    item_record = {key: item[key] for key in ("id", "input", "reference_output", "expectations",
                                              "tags", "metadata", "source_trace_id")}
    if row["trajectory"]:
        document = to_atif(parse_document(orjson.loads(row["trajectory"])))
    else:
        steps: list[dict[str, Any]] = [{"step_id": 1, "source": "user",
                                        "message": _text(item["input"])}]
        if item["reference_output"] is not None:
            steps.append({"step_id": 2, "source": "agent",
                          "message": _text(item["reference_output"])})
        document = {"schema_version": SCHEMA_VERSION, "trajectory_id": str(item["id"]),
                    "agent": {"name": "reference", "version": "unknown"}, "steps": steps}
    extra = document.setdefault("extra", {})
    extra.setdefault(EXTRA_KEY, {})["item"] = item_record
    return orjson.dumps(document) + b"\n"


def messages_from_expectations(item_input: Any, output: Any, expectations: Mapping[str, Any]
                                ) -> list[dict[str, Any]]:
    """Without a snapshot, the reference is what the item expects: its expected tool steps as
    assistant turns of tool calls (one per expected turn; all in one when the steps give no
    turns), then the reference output. No tool messages: the item has no tool results."""
    messages: list[dict[str, Any]] = []
    if item_input is not None:
        messages.append({"role": "user", "content": _text(item_input)})
    steps = [step for step in expectations.get("trajectory") or [] if step["type"] == "tool"]
    turns: list[list[dict[str, Any]]] = []
    for i, step in enumerate(steps):
        # turns are on every tool step or on none (Expectations checks it): None == None
        if not turns or step.get("turn") != steps[i - 1].get("turn"):
            turns.append([])
        turns[-1].append({"id": f"call_{i}", "type": "function",
                          "function": {"name": step["name"],
                                       "arguments": json.dumps(step.get("args") or {})}})
    for calls in turns:
        messages.append({"role": "assistant", "content": "", "tool_calls": calls})
    if output is not None:
        messages.append({"role": "assistant", "content": _text(output)})
    return messages


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def csv_header() -> bytes:
    return _csv_row(CSV_COLUMNS)


def csv_line(row: Mapping[str, Any]) -> bytes:
    item = item_json(row, "")
    exp = item["expectations"] or {}
    calls = []
    if row["trajectory"]:
        calls = [{"name": c.name, "arguments": c.arguments}
                 for c in parse_trajectory(orjson.loads(row["trajectory"])).tool_calls]
    return _csv_row((
        item["id"], _cell(item["input"]), _cell(item["reference_output"]),
        _cell(exp.get("agents", [])), _cell(exp.get("tools", {})),
        _cell(exp.get("tool_order", [])), _cell(exp), _cell(calls),
        item["source_trace_id"] or "", _cell(item["tags"]), _cell(item["metadata"]),
    ))


def _cell(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _csv_row(values: tuple[Any, ...]) -> bytes:
    buf = io.StringIO()
    csv.writer(buf).writerow(values)
    return buf.getvalue().encode()


class ItemImportError(ValueError):
    """A line of an import that cannot become an item; the message names the line."""


def parse_import_line(raw: bytes, lineno: int) -> NewItem:
    """One JSONL line of trajhub's format → an item. Expectations are validated here so a bad
    one fails the import, naming the line and field, rather than the evaluation later."""
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ItemImportError(f"line {lineno}: not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise ItemImportError(f"line {lineno}: must be a JSON object")
    unknown = sorted(set(doc) - _IMPORT_KEYS)
    if unknown:
        raise ItemImportError(f"line {lineno}: unknown field {unknown[0]!r}")
    try:
        expectations = Expectations.from_dict(doc.get("expectations") or {})
    except ExpectationsError as exc:
        raise ItemImportError(f"line {lineno}: expectations.{exc}") from None
    tags = doc.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise ItemImportError(f"line {lineno}: tags must be a list of strings")
    source = doc.get("source_trace_id")
    if source is not None and not isinstance(source, str):
        raise ItemImportError(f"line {lineno}: source_trace_id must be a string")
    trajectory = doc.get("trajectory")
    if trajectory is not None and not isinstance(trajectory, dict):
        raise ItemImportError(f"line {lineno}: trajectory must be an object")
    if trajectory is not None:
        # what an item's trajectory answers with (trajhub.records.documents.TrajectoryDocument)
        missing = [k for k in ("id", "root_step", "agent_steps") if k not in trajectory]
        if missing:
            raise ItemImportError(f"line {lineno}: trajectory needs {', '.join(missing)}")
    metadata = doc.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise ItemImportError(f"line {lineno}: metadata must be an object")
    return NewItem(
        input=json_text(doc.get("input")),
        reference_output=json_text(doc.get("reference_output")),
        expectations=orjson.dumps(expectations.to_dict()).decode(),
        trajectory=json_text(trajectory),
        source_trace_id=source.lower() if source else None,
        tags=tags,
        metadata=orjson.dumps(metadata).decode(),
    )

