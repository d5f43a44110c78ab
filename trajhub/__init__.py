"""trajhub: OpenTelemetry trace ingestion for LLM agents; spans in, standard trajectories out.

The repository's top-level folders install as this package's subpackages:
`trajhub.service`, `trajhub.normalizers`, `trajhub.storage` and `trajhub.evaluators`.
`trajhub.client` is the HTTP client (`TrajhubClient`, `run_dataset`); its two main names are
also available here, imported on first use so that `import trajhub` stays cheap. The
`trajhub-client` distribution (clients/python) installs the client and `trajhub.records` alone.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.2.0"

__all__ = ["TrajhubClient", "__version__", "run_dataset"]

_LAZY = {"TrajhubClient", "run_dataset"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from trajhub import client

        return getattr(client, name)
    raise AttributeError(f"module 'trajhub' has no attribute {name!r}")
