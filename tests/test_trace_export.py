"""`GET /traces/{id}` with format=json, streamed (service/api/views.py): the nesting of the tree
view (roots, orphans, cycles, a chain deeper than Python's recursion limit), and the streamed
body, across page ends, being the whole answer encoded at once: the nested document the test
builds by hand from its own spans, as a client reads it."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

from tests.otlp_builders import span
from trajhub.service.api import views
from trajhub.service.ingest.decode import FORMAT_OTLP
from trajhub.service.stored_logs import log_view, otlp_logs_request
from trajhub.service.stored_spans import span_view, to_model
from trajhub.storage.compression import compress
from trajhub.storage.log_reads import LogRow
from trajhub.storage.rows import SpanRow

TRACE = bytes.fromhex("0af7651916cd43dd8448eb211c80319c")


def test_tree_order_nests_children_under_parents_in_index_order() -> None:
    #        0:R  1:A(R)  2:B(R)  3:C(A)  4:O(missing parent)  5:D(A)
    ids = ["R", "A", "B", "C", "O", "D"]
    parents = ["", "R", "R", "A", "gone", "A"]
    assert views.tree_order(ids, parents) == [(0, 0), (1, 1), (3, 2), (5, 2), (2, 1), (4, 0)]


def test_tree_order_keeps_a_cycle_and_a_self_parent_as_roots() -> None:
    ids = ["X", "Y", "S", "Z"]
    parents = ["Y", "X", "S", "Y"]
    # X and Y are each other's parent: both roots; Z still hangs under Y
    assert views.tree_order(ids, parents) == [(0, 0), (1, 0), (3, 1), (2, 0)]


def test_tree_order_walks_a_chain_deeper_than_the_recursion_limit() -> None:
    n = 5000
    ids = [f"s{i}" for i in range(n)]
    parents = ["", *ids[:-1]]
    assert views.tree_order(ids, parents) == [(i, i) for i in range(n)]


def _rows() -> list[SpanRow]:
    """Spans in start order: R, A(R), B(R), C(A), O (an orphan), D(A)."""
    names = ["R", "A", "B", "C", "O", "D"]
    ids = {name: bytes([n + 1]) * 8 for n, name in enumerate(names)}
    parents = {"A": "R", "B": "R", "C": "A", "D": "A"}
    rows = []
    for n, name in enumerate(names):
        parent = ids[parents[name]] if name in parents else (b"\x09" * 8 if name == "O" else b"")
        s = span(TRACE, name, parent=parent, span_id=ids[name], start=1_700_000_000 * 10**9 + n,
                 attributes={"text": f"\u00e9t\u00e9 \"{name}\""})
        rows.append(SpanRow(trace_id=TRACE.hex(), span_id=ids[name].hex(),
                            parent_span_id=parent.hex(), name=name, kind=s.kind,
                            start_ns=s.start_time_unix_nano, end_ns=s.end_time_unix_nano,
                            status_code=0, service_name="", resource_id=None,
                            format=FORMAT_OTLP, body=compress(s.SerializeToString())))
    return rows


def _streamed(view: views.View, explanation: str | None = None,
              logs: list[dict[str, Any]] | None = None) -> bytes:
    async def read() -> bytes:
        response = await views.export(TRACE.hex(), _rows(), {}, view, explanation, logs or [])
        return b"".join([piece async for piece in response.body_iterator])  # type: ignore[misc]
    return asyncio.run(read())


@pytest.fixture(params=[1, 2, 500], ids=["page1", "page2", "page500"])
def page(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(views, "PAGE", request.param)
    return int(request.param)


def test_the_flat_view_streamed_is_the_whole_answer(page: int) -> None:
    expected = [span_view(s) for s in to_model(_rows(), {})]
    body = _streamed("flat")
    assert body == orjson.dumps({"trace_id": TRACE.hex(), "spans": expected, "logs": []})


def test_the_tree_streamed_is_the_whole_answer(page: int) -> None:
    v = {x["name"]: x for x in (span_view(s) for s in to_model(_rows(), {}))}

    def node(name: str, *children: dict[str, Any]) -> dict[str, Any]:
        return {**v[name], "children": list(children)}

    expected = [node("R", node("A", node("C"), node("D")), node("B")), node("O")]
    body = _streamed("tree")
    assert body == orjson.dumps({"trace_id": TRACE.hex(), "spans": expected, "logs": []})
    assert orjson.loads(body)["spans"][0]["children"][0]["children"][1]["name"] == "D"


def test_the_trajectory_view_streamed_is_the_kept_spans_reparented(page: int) -> None:
    v = {x["name"]: x for x in (span_view(s) for s in to_model(_rows(), {}))}
    # keep R, C (under R: A is dropped), B and D (under C, as the derivation said)
    kept = {"R": ("", "root"), "C": (v["R"]["span_id"], "agent"),
            "B": (v["R"]["span_id"], "tool"), "D": (v["C"]["span_id"], "model")}
    explanation = orjson.dumps([
        {"span_id": x["span_id"], "kept": name in kept,
         "new_parent_id": kept.get(name, ("", ""))[0], "kind": kept.get(name, ("", "other"))[1]}
        for name, x in v.items()]).decode()

    def node(name: str, *children: dict[str, Any]) -> dict[str, Any]:
        parent, kind = kept[name]
        return {**v[name], "parent_span_id": parent, "step_type": kind,
                "original_parent_span_id": v[name]["parent_span_id"], "children": list(children)}

    expected = [node("R", node("B"), node("C", node("D")))]
    body = _streamed("trajectory", explanation)
    assert body == orjson.dumps({"trace_id": TRACE.hex(), "spans": expected, "logs": []})


def test_the_traces_log_records_close_the_streamed_answer(page: int) -> None:
    record = LogRecord(time_unix_nano=1_700_000_000_000_000_000, trace_id=TRACE,
                       span_id=b"\x01" * 8, severity_number=9, event_name="gen_ai.user.message")
    record.body.kvlist_value.values.add(key="content").value.string_value = "hi"
    record.attributes.add(key="gen_ai.system").value.string_value = "openai"
    row = LogRow(trace_id=TRACE.hex(), span_id="01" * 8, time_ns=record.time_unix_nano,
                 observed_ns=0, severity_number=9, severity_text="", event_name=record.event_name,
                 resource_id=7, received_at=datetime(2026, 1, 1, tzinfo=UTC), digest=b"d",
                 body=compress(record.SerializeToString()), orphaned=False)
    view = log_view(row, {})
    assert view == {
        "trace_id": TRACE.hex(), "span_id": "01" * 8, "time": "2023-11-14T22:13:20Z",
        "observed_time": "", "received_time": "2026-01-01T00:00:00Z", "severity_number": 9,
        "severity_text": "", "event_name": "gen_ai.user.message", "body": {"content": "hi"},
        "attributes": {"gen_ai.system": "openai"}, "resource": {},
        "scope": {"name": "", "version": ""}, "orphaned": False}
    expected = [span_view(s) for s in to_model(_rows(), {})]
    assert _streamed("flat", logs=[view]) == orjson.dumps(
        {"trace_id": TRACE.hex(), "spans": expected, "logs": [view]})
    [rl] = otlp_logs_request([row], {}).resource_logs
    assert rl.scope_logs[0].log_records[0].SerializeToString() == record.SerializeToString()
