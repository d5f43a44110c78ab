"""trajhub: OpenTelemetry trace ingestion for LLM agents; spans in, standard trajectories out.

The repository's top-level folders install as this package's subpackages:
`trajhub.service`, `trajhub.normalizers`, `trajhub.storage` and `trajhub.evaluators`.
"""

from __future__ import annotations

__version__ = "0.2.0"

__all__ = ["__version__"]
