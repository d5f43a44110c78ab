"""REST: monitoring alert rules — create, list, read, edit (mute, switch off), delete, and read
a rule's history of states (docs/alerts.md).

The record is declared once in trajhub.records.alerts; this module checks what a client sends:
the metric (one of METRICS), the window (1 minute to 7 days), the thresholds (in the order the
condition reads them), the filter (the names rollup_contributions filters on) and the webhook's
address (http or https, with a host). Creating and editing take an admin key, reading a read
key."""

from __future__ import annotations

import secrets
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from fastapi import APIRouter, HTTPException, Path, Response
from pydantic import AfterValidator, BaseModel, BeforeValidator, Field

from trajhub.records import alerts as declared
from trajhub.records.alerts import NAME_MAX, Metric
from trajhub.records.pages import Page
from trajhub.records.scores import NAME_PATTERN
from trajhub.service.api.answers import CheckedRoute
from trajhub.service.api.cursors import decode_cursor, next_page_cursor
from trajhub.service.api.found import RecordKind, deleted, edited, found, patched
from trajhub.service.api.models import BODY_CONFIG, NOT_FOUND, ErrorDetail, example_config
from trajhub.service.api.params import INT64_MAX, PREFIX, Cursor, PageLimit, no_nul, whole_number
from trajhub.service.api.records import answer
from trajhub.service.api.scopes import Project, Rt, needs
from trajhub.service.auth import ADMIN
from trajhub.storage import alerts as alert_store
from trajhub.storage.alerts import AlertRuleRow
from trajhub.storage.database import Connection

router = APIRouter(prefix=PREFIX, route_class=CheckedRoute, tags=["alerts"])

#: a window of a minute at least (the evaluation's own cadence is seconds) and a week at most
#: (the rollups' contributions are read run by run)
WINDOW_MIN, WINDOW_MAX = 60, 7 * 24 * 3600
URL_MAX = 2000

AlertId = Annotated[int, Path(ge=1, le=INT64_MAX, description="the alert rule's `id`")]
AlertName = Annotated[str, Field(min_length=1, max_length=NAME_MAX, pattern=NAME_PATTERN,
                                 description=f"unique in the project: up to {NAME_MAX} "
                                 "letters, digits and `_.:/-`")]
Threshold = Annotated[float, Field(allow_inf_nan=False, ge=-1e15, le=1e15)]
Window = Annotated[int, Field(ge=WINDOW_MIN, le=WINDOW_MAX, description=(
    f"the window measured, in seconds: the runs that started in the last this many "
    f"({WINDOW_MIN} to {WINDOW_MAX}, a week)")), BeforeValidator(whole_number)]
FilterText = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(no_nul)]
ScoreName = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(no_nul)]
Secret = Annotated[str, Field(min_length=16, max_length=200, description=(
    "the key of the notifications' HMAC-SHA256 signature (16 to 200 characters); one is made "
    "when none is given. Answered once, by the creation")), AfterValidator(no_nul)]


def _webhook(value: str) -> str:
    """An http(s) address with a host: anything else is refused, naming the problem."""
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"not a URL: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise ValueError("must start with http:// or https://")
    if not parts.hostname:
        raise ValueError("has no host")
    if port == 0:
        raise ValueError("port 0 is no port")
    if any(c.isspace() or ord(c) < 32 for c in value):
        raise ValueError("must not contain spaces or control characters")
    return value


WebhookUrl = Annotated[str, Field(min_length=8, max_length=URL_MAX, pattern=r"^https?://",
                                  description="where each change of state is POSTed "
                                  "(http or https)"), AfterValidator(_webhook)]

_BAD: dict[int | str, dict[str, Any]] = {400: {
    "model": ErrorDetail, "description": "thresholds in the wrong order for the condition, a "
    "score name missing or given for another metric (the message names it)"}}
_TAKEN: dict[int | str, dict[str, Any]] = {409: {
    "model": ErrorDetail, "description": "the project has an alert rule of that name"}}


class AlertFilter(BaseModel):
    """Only the runs with these (each exactly as stored; none: every run)."""

    model_config = BODY_CONFIG
    run_name: FilterText | None = Field(None, description=declared.FILTERS["run_name"])
    agent: FilterText | None = Field(None, description=declared.FILTERS["agent"])
    model: FilterText | None = Field(None, description=declared.FILTERS["model"])
    release: FilterText | None = Field(None, description=declared.FILTERS["release"])


class AlertCreate(BaseModel):
    """A new alert rule."""

    model_config = BODY_CONFIG
    name: AlertName
    metric: Metric = Field(description="what it measures: " + "; ".join(
        f"`{k}` {v}" for k, v in declared.METRICS.items()))
    score_name: ScoreName | None = Field(None, description="for `score_mean` (and only it): "
                                         "the score's name")
    condition: Literal["above", "below"] = Field(
        "above", description="`above`: a value over a threshold breaches it; `below`: under it")
    warning_threshold: Threshold | None = Field(
        None, description="`warning` past this; before `alert_threshold` in the condition's "
        "direction (below it for `above`); null: no warning")
    alert_threshold: Threshold = Field(description="`firing` past this")
    window_seconds: Window
    filter: AlertFilter = Field(default_factory=lambda: AlertFilter.model_validate({}))
    webhook_url: WebhookUrl
    secret: Secret | None = None
    enabled: bool = True
    muted: bool = False


class AlertPatch(BaseModel):
    """The fields to change; the others stay (a null leaves a field as it is, but for
    `warning_threshold` and `score_name`, where null means none)."""

    model_config = BODY_CONFIG
    name: AlertName | None = None
    metric: Metric | None = None
    score_name: ScoreName | None = None
    condition: Literal["above", "below"] | None = None
    warning_threshold: Threshold | None = None
    alert_threshold: Threshold | None = None
    window_seconds: Window | None = None
    filter: AlertFilter | None = None
    webhook_url: WebhookUrl | None = None
    secret: Secret | None = None
    enabled: bool | None = Field(None, description="false: not evaluated")
    muted: bool | None = Field(None, description="true: not evaluated, nothing sent, until "
                               "false again")


class AlertRule(declared.AlertRule):
    model_config = example_config(declared.AlertRule.example())


class AlertRuleCreated(declared.AlertRule):
    """An alert rule just created, with its signing secret (never answered again)."""

    model_config = example_config({**declared.AlertRule.example(),
                                   "secret": "whsec_3q2+7w9Zk1X0s8hVd6yBfQ"})
    secret: str = Field(description="the key of the notifications' HMAC-SHA256 signature "
                        "(`X-Trajhub-Signature-256`); keep it, it is not shown again")


class AlertRuleList(Page[AlertRule]):
    model_config = example_config({"items": [declared.AlertRule.example()],
                                   "next_cursor": None})
    items: list[AlertRule] = Field(description="oldest first")


class AlertEvent(declared.AlertEvent):
    model_config = example_config(declared.AlertEvent.example())


class AlertEventList(Page[AlertEvent]):
    model_config = example_config({"items": [declared.AlertEvent.example()],
                                   "next_cursor": None})
    items: list[AlertEvent] = Field(description="newest first")


def checked(values: dict[str, Any]) -> dict[str, Any]:
    """A rule's columns checked as a whole; 400 naming the problem."""
    metric, score = values["metric"], values.get("score_name")
    if metric == "score_mean" and not score:
        raise HTTPException(400, "score_name: the metric score_mean needs the score's name")
    if metric != "score_mean" and score:
        raise HTTPException(400, f"score_name: only for the metric score_mean, not {metric}")
    alert, warning = values["alert_threshold"], values.get("warning_threshold")
    for name, value in (("alert_threshold", alert), ("warning_threshold", warning)):
        if value is None:
            continue
        if metric == "error_rate" and not 0 <= value <= 1:
            raise HTTPException(400, f"{name}: an error rate is a share, 0 to 1 (10 %: 0.1); "
                                     f"got {value}")
        if metric != "score_mean" and value < 0:
            raise HTTPException(400, f"{name}: {metric} is never negative; got {value}")
    if warning is not None:
        above = values["condition"] == "above"
        if (above and not warning < alert) or (not above and not warning > alert):
            side = "below" if above else "above"
            raise HTTPException(400, f"warning_threshold ({warning}) must be {side} "
                                     f"alert_threshold ({alert}) for the condition "
                                     f"{values['condition']!r}: the warning comes first")
    if isinstance(values.get("filter"), dict):
        values["filter"] = {k: v for k, v in values["filter"].items() if v is not None}
    for name in ("alert_threshold", "warning_threshold"):
        if values.get(name) is not None:
            values[name] = float(values[name])
    return values


_RULE = RecordKind("alert rule", "an")


async def _stored_alert(conn: Connection, project: str, alert_id: int) -> AlertRuleRow:
    """The project's alert rule, or a 404."""
    return found(await alert_store.get(conn, project, alert_id),
                 _RULE.missing(alert_id, project))


@router.post("/alerts", status_code=201, response_model=AlertRuleCreated,
             openapi_extra=needs(ADMIN), responses={**_BAD, **_TAKEN},
             summary="Create a monitoring alert rule")
async def create_alert(rt: Rt, project: Project, body: AlertCreate) -> Any:
    """From now on the rule is evaluated every few seconds (TRAJHUB_ALERT_INTERVAL_SECONDS);
    each change of its state is POSTed once to `webhook_url`, signed with `secret`
    (docs/alerts.md). The answer holds the secret, which no other answer shows."""
    values = checked(body.model_dump())
    values["secret"] = values.get("secret") or "whsec_" + secrets.token_urlsafe(24)
    async with rt.db.acquire() as conn:
        row = await alert_store.create(conn, project, values)
    if row is None:
        raise HTTPException(409, _RULE.taken(project, body.name))
    return {**answer(declared.AlertRule, row), "secret": values["secret"]}


@router.get("/alerts", response_model=AlertRuleList,
            summary="The project's alert rules, oldest first")
async def list_alerts(rt: Rt, project: Project,
                      limit: PageLimit = 100,
                      cursor: Cursor = None) -> Any:
    after = decode_cursor(cursor, (int,))
    async with rt.db.acquire() as conn:
        rows = await alert_store.list_rules(conn, project, after[0] if after else 0, limit)
    return AlertRuleList.answer([answer(declared.AlertRule, r) for r in rows],
                                next_page_cursor(rows, limit, lambda r: (r.id,)))


@router.get("/alerts/{alert_id}", response_model=AlertRule, responses=NOT_FOUND,
            summary="One alert rule, with its state")
async def get_alert(alert_id: AlertId, rt: Rt, project: Project) -> Any:
    async with rt.db.acquire() as conn:
        row = await _stored_alert(conn, project, alert_id)
    return answer(declared.AlertRule, row)


@router.patch("/alerts/{alert_id}", response_model=AlertRule, openapi_extra=needs(ADMIN),
              responses={**NOT_FOUND, **_BAD, **_TAKEN},
              summary="Edit an alert rule, mute it (`muted: true`) or unmute it")
async def edit_alert(alert_id: AlertId, rt: Rt, project: Project, body: AlertPatch) -> Any:
    """Only the fields given change; the state stays until the next evaluation, which is due
    at once (a change it finds is notified as always)."""
    given = patched(body, nullable=("warning_threshold", "score_name"))
    async with rt.db.acquire() as conn:
        current = answer(declared.AlertRule, await _stored_alert(conn, project, alert_id))
        merged = checked({**current, **given})
        row = await edited(alert_store.update(conn, project, alert_id,
                                              {c: merged[c] for c in given}),
                           _RULE.missing(alert_id, project),
                           _RULE.taken(project, given.get("name")))
    return answer(declared.AlertRule, row)


@router.delete("/alerts/{alert_id}", status_code=204, responses=NOT_FOUND,
               summary="Delete an alert rule and its history")
async def delete_alert(alert_id: AlertId, rt: Rt, project: Project) -> Response:
    return await deleted(rt.db, _RULE.missing(alert_id, project),
                         alert_store.delete, project, alert_id)


@router.get("/alerts/{alert_id}/events", response_model=AlertEventList, responses=NOT_FOUND,
            summary="An alert rule's changes of state, newest first, with their delivery")
async def list_alert_events(alert_id: AlertId, rt: Rt, project: Project,
                            limit: PageLimit = 100,
                            cursor: Cursor = None) -> Any:
    before = decode_cursor(cursor, (int,))
    async with rt.db.acquire() as conn:
        await _stored_alert(conn, project, alert_id)
        rows = await alert_store.events(conn, project, alert_id,
                                        before[0] if before else None, limit)
    items = [answer(declared.AlertEvent, r) for r in rows]
    return AlertEventList.answer(items, next_page_cursor(items, limit, lambda i: (i["id"],)))
