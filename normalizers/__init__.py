"""Pure functions from the spans of one trace to one trajectory; no I/O.

Deriving a trajectory depends on exactly this API (the service also reads the pure helpers of
`sources`, `model`, `trajectory`, `document`, `coerce`, `playback`, `contract`, `item_fields`,
`run_context` and `cozeloop_wire` directly):

- `derive(spans)` → `Derivation` (trajectory, per-span explanation, warnings, summary columns);
- `Derivation.to_json()` / `trajectory_to_json()` → deterministic JSON bytes;
- `NORMALIZER_VERSION`: bumped whenever the output for the same spans may change, so stored
  trajectories can be re-derived from the raw spans;
- `DerivationError`: only for input that cannot give any trajectory (no spans);
- `root_ended(spans)`: whether the trace's own root has arrived, ended (the lifecycle rule).
"""

from __future__ import annotations

from trajhub.normalizers.builder import (
    Derivation,
    DerivationError,
    DerivedSummary,
    SpanExplanation,
    derive,
)
from trajhub.normalizers.lifecycle import root_ended
from trajhub.normalizers.trajectory import Trajectory, trajectory_to_dict, trajectory_to_json

NORMALIZER_VERSION: str = "1.5.1"

__all__ = [
    "NORMALIZER_VERSION",
    "Derivation",
    "DerivationError",
    "DerivedSummary",
    "SpanExplanation",
    "Trajectory",
    "derive",
    "root_ended",
    "trajectory_to_dict",
    "trajectory_to_json",
]
