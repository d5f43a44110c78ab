"""Read a capture: its spans as an indented tree, or as readable JSON.

  python -m tests.capture.decode tests/fixtures/real-clients/traceloop/run_error.prebuilt.invoke
  python -m tests.capture.decode --json <capture dir>

The multi-agent captures are stored only as the compressed request bodies (no `decoded/` copy,
to keep the fixtures small); this gives the readable form on demand. For reading only: tests
use the `.bin` files.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tests.normalize_support import load_file
from trajhub.normalizers.model import Span
from trajhub.service.stored_spans import span_view

#: attributes that say what a span is, by convention
KIND_KEYS = ("openinference.span.kind", "traceloop.span.kind", "gen_ai.operation.name",
             "langsmith.span.kind", "cozeloop.span_type")


def spans_of(capture: Path) -> list[Span]:
    # the trace exports over HTTP, else over gRPC (an older capture sent its spans over both; an
    # event capture's log exports hold no spans)
    bodies = sorted(capture.glob("http_*.bin")) or sorted(capture.glob("grpc_*.bin"))
    spans = [s for body in bodies if not body.stem.endswith("_v1_logs") for s in load_file(body)]
    return sorted(spans, key=lambda s: (s.trace_id, s.start_ns, s.end_ns))


def tree(spans: list[Span]) -> str:
    by_id = {s.span_id: s for s in spans}

    def depth(span: Span) -> int:
        n, parent = 0, span.parent_span_id
        while parent in by_id:
            n, parent = n + 1, by_id[parent].parent_span_id
        return n

    lines = []
    for span in spans:
        kind = " ".join(f"{k}={span.attributes[k]}" for k in KIND_KEYS if k in span.attributes)
        if span.cozeloop is not None:
            kind = f"span_type={span.cozeloop.span_type}"
        status = f" status={span.status_code} {span.status_message[:60]!r}" \
            if span.status_code else ""
        lines.append(f"{span.trace_id[:8]} {'  ' * depth(span)}{span.name} [{kind}]{status}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("capture", type=Path, help="a capture folder")
    parser.add_argument("--json", action="store_true", help="every span as JSON")
    args = parser.parse_args()
    spans = spans_of(args.capture)
    if args.json:
        print(json.dumps([span_view(s) for s in spans], indent=2, ensure_ascii=False))
    else:
        print(tree(spans))
    return 0


if __name__ == "__main__":
    sys.exit(main())
