"""The labels monitoring groups runs by, besides those the summary has (docs/monitoring.md):
the run name (the `trajhub.run` attribute, docs/glossary.md), the release (the resource's
`service.version`) and the prompt version (an attribute of one of the conventions' prompt
version keys, as the run contract reads it). Pure; computed once, when the trace is derived,
and stored with the summary."""

from __future__ import annotations

from collections.abc import Sequence

from trajhub.normalizers.contract import PROMPT_VERSION_SUFFIXES
from trajhub.normalizers.immutable import immutable
from trajhub.normalizers.model import AttributeValue, Span


@immutable
class RunLabels:
    run_name: str | None
    release: str | None
    prompt_version: str | None


def _text(value: AttributeValue | None) -> str | None:
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        text = str(value).strip()
        return text or None
    return None


#: the attribute a run's name is recorded under (service/client/runner.py sets it)
RUN_ATTRIBUTE = "trajhub.run"


def run_labels(spans: Sequence[Span]) -> RunLabels:
    """The run name, release and prompt version of a trace's spans: the root span's (no parent
    present) first, then the others' in start order."""
    ids = {s.span_id for s in spans}
    ordered = sorted(spans, key=lambda s: (s.parent_span_id in ids, s.start_ns, s.span_id))
    run_name = next((found for s in ordered
                     if (found := _text(s.attributes.get(RUN_ATTRIBUTE))) is not None), None)
    release = next((found for s in ordered
                    if (found := _text(s.resource.get("service.version"))) is not None), None)
    prompt_version = next((found for s in ordered for key, value in s.attributes.items()
                           if key.endswith(PROMPT_VERSION_SUFFIXES)
                           and (found := _text(value)) is not None), None)
    return RunLabels(run_name, release, prompt_version)
