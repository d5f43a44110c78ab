"""`GET /api/v1/traces/{id}` with `format=json`: the trace's span views as a tree (`view=tree`),
in start order (`view=flat`), or reduced to the trajectory nodes (`view=trajectory`, Coze Loop's
"show trajectory nodes only", from the explanation its derivation stored), streamed.

The body is built PAGE spans at a time, in the order the JSON holds them: the nesting is worked
out first from the span ids alone, then each page of rows is decoded into views, checked against
the node's schema and encoded, and let go. So the server holds the trace's stored rows (its
compressed spans) and one page of views, never every view: the views of a whole large trace
were most of what its export held (bench/README.md, "Large traces"). The bytes are those of the
whole document encoded at once (`{"trace_id": …, "spans": [...], "logs": [...]}`, orjson, keys
in view order),
as tests/test_trace_export.py checks.

A view that does not match its schema is a bug on our side: the first page is checked before
the answer starts, so such a bug is still a 500 there; one found later cuts the body short
(logged), which a client sees as a broken response rather than as JSON its schema does not
describe.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal

import orjson
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from trajhub.records.logs import LogRecordView
from trajhub.records.spans import SpanNode, SpanView, TrajectoryNode
from trajhub.service.api.answers import ResponseContractError, schema_check
from trajhub.service.stored_spans import span_view, to_model
from trajhub.storage.rows import SpanRow

log = logging.getLogger("trajhub.api")

#: spans decoded, checked and encoded per piece of the body
PAGE = 500

View = Literal["tree", "flat", "trajectory"]


def tree_order(span_ids: Sequence[str], parent_ids: Sequence[str]) -> list[tuple[int, int]]:
    """The spans (by index) nested under their parents, as (index, depth) in the order of the
    tree's JSON (each span before its children, siblings in index order). A span whose parent
    is absent is a root; so is one whose parent chain leads back to it (a cycle)."""
    by_id = {span_id: n for n, span_id in enumerate(span_ids)}  # ids are unique in a trace
    children: dict[int, list[int]] = {}
    roots: list[int] = []
    for node in range(len(span_ids)):
        parent = by_id.get(parent_ids[node])
        if parent is not None and parent != node and not _above(node, parent, by_id, parent_ids):
            children.setdefault(parent, []).append(node)
        else:
            roots.append(node)
    order: list[tuple[int, int]] = []
    stack = [(root, 0) for root in reversed(roots)]
    while stack:  # depth first without recursion: a chain of spans can be thousands deep
        node, depth = stack.pop()
        order.append((node, depth))
        stack.extend((child, depth + 1) for child in reversed(children.get(node, ())))
    return order


def _above(node: int, candidate: int, by_id: Mapping[str, int], parent_ids: Sequence[str]
           ) -> bool:
    """True when `node` is on `candidate`'s parent chain (a parent cycle)."""
    seen: set[int] = set()
    current: int | None = candidate
    while current is not None and current not in seen:
        if current == node:
            return True
        seen.add(current)
        current = by_id.get(parent_ids[current])
    return False


class _Plan:
    """Which rows the body holds, in its order, and how each view is shaped."""

    def __init__(self, rows: Sequence[SpanRow], view: View, explanation: str | None) -> None:
        self.view = view
        self.kept: dict[int, Mapping[str, Any]] = {}
        if view == "trajectory":
            assert explanation is not None
            by_span = {e["span_id"]: e for e in orjson.loads(explanation)}
            for n, row in enumerate(rows):
                e = by_span.get(row.span_id)
                if e is not None and e["kept"]:
                    self.kept[n] = e
            chosen = list(self.kept)
            parents = [self.kept[n]["new_parent_id"] for n in chosen]
            self.order = [(chosen[i], depth) for i, depth in
                          tree_order([rows[n].span_id for n in chosen], parents)]
        elif view == "tree":
            self.order = tree_order([r.span_id for r in rows], [r.parent_span_id for r in rows])
        else:
            self.order = [(n, 0) for n in range(len(rows))]
        self.model: Any = {"flat": SpanView, "tree": SpanNode, "trajectory": TrajectoryNode}[view]

    def node(self, n: int, view: dict[str, Any]) -> dict[str, Any]:
        """The view of row `n` as its node in the body (without children yet)."""
        if self.view == "flat":
            return view
        if self.view == "trajectory":
            e = self.kept[n]
            view = {**view, "parent_span_id": e["new_parent_id"], "step_type": e["kind"],
                    "original_parent_span_id": view["parent_span_id"]}
        return {**view, "children": []}


def _pieces(trace_id: str, rows: dict[int, SpanRow], envelopes: Mapping[int, bytes],
            plan: _Plan, logs: Sequence[dict[str, Any]] = ()) -> Iterator[bytes]:
    """The body, a page of spans at a time; each row (by index) is let go once decoded. The
    trace's log records (their views) close it."""
    check = schema_check(plan.model)
    check_log = schema_check(LogRecordView)
    for view in logs:
        if not check_log(view):
            raise ResponseContractError(f"a log record of trace {trace_id} does not match "
                                        "LogRecordView")
    nested = plan.view != "flat"
    yield orjson.dumps({"trace_id": trace_id})[:-1] + b',"spans":['
    previous = -1  # the depth of the node before; -1 before the first
    for start in range(0, len(plan.order), PAGE):
        page = plan.order[start:start + PAGE]
        spans = to_model([rows.pop(n) for n, _ in page], envelopes)
        out: list[bytes] = []
        for (n, depth), span in zip(page, spans, strict=True):
            node = plan.node(n, span_view(span))
            if not check(node):
                raise ResponseContractError(f"a span of trace {trace_id} does not match "
                                            f"{plan.model.__name__}")
            text = orjson.dumps(node)
            if not nested:
                out.append(b"," + text if previous == 0 else text)
                previous = 0
                continue
            # a node comes before its children, open: `{…,"children":[`; it is closed when
            # the walk comes back up past it. A first child follows its parent's `[`.
            if depth <= previous:
                out.append(b"]}" * (previous - depth + 1) + b",")
            out.append(text[:-2])  # without the `]}` that closes its empty `children`
            previous = depth
        yield b"".join(out)
    yield ((b"]}" * (previous + 1) if nested else b"") + b'],"logs":' + orjson.dumps(list(logs))
           + b"}")


async def export(trace_id: str, rows: list[SpanRow], envelopes: Mapping[int, bytes],
                 view: View, explanation: str | None,
                 logs: Sequence[dict[str, Any]] = ()) -> StreamingResponse:
    """The answer of `GET /traces/{id}` with `format=json`, from the trace's rows in start
    order (the list is emptied: its rows are let go as they are sent), for `view=trajectory`
    the explanation its derivation stored (JSON text), and the views of its log records."""
    plan = await run_in_threadpool(_Plan, rows, view, explanation)
    pieces = _pieces(trace_id, dict(enumerate(rows)), envelopes, plan, logs)
    rows.clear()
    # the envelope and the first page before the answer starts: a contract bug is a 500
    first = [next(pieces)]
    first.extend(await run_in_threadpool(_first_page, pieces))

    def body() -> Iterator[bytes]:
        yield from first
        first.clear()
        try:
            yield from pieces
        except ResponseContractError:
            log.exception("trace %s: the answer was cut short", trace_id)
            raise

    return StreamingResponse(body(), media_type="application/json")


def _first_page(pieces: Iterator[bytes]) -> list[bytes]:
    return [next(pieces)]
