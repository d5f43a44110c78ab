"""`GET /api/v1/traces/{id}?view=trajectory`: the span tree reduced to trajectory nodes
(Coze Loop's "show trajectory nodes only"), from the explanation its derivation stored."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trajhub.service.stored_spans import span_tree


def trajectory_nodes(explanation: Sequence[Mapping[str, Any]], views: Sequence[dict[str, Any]]
                     ) -> list[dict[str, Any]]:
    """Only the kept spans, each under its nearest kept ancestor, with its step type."""
    by_span = {e["span_id"]: e for e in explanation}
    kept = []
    for view in views:
        e = by_span.get(view["span_id"])
        if e is None or not e["kept"]:
            continue
        kept.append({**view, "parent_span_id": e["new_parent_id"], "step_type": e["kind"],
                     "original_parent_span_id": view["parent_span_id"]})
    return span_tree(kept)
