"""The client side of trajhub: `TrajhubClient` over the REST API, and `run_dataset`, which runs
your agent over an evaluation set. Imports nothing of the server (no FastAPI, asyncpg, gRPC)."""

from trajhub.service.client.api import (
    DEFAULT_URL,
    ApiError,
    ExportStream,
    ServerUnreachable,
    TrajhubClient,
    TrajhubError,
)
from trajhub.service.client.models import (
    Dataset,
    DatasetItem,
    Evaluation,
    EvaluationResult,
    EvaluatorAggregate,
    FillResult,
    ImportResult,
    ItemOutcomes,
    Page,
    Project,
    Score,
    ScoreConfig,
    StoredTrajectory,
    TraceSummary,
    TrajectorySummary,
)
from trajhub.service.client.runner import DatasetRun, ItemRun, RunError, run_dataset

__all__ = [
    "DEFAULT_URL",
    "ApiError",
    "Dataset",
    "DatasetItem",
    "DatasetRun",
    "Evaluation",
    "EvaluationResult",
    "EvaluatorAggregate",
    "ExportStream",
    "FillResult",
    "ImportResult",
    "ItemOutcomes",
    "ItemRun",
    "Page",
    "Project",
    "RunError",
    "Score",
    "ScoreConfig",
    "ServerUnreachable",
    "StoredTrajectory",
    "TraceSummary",
    "TrajectorySummary",
    "TrajhubClient",
    "TrajhubError",
    "run_dataset",
]
