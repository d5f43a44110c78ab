"""`TrajhubClient`: a small typed client over trajhub's REST API (/api/v1).

    from trajhub.client import TrajhubClient

    with TrajhubClient("http://127.0.0.1:4318", project="my-project") as hub:
        for t in hub.list_trajectories(agent="LangGraph", status="final").items:
            print(t.trace_id, t.tool_names)

Every method raises `ApiError` (status and the server's message) for a 4xx/5xx answer and
`ServerUnreachable` when no answer came; both are `TrajhubError`s. The client talks HTTP only: it
imports nothing of the server.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, overload
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ValidationError

from trajhub import __version__
from trajhub.records import Query
from trajhub.records.alerts import AlertEvent, AlertRule
from trajhub.records.documents import (
    AtifImported,
    AtifTrajectory,
    PagedStep,
    TrajectoryExplanation,
    TrajectoryStepPage,
)
from trajhub.records.graphs import AgentGraphView
from trajhub.records.queues import ExportOutcome, ItemsAdded
from trajhub.records.regressions import RegressionReport
from trajhub.records.replay import (
    ComparisonView,
    RunContract,
    RunCostView,
    StepEventView,
    ToolResults,
)
from trajhub.records.retention import Retention
from trajhub.records.sessions import SessionQuery
from trajhub.records.spans import (
    CozeLoopTrace,
    OtlpLogs,
    OtlpTrace,
    SpanView,
    TraceBody,
    TraceSpans,
)
from trajhub.records.timeseries import FILTERS as TIMESERIES_FILTERS
from trajhub.records.timeseries import Bucket, GroupBy, TimeSeries
from trajhub.records.trajectories import TrajectoryQuery
from trajhub.service.client.models import (
    Dataset,
    DatasetItem,
    Evaluation,
    EvaluationResult,
    FillResult,
    ImportResult,
    LogRecordView,
    Page,
    Project,
    ReviewItem,
    ReviewQueue,
    Rule,
    RuleBackfill,
    RunEvents,
    Score,
    ScoreConfig,
    Session,
    SessionSummary,
    StoredTrajectory,
    TraceSummary,
    TrajectorySummary,
)

DEFAULT_URL = "http://127.0.0.1:4318"
#: Sent with every request; REST queries are scoped to this project (the server's `default`
#: when absent).
PROJECT_HEADER = "trajhub-project"

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


class TrajhubError(Exception):
    """Anything that kept a client call from its answer."""


class ApiError(TrajhubError):
    """The server answered with an error status. `detail` is the server's own message."""

    def __init__(self, status: int, detail: str, method: str, path: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.method = method
        self.path = path

    def __str__(self) -> str:
        return f"{self.detail} (HTTP {self.status})"


class ServerUnreachable(TrajhubError):
    """No answer: nothing listens at the URL, the connection broke, or it timed out."""


def error_detail(response: httpx.Response) -> str:
    """The message of an error response, readable: FastAPI's `{"detail": str}` as is, its
    validation errors (`{"detail": [{"loc", "msg"}, …]}`) as `field: message; …`."""
    try:
        body = response.json()
    except ValueError:
        return response.text.strip() or response.reason_phrase
    detail = body.get("detail") if isinstance(body, dict) else None
    if isinstance(detail, str):
        return detail
    if isinstance(detail, list) and all(isinstance(d, dict) for d in detail):
        parts = []
        for d in detail:
            # drop FastAPI's location prefix (query, body, path, header): the name is enough
            loc = [str(p) for p in d.get("loc", []) if p not in ("query", "body", "path",
                                                                  "header")]
            msg = str(d.get("msg", "invalid"))
            parts.append(f"{'.'.join(loc)}: {msg}" if loc else msg)
        return "; ".join(parts)
    return response.text.strip() or response.reason_phrase


def checked_filters(filter_: type[Query], filters: Mapping[str, Any], also: Sequence[str] = ()
                    ) -> Mapping[str, Any]:
    """`filters` when every name is one of the declared filters (or in `also`); a TypeError
    naming the unknown ones and the known ones otherwise, before anything is sent."""
    known = (*filter_.names(), *also)
    unknown = sorted(set(filters) - set(known))
    if unknown:
        raise TypeError(f"unknown filter(s) {', '.join(unknown)}; the filters are: "
                        f"{', '.join(known)}")
    return filters


def _filter_doc(filter_: type[Query]) -> str:
    return "\n".join(f"        {p.name}: {p.description}" for p in filter_.params())


def _query(filters: Mapping[str, Any]) -> dict[str, Any]:
    """Query parameters: None left out, booleans as true/false, lists repeated."""
    out: dict[str, Any] = {}
    for key, value in filters.items():
        if value is None:
            continue
        out[key] = ("true" if value else "false") if isinstance(value, bool) else value
    return out


@dataclass
class ExportStream:
    """An export being downloaded: its item count, then its bytes."""

    item_count: int
    response: httpx.Response

    def iter_bytes(self) -> Iterator[bytes]:
        try:
            yield from self.response.iter_bytes()
        except httpx.TransportError as exc:
            raise ServerUnreachable(f"the export broke off: {exc}") from None


@dataclass(frozen=True)
class CreatedAlert:
    """An alert rule just created, and its signing secret (which no other answer holds)."""

    rule: AlertRule
    secret: str


class TrajhubClient:
    """A client of one trajhub server, scoped to one project."""

    def __init__(self, base_url: str = DEFAULT_URL, project: str | None = None,
                 api_key: str | None = None, timeout: float = 60.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.project = project
        headers = {"user-agent": f"trajhub-client/{__version__}"}
        if project:
            headers[PROJECT_HEADER] = project
        if api_key:
            headers["authorization"] = f"Bearer {api_key}"
        self._http = httpx.Client(base_url=self.base_url + "/api/v1", headers=headers,
                                  timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
                                  transport=transport)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> TrajhubClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- transport -----------------------------------------------------------------------

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TimeoutException:
            raise ServerUnreachable(f"the trajhub server at {self.base_url} did not answer "
                                    f"{method} {path} in time") from None
        except httpx.TransportError as exc:
            raise ServerUnreachable(f"cannot reach the trajhub server at {self.base_url}: "
                                    f"{exc or type(exc).__name__}") from None
        if response.status_code >= 400:
            raise ApiError(response.status_code, error_detail(response), method, path)
        return response

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        return self._decode(self._send(method, path, **kwargs))

    def _decode(self, response: httpx.Response) -> Any:
        if not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            raise TrajhubError(f"{self.base_url} answered {response.request.method} "
                               f"{response.request.url.path} with something other than JSON; "
                               "is it a trajhub server?") from None

    def _model(self, model: type[M], method: str, path: str, **kwargs: Any) -> M:
        """The answer read into its declared model (trajhub.records)."""
        return self._validate(model, self._json(method, path, **kwargs), method, path)

    def _validate(self, model: type[M], body: Any, method: str, path: str) -> M:
        try:
            return model.model_validate(body)
        except ValidationError as exc:
            raise TrajhubError(f"{self.base_url} answered {method} {path} with a body that is "
                               f"not a {model.__name__} ({exc.errors()[0]['msg']}); is it a "
                               "trajhub server of this version?") from None

    def _page(self, path: str, build: Callable[[Mapping[str, Any]], T],
              params: Mapping[str, Any]) -> Page[T]:
        body = self._json("GET", path, params=_query(params))
        return Page([build(i) for i in body["items"]], body.get("next_cursor"), body.get("total"))

    def _items(self, method: str, path: str, **kwargs: Any) -> list[Any]:
        """The `items` of a list answered whole (every list's item key)."""
        items: list[Any] = self._json(method, path, **kwargs)["items"]
        return items

    @staticmethod
    def _all(fetch: Callable[[str | None], Page[T]]) -> Iterator[T]:
        cursor: str | None = None
        while True:
            page = fetch(cursor)
            yield from page.items
            cursor = page.next_cursor
            if not cursor:
                return

    # --- projects ------------------------------------------------------------------------

    def list_projects(self) -> list[Project]:
        """Every project with stored spans: its trace and span counts and time range."""
        return [Project.from_json(p) for p in self._items("GET", "/projects")]

    # --- traces --------------------------------------------------------------------------

    def list_traces(self, *, limit: int = 50, cursor: str | None = None,
                    **filters: Any) -> Page[TraceSummary]:
        """Newest first. Filters are GET /traces' query parameters (start, end, service,
        span_name, has_error, attribute=["key=value", …], min_duration_ms)."""
        return self._page("/traces", TraceSummary.from_json,
                          {**filters, "limit": limit, "cursor": cursor})

    @overload
    def get_trace(self, trace_id: str, view: str = "tree", format: Literal["json"] = "json"
                  ) -> TraceSpans: ...

    @overload
    def get_trace(self, trace_id: str, view: str = "tree", *, format: Literal["otlp"]
                  ) -> OtlpTrace: ...

    @overload
    def get_trace(self, trace_id: str, view: str = "tree", *, format: Literal["cozeloop"]
                  ) -> CozeLoopTrace: ...

    @overload
    def get_trace(self, trace_id: str, view: str = "tree", *, format: Literal["otlp_logs"]
                  ) -> OtlpLogs: ...

    @overload
    def get_trace(self, trace_id: str, view: str = "tree", format: str = "json"
                  ) -> TraceBody: ...

    def get_trace(self, trace_id: str, view: str = "tree", format: str = "json") -> TraceBody:
        """The trace's spans: `view` tree, flat or trajectory; `format` json (`TraceSpans`,
        with the trace's log records), otlp (`OtlpTrace`, the OTLP/JSON request), cozeloop
        (`CozeLoopTrace`) or otlp_logs (`OtlpLogs`, the log records as an OTLP/JSON logs
        request)."""
        path = f"/traces/{trace_id}"
        models: dict[str, type[TraceSpans | OtlpTrace | CozeLoopTrace | OtlpLogs]] = {
            "otlp": OtlpTrace, "cozeloop": CozeLoopTrace, "otlp_logs": OtlpLogs}
        model = models.get(format, TraceSpans)
        return self._model(model, "GET", path, params={"view": view, "format": format})

    def trace_spans(self, trace_id: str, *, limit: int = 100, cursor: str | None = None
                    ) -> Page[SpanView]:
        """A page of the trace's spans in start order (`total`: the trace's span count)."""
        return self._page(f"/traces/{trace_id}/spans", SpanView.model_validate,
                          {"limit": limit, "cursor": cursor})

    def iter_trace_spans(self, trace_id: str, *, page_size: int = 1000
                         ) -> Iterator[SpanView]:
        """Every span of the trace in start order, a page at a time."""
        return self._all(lambda cursor: self.trace_spans(trace_id, limit=page_size,
                                                         cursor=cursor))

    # --- log records ---------------------------------------------------------------------

    def list_logs(self, *, trace_id: str | None = None, span_id: str | None = None,
                  event_name: str | None = None, orphaned: bool | None = None,
                  limit: int = 100, cursor: str | None = None) -> Page[LogRecordView]:
        """The project's stored log records, the latest received first; `orphaned=True`: only
        those attached to no span (their trace has no spans, their span is not in it, or they
        name no trace)."""
        return self._page("/logs", LogRecordView.from_json, {
            "trace_id": trace_id, "span_id": span_id, "event_name": event_name,
            "orphaned": orphaned, "limit": limit, "cursor": cursor})

    def iter_logs(self, *, page_size: int = 1000, **filters: Any) -> Iterator[LogRecordView]:
        """Every log record `list_logs` would list with `filters`, a page at a time."""
        return self._all(lambda cursor: self.list_logs(limit=page_size, cursor=cursor,
                                                       **filters))

    # --- trajectories --------------------------------------------------------------------

    def list_trajectories(self, *, limit: int = 50, cursor: str | None = None,
                          **filters: Any) -> Page[TrajectorySummary]:
        """Summaries. The keyword arguments are GET /trajectories' query parameters: `sort`
        (start_time, duration, tokens, steps, or score:<name>), `order` (desc, asc), `count`
        (True adds `total`), and these filters (an unknown name is a TypeError):

{filters}
        """
        checked_filters(TrajectoryQuery, filters, ("sort", "order", "count"))
        return self._page("/trajectories", TrajectorySummary.from_json,
                          {**filters, "limit": limit, "cursor": cursor})

    # the filters come from their declaration (trajhub.records.trajectories)
    if list_trajectories.__doc__:
        list_trajectories.__doc__ = list_trajectories.__doc__.replace(
            "{filters}", _filter_doc(TrajectoryQuery))

    # --- sessions ------------------------------------------------------------------------

    def list_sessions(self, *, limit: int = 50, cursor: str | None = None,
                      sort: str | None = None, **filters: Any) -> Page[SessionSummary]:
        """Sessions (the runs sharing a session id), the one with the latest turn first, or
        with `sort="score:<name>"` the highest mean of that score first. The keyword
        arguments are GET /sessions' filters (an unknown name is a TypeError):

{filters}
        """
        checked_filters(SessionQuery, filters)
        return self._page("/sessions", SessionSummary.from_json,
                          {**filters, "limit": limit, "cursor": cursor, "sort": sort})

    if list_sessions.__doc__:
        list_sessions.__doc__ = list_sessions.__doc__.replace(
            "{filters}", _filter_doc(SessionQuery))

    def iter_sessions(self, **filters: Any) -> Iterator[SessionSummary]:
        """Every matching session, page after page."""
        return self._all(lambda cursor: self.list_sessions(cursor=cursor, **filters))

    def get_session(self, session_id: str, *, limit: int | None = None) -> Session:
        """One session's turns in order: each turn's trace id, the user's text, the answer,
        status, tokens and cost (`limit`: at most this many turns, the first ones)."""
        params = {"limit": limit} if limit is not None else {}
        return Session.from_json(self._json(
            "GET", f"/sessions/{quote(session_id, safe='')}", params=params))

    def get_trajectory(self, trace_id: str) -> StoredTrajectory:
        response = self._send("GET", f"/trajectories/{trace_id}")
        return StoredTrajectory(
            trace_id, self._decode(response), response.headers.get("x-trajectory-status", ""),
            int(response.headers.get("x-trajectory-revision", "0")))

    def trajectory_steps(self, trace_id: str, *, cursor: str | None = None, limit: int = 100,
                         offset: int | None = None) -> TrajectoryStepPage:
        """A page of the trajectory's steps (`items`) with the rest of its document
        (`root_step`, the agents without their steps, `total`, `next_cursor`):
        docs/large-traces.md. `cursor` is the previous page's `next_cursor`; `offset`, the
        server's deprecated alias, starts the page at a position instead."""
        return self._model(TrajectoryStepPage, "GET", f"/trajectories/{trace_id}/steps",
                           params=_query({"cursor": cursor, "offset": offset, "limit": limit}))

    def iter_trajectory_steps(self, trace_id: str, *, page_size: int = 1000
                              ) -> Iterator[PagedStep]:
        """Every step of the trajectory in document order, a page at a time (each step with
        its `offset` and `agent_step_id`; the rest of a step's fields are its extra fields,
        `model_extra`, as the document holds them)."""
        cursor: str | None = None
        while True:
            page = self.trajectory_steps(trace_id, cursor=cursor, limit=page_size)
            yield from page.items
            cursor = page.next_cursor
            if not cursor:
                return

    def trajectory_atif(self, trace_id: str) -> AtifTrajectory:
        """The trajectory as one ATIF-v1.8 document (docs/atif.md); `model_dump(mode="json")`
        is the whole document, the fields ATIF defines beyond the named ones included."""
        return self._model(AtifTrajectory, "GET", f"/trajectories/{trace_id}/atif")

    def import_atif(self, document: Any) -> AtifImported:
        """Store an ATIF trajectory (a parsed JSON object) in the project; answers where it was
        stored (project, trace id, spans written) once its spans are committed."""
        return self._model(AtifImported, "POST", "/trajectories/import/atif", json=document)

    def explain_trajectory(self, trace_id: str) -> TrajectoryExplanation:
        """For every span: its classification, the rule that decided it, kept or dropped."""
        return self._model(TrajectoryExplanation, "GET", f"/trajectories/{trace_id}/explain")

    def rederive(self, since: str | None = None, outdated: bool = False) -> int:
        """Queue the project's traces for re-derivation; returns how many were queued."""
        body = self._json("POST", "/trajectories/rederive",
                          json={"since": since, "outdated": outdated})
        return int(body["queued"])

    def trajectory_graph(self, trace_id: str) -> AgentGraphView:
        """The run's agent graph, laid out: nodes, edges with counts, paths
        (docs/agent-graph.md)."""
        return self._model(AgentGraphView, "GET", f"/trajectories/{trace_id}/graph")

    def agent_graph(self, *, limit: int = 500, **filters: Any) -> AgentGraphView:
        """The agent graph of the newest `limit` runs the filters select (the filters of
        `list_trajectories`), with the agent paths taken and how often."""
        checked_filters(TrajectoryQuery, filters, ())
        return self._model(AgentGraphView, "GET", "/graph", params={**filters, "limit": limit})

    # --- scores ----------------------------------------------------------------------------

    def list_scores(self, trace_id: str) -> list[Score]:
        """A trajectory's scores, its steps' included, oldest first (each with its revision)."""
        return [Score.from_json(s) for s in
                self._items("GET", f"/trajectories/{trace_id}/scores")]

    def add_score(self, trace_id: str, name: str, value: bool | float | str | None = None,
                  **fields: Any) -> Score:
        """Score a trajectory, or one step of it with `step_id=`. `value` is a number, a
        boolean or a category (a string); the other fields are the API's: comment, step_id,
        data_type, source (api, human, evaluator), evaluator, evaluator_config, error,
        author."""
        body = {"name": name, "value": value, **fields}
        return Score.from_json(self._items(
            "POST", f"/trajectories/{trace_id}/scores",
            json={k: v for k, v in body.items() if v is not None})[0])

    def add_scores(self, trace_id: str, scores: Sequence[Mapping[str, Any]]) -> list[Score]:
        """Several scores of one trajectory at once (each a dict of `add_score`'s fields,
        `name` and `value` included); stored all or none."""
        stored = self._items("POST", f"/trajectories/{trace_id}/scores",
                             json={"scores": [dict(s) for s in scores]})
        return [Score.from_json(s) for s in stored]

    def delete_score(self, trace_id: str, score_id: int) -> None:
        self._send("DELETE", f"/trajectories/{trace_id}/scores/{score_id}")

    def list_score_configs(self) -> list[ScoreConfig]:
        """The project's score configs: what its scores of each name must be."""
        return [ScoreConfig.from_json(c) for c in self._items("GET", "/score-configs")]

    def set_score_config(self, name: str, data_type: str, *, min: float | None = None,
                         max: float | None = None, categories: Sequence[str] | None = None,
                         description: str = "") -> ScoreConfig:
        """Create or replace the config of a score name (admin scope): its type ("number",
        "boolean", "category"), a number's range, a category's list."""
        body: dict[str, Any] = {"data_type": data_type, "min": min, "max": max,
                                "categories": list(categories) if categories else None,
                                "description": description}
        return ScoreConfig.from_json(self._json(
            "PUT", f"/score-configs/{name}",
            json={k: v for k, v in body.items() if v is not None}))

    def delete_score_config(self, name: str) -> None:
        self._send("DELETE", f"/score-configs/{name}")

    # --- online evaluation rules (docs/rules.md) ---------------------------------------------

    def list_rules(self) -> list[Rule]:
        """The project's online evaluation rules, oldest first."""
        return [Rule.from_json(r) for r in self._items("GET", "/rules")]

    def get_rule(self, rule_id: int) -> Rule:
        return Rule.from_json(self._json("GET", f"/rules/{rule_id}"))

    def add_rule(self, name: str, evaluator: str, *, config: Mapping[str, Any] | None = None,
                 filter: Mapping[str, Any] | None = None, sample_rate: float = 1.0,
                 enabled: bool = True, expectations: Mapping[str, Any] | None = None,
                 max_judge_calls_per_minute: int | None = None,
                 review_queue: str | None = None, fail_below: float = 1.0) -> Rule:
        """Create a rule (admin scope): `evaluator` with its `config` runs on each new final
        trajectory matching `filter` (the trajectory list's filters by name, e.g.
        {"agent": "planner"}) and in the `sample_rate`; a trajectory it scores below
        `fail_below` (or with an error) goes to the review queue `review_queue`."""
        body = {"name": name, "evaluator": evaluator, "config": dict(config or {}),
                "filter": dict(filter or {}), "sample_rate": sample_rate, "enabled": enabled,
                "expectations": dict(expectations) if expectations is not None else None,
                "max_judge_calls_per_minute": max_judge_calls_per_minute,
                "review_queue": review_queue, "fail_below": fail_below}
        return Rule.from_json(self._json("POST", "/rules", json=body))

    def edit_rule(self, rule_id: int, **changes: Any) -> Rule:
        """Change the given fields of a rule (admin scope): name, evaluator, config, filter,
        sample_rate, enabled, expectations, max_judge_calls_per_minute, review_queue,
        fail_below."""
        return Rule.from_json(self._json("PATCH", f"/rules/{rule_id}", json=changes))

    def enable_rule(self, rule_id: int, enabled: bool = True) -> Rule:
        """Switch a rule on (or off with enabled=False)."""
        return self.edit_rule(rule_id, enabled=enabled)

    def delete_rule(self, rule_id: int) -> None:
        self._send("DELETE", f"/rules/{rule_id}")

    def backfill_rule(self, rule_id: int, since: str | None = None) -> RuleBackfill:
        """Queue the rule over the stored final trajectories matching its filter (those
        starting at or after `since` only, when given); follow it with `get_backfill`."""
        body = {"since": since} if since is not None else {}
        return RuleBackfill.from_json(self._json("POST", f"/rules/{rule_id}/backfills",
                                                 json=body))

    def get_backfill(self, rule_id: int, backfill_id: int) -> RuleBackfill:
        return RuleBackfill.from_json(
            self._json("GET", f"/rules/{rule_id}/backfills/{backfill_id}"))

    def list_backfills(self, rule_id: int) -> list[RuleBackfill]:
        return [RuleBackfill.from_json(b) for b in
                self._items("GET", f"/rules/{rule_id}/backfills")]
    # --- monitoring alerts (docs/alerts.md) ----------------------------------------------

    def _pages(self, path: str) -> Iterator[Any]:
        """Every item of a cursor-paged list, page after page."""
        cursor: str | None = None
        while True:
            page = self._json("GET", path, params={"cursor": cursor} if cursor else None)
            yield from page["items"]
            cursor = page.get("next_cursor")
            if not cursor:
                return

    def list_alerts(self) -> list[AlertRule]:
        """The project's alert rules, oldest first, with their state."""
        return [AlertRule.from_json(a) for a in self._pages("/alerts")]

    def get_alert(self, alert_id: int) -> AlertRule:
        return AlertRule.from_json(self._json("GET", f"/alerts/{alert_id}"))

    def create_alert(self, name: str, metric: str, *, alert_threshold: float,
                     window_seconds: int, webhook_url: str, condition: str = "above",
                     warning_threshold: float | None = None, score_name: str | None = None,
                     filter: Mapping[str, str] | None = None, secret: str | None = None,
                     enabled: bool = True, muted: bool = False) -> CreatedAlert:
        """Create an alert rule (admin scope): `metric` of the runs that started in the last
        `window_seconds` (matching `filter`: run_name, agent, model, release) compared with
        the thresholds; each change of state is POSTed to `webhook_url`, signed with `secret`
        (made by the server when None; answered only here)."""
        body = {"name": name, "metric": metric, "alert_threshold": alert_threshold,
                "window_seconds": window_seconds, "webhook_url": webhook_url,
                "condition": condition, "warning_threshold": warning_threshold,
                "score_name": score_name, "filter": dict(filter or {}), "secret": secret,
                "enabled": enabled, "muted": muted}
        answer = self._json("POST", "/alerts", json=body)
        return CreatedAlert(AlertRule.from_json(answer), str(answer["secret"]))

    def edit_alert(self, alert_id: int, **changes: Any) -> AlertRule:
        """Change the given fields of an alert rule (admin scope)."""
        return AlertRule.from_json(self._json("PATCH", f"/alerts/{alert_id}", json=changes))

    def mute_alert(self, alert_id: int, muted: bool = True) -> AlertRule:
        """Mute an alert rule (not evaluated, nothing sent), or unmute it with muted=False."""
        return self.edit_alert(alert_id, muted=muted)

    def delete_alert(self, alert_id: int) -> None:
        self._send("DELETE", f"/alerts/{alert_id}")

    def alert_events(self, alert_id: int) -> list[AlertEvent]:
        """The rule's changes of state, newest first, with their notifications' delivery."""
        return [AlertEvent.from_json(e) for e in self._pages(f"/alerts/{alert_id}/events")]

    # --- review (review queues: docs/review.md) ----------------------------------------

    def list_review_queues(self) -> list[ReviewQueue]:
        """The project's review queues, each with its progress."""
        return [ReviewQueue.from_json(q) for q in self._items("GET", "/review-queues")]

    def review_queue(self, name: str) -> ReviewQueue:
        """One queue and its progress (total, done, skipped, in_review, pending)."""
        return ReviewQueue.from_json(self._json("GET", f"/review-queues/{quote(name)}"))

    def create_review_queue(self, name: str, score_names: Sequence[str] = (),
                            description: str = "") -> ReviewQueue:
        """Create a queue (admin scope); `score_names` are score configs' names."""
        return ReviewQueue.from_json(self._json(
            "POST", "/review-queues", json={"name": name, "description": description,
                                            "score_names": list(score_names)}))

    def delete_review_queue(self, name: str) -> None:
        self._send("DELETE", f"/review-queues/{quote(name)}")

    def add_review_items(self, name: str, trace_ids: Sequence[str] | None = None, *,
                         limit: int = 100, **filters: Any) -> ItemsAdded:
        """Add trajectories to a queue: these trace ids, or the newest `limit` the filters of
        `list_trajectories` select. Returns the trace ids added, already_queued, not_found."""
        if trace_ids is not None:
            body: dict[str, Any] = {"trace_ids": list(trace_ids)}
        else:
            checked_filters(TrajectoryQuery, filters, ())
            body = {"query": filters, "limit": limit}
        return self._model(ItemsAdded, "POST", f"/review-queues/{quote(name)}/items", json=body)

    def review_items(self, name: str, status: str | None = None) -> list[ReviewItem]:
        """A queue's items in the order they were added (only those of `status`)."""
        params = {"status": status} if status else {}
        return [ReviewItem.from_json(i) for i in self._items(
            "GET", f"/review-queues/{quote(name)}/items", params=params)]

    def next_review_item(self, name: str, *, author: str | None = None,
                         lease_seconds: int | None = None) -> ReviewItem | None:
        """Take the next item (held by you for the lease; the one you hold, renewed); None
        when no item is free. `author` only when the server runs without keys."""
        body = {k: v for k, v in (("author", author), ("lease_seconds", lease_seconds))
                if v is not None}
        item = self._json("POST", f"/review-queues/{quote(name)}/next", json=body)["item"]
        return ReviewItem.from_json(item) if item is not None else None

    def complete_review_item(self, name: str, item_id: int,
                             scores: Sequence[Mapping[str, Any]], *,
                             comment: str | None = None,
                             expectations: Mapping[str, Any] | None = None,
                             author: str | None = None) -> tuple[ReviewItem, list[Score]]:
        """Complete an item you hold: its scores (dicts of name, value, and step_id or
        comment), a comment, the corrected expectations."""
        body: dict[str, Any] = {"scores": [dict(s) for s in scores], "comment": comment,
                                "expectations": dict(expectations) if expectations else None,
                                "author": author}
        out = self._json("POST", f"/review-queues/{quote(name)}/items/{item_id}/complete",
                         json={k: v for k, v in body.items() if v is not None})
        return ReviewItem.from_json(out["item"]), [Score.from_json(s) for s in out["scores"]]

    def skip_review_item(self, name: str, item_id: int, *, comment: str | None = None,
                         author: str | None = None) -> ReviewItem:
        body = {k: v for k, v in (("comment", comment), ("author", author)) if v is not None}
        return ReviewItem.from_json(self._json(
            "POST", f"/review-queues/{quote(name)}/items/{item_id}/skip", json=body))

    def export_review_queue(self, name: str, dataset: str,
                            tags: Sequence[str] = ()) -> ExportOutcome:
        """The completed items into a dataset (created when missing), with their
        corrected expectations: the set, the items added and the duplicates skipped."""
        return self._model(ExportOutcome, "POST",
                           f"/review-queues/{quote(name)}/export-to-dataset",
                           json={"dataset": dataset, "tags": list(tags)})

    # --- replay and regression -------------------------------------------------------------

    def events(self, trace_id: str, *, cursor: str | None = None, limit: int | None = None,
               offset: int = 0) -> RunEvents:
        """Playback: the run's step events in the order they happened (NDJSON on the wire);
        with `limit`, a page of them (`total` and `next_cursor` say where the rest is;
        docs/large-traces.md). `cursor` is the previous page's `next_cursor`; `offset`, the
        server's deprecated alias, starts at a position instead."""
        params = _query({"cursor": cursor, "offset": offset or None, "limit": limit})
        path = f"/trajectories/{trace_id}/events"
        response = self._send("GET", path, params=params)
        events = [self._validate(StepEventView, json.loads(line), "GET", path)
                  for line in response.content.splitlines() if line.strip()]
        total = response.headers.get("x-total-count")
        following = response.headers.get("x-next-cursor")
        return RunEvents(
            trace_id, events, response.headers.get("x-trajectory-status", ""),
            int(response.headers.get("x-trajectory-revision", "0")),
            int(total) if total is not None else len(events), following,
            offset + len(events) if following is not None and not cursor else None)

    def contract(self, trace_id: str) -> RunContract:
        """What the run was: models, sampling, prompt and tool hashes, versions; each value
        with where it was read."""
        return self._model(RunContract, "GET", f"/trajectories/{trace_id}/contract")

    def tool_results(self, trace_id: str) -> ToolResults:
        """The recorded tool calls (`results`), keyed by tool name, call id and argument
        hash."""
        return self._model(ToolResults, "GET", f"/trajectories/{trace_id}/tool-results")

    def cost(self, trace_id: str) -> RunCostView:
        """Tokens and money per model step, per agent and for the run (docs/costs.md)."""
        return self._model(RunCostView, "GET", f"/trajectories/{trace_id}/cost")

    def compare(self, a: str, b: str) -> ComparisonView:
        """Two runs' steps aligned, the first divergence and the deltas (b − a)."""
        return self._model(ComparisonView, "GET", "/trajectories/compare",
                           params={"a": a, "b": b})

    def regression(self, baseline: Mapping[str, Any], candidate: Mapping[str, Any],
                   dataset: str | None = None) -> RegressionReport:
        """Baseline vs candidate over one dataset: each `{"run": name}` (with
        `dataset`) or `{"evaluation": id}`."""
        body: dict[str, Any] = {"baseline": dict(baseline), "candidate": dict(candidate)}
        if dataset:
            body["dataset"] = dataset
        return self._model(RegressionReport, "POST", "/regressions", json=body)

    # --- retention -----------------------------------------------------------------------

    def get_retention(self) -> Retention:
        """The project's retention: its days, whether its own or the server's default."""
        return self._model(Retention, "GET", "/retention")

    def set_retention(self, days: float) -> Retention:
        """Override the server's retention for the project (0 keeps its data forever)."""
        return self._model(Retention, "PUT", "/retention", json={"days": days})

    def clear_retention(self) -> Retention:
        """Return the project to the server's default retention."""
        return self._model(Retention, "DELETE", "/retention")

    # --- monitoring ----------------------------------------------------------------------

    def timeseries(self, start: str | int, end: str | int, bucket: Bucket = "hour",
                   group_by: GroupBy | None = None, **filters: str) -> TimeSeries:
        """The project's final runs over time (docs/monitoring.md): from `start` to `end`
        (RFC 3339 or Unix ns; rounded out to whole buckets), in `minute`, `hour` or `day`
        buckets, one series per `group_by` value (run_name, model, agent, release,
        prompt_version). `filters`: run_name, agent, model, release, prompt_version."""
        unknown = set(filters) - set(TIMESERIES_FILTERS)
        if unknown:
            raise TypeError(f"timeseries() has no filter {sorted(unknown)}; it takes "
                            "run_name, agent, model, release and prompt_version")
        return self._model(TimeSeries, "GET", "/timeseries", params=_query({
            "start": str(start), "end": str(end), "bucket": bucket, "group_by": group_by,
            **filters}))

    # --- datasets ------------------------------------------------------------------------

    def list_datasets(self) -> list[Dataset]:
        return [Dataset.from_json(d) for d in self._items("GET", "/datasets")]

    def get_dataset(self, name: str) -> Dataset:
        return Dataset.from_json(self._json("GET", f"/datasets/{name}"))

    def create_dataset(self, name: str, description: str = "") -> Dataset:
        return Dataset.from_json(self._json("POST", "/datasets",
                                            json={"name": name, "description": description}))

    def update_dataset(self, name: str, *, new_name: str | None = None,
                       description: str | None = None) -> Dataset:
        body = {k: v for k, v in (("name", new_name), ("description", description))
                if v is not None}
        return Dataset.from_json(self._json("PATCH", f"/datasets/{name}", json=body))

    def delete_dataset(self, name: str) -> None:
        self._send("DELETE", f"/datasets/{name}")

    def list_items(self, dataset: str, *, limit: int = 100, cursor: str | None = None,
                   include_trajectory: bool = False) -> Page[DatasetItem]:
        return self._page(f"/datasets/{dataset}/items", DatasetItem.from_json,
                          {"limit": limit, "cursor": cursor,
                           "include_trajectory": include_trajectory or None})

    def iter_items(self, dataset: str, include_trajectory: bool = False) -> Iterator[DatasetItem]:
        """Every item of the set, page after page."""
        return self._all(lambda cursor: self.list_items(
            dataset, limit=1000, cursor=cursor, include_trajectory=include_trajectory))

    def add_item(self, dataset: str, **item: Any) -> DatasetItem:
        """Fields: input, reference_output, expectations, metadata, trajectory, source_trace_id,
        tags."""
        return DatasetItem.from_json(self._json("POST", f"/datasets/{dataset}/items", json=item))

    def get_item(self, dataset: str, item_id: str) -> DatasetItem:
        return DatasetItem.from_json(self._json("GET", f"/datasets/{dataset}/items/{item_id}"))

    def update_item(self, dataset: str, item_id: str, **changes: Any) -> DatasetItem:
        return DatasetItem.from_json(self._json("PATCH", f"/datasets/{dataset}/items/{item_id}",
                                                json=changes))

    def delete_item(self, dataset: str, item_id: str) -> None:
        self._send("DELETE", f"/datasets/{dataset}/items/{item_id}")

    def fill_dataset(self, dataset: str, *, trace_ids: Sequence[str] | None = None,
                     query: Mapping[str, Any] | None = None, sample_rate: float = 1.0,
                     limit: int = 100, tags: Sequence[str] = ()) -> FillResult:
        """Add trajectories by id, or by a query of GET /trajectories' filters."""
        body: dict[str, Any] = {"sample_rate": sample_rate, "limit": limit, "tags": list(tags)}
        if trace_ids is not None:
            body["trace_ids"] = list(trace_ids)
        else:
            body["query"] = dict(query or {})
        return FillResult.from_json(self._json("POST", f"/datasets/{dataset}/fill", json=body))

    @contextlib.contextmanager
    def export_dataset(self, dataset: str, format: str = "jsonl") -> Iterator[ExportStream]:
        """Stream the set as jsonl, csv, agentevals or atif:

            with hub.export_dataset("react") as export:
                for chunk in export.iter_bytes(): ...
        """
        request = self._http.build_request("GET", f"/datasets/{dataset}/export",
                                           params={"format": format})
        try:
            response = self._http.send(request, stream=True)
        except httpx.TransportError as exc:
            raise ServerUnreachable(f"cannot reach the trajhub server at {self.base_url}: "
                                    f"{exc or type(exc).__name__}") from None
        try:
            if response.status_code >= 400:
                response.read()
                raise ApiError(response.status_code, error_detail(response), "GET",
                               request.url.path)
            yield ExportStream(int(response.headers.get("x-item-count", "0")), response)
        finally:
            response.close()

    def import_items(self, dataset: str, jsonl: bytes, create: bool = False) -> ImportResult:
        """Import trajhub JSONL (as `export_dataset` writes it); all or nothing."""
        return ImportResult.from_json(self._json(
            "POST", f"/datasets/{dataset}/import", content=jsonl,
            params={"create": "true" if create else "false"},
            headers={"content-type": "application/x-ndjson"}))

    # --- evaluations ---------------------------------------------------------------------

    def create_evaluation(self, dataset: str, evaluators: Sequence[str | Mapping[str, Any]],
                          target: str = "snapshot", run: str | None = None) -> Evaluation:
        """Start an evaluation; it runs on the server (see `wait_evaluation`)."""
        body: dict[str, Any] = {"dataset": dataset, "target": target,
                                "evaluators": [e if isinstance(e, str) else dict(e)
                                               for e in evaluators]}
        if run is not None:
            body["run"] = run
        return Evaluation.from_json(self._json("POST", "/evaluations", json=body))

    def get_evaluation(self, evaluation_id: int) -> Evaluation:
        """The run's status and progress, with per-evaluator aggregates."""
        return Evaluation.from_json(self._json("GET", f"/evaluations/{evaluation_id}"))

    def list_evaluations(self, *, dataset: str | None = None, limit: int = 50,
                         cursor: str | None = None) -> Page[Evaluation]:
        return self._page("/evaluations", Evaluation.from_json,
                          {"dataset": dataset, "limit": limit, "cursor": cursor})

    def list_results(self, evaluation_id: int, *, failed: bool = False, limit: int = 500,
                     cursor: str | None = None) -> Page[EvaluationResult]:
        return self._page(f"/evaluations/{evaluation_id}/results", EvaluationResult.from_json,
                          {"failed": failed or None, "limit": limit, "cursor": cursor})

    def iter_results(self, evaluation_id: int, failed: bool = False
                     ) -> Iterator[EvaluationResult]:
        """Every result (or every one that did not pass), page after page."""
        return self._all(lambda cursor: self.list_results(
            evaluation_id, failed=failed, limit=5000, cursor=cursor))

    def wait_evaluation(self, evaluation_id: int, timeout: float = 3600, poll: float = 0.3,
                        progress: Callable[[Evaluation], None] | None = None) -> Evaluation:
        """Poll until the run is no longer `running`; TrajhubError after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            run = self.get_evaluation(evaluation_id)
            if progress is not None:
                progress(run)
            if not run.running:
                return run
            if time.monotonic() > deadline:
                raise TrajhubError(f"evaluation {evaluation_id} still running after "
                                   f"{timeout:.0f} s; see GET /api/v1/evaluations/"
                                   f"{evaluation_id}")
            time.sleep(poll)
