"""REST: sessions — the trajectories of a project sharing a session id (trajhub.records.sessions).

`GET /api/v1/sessions` lists them, the one with the latest turn first, with keyset paging;
`GET /api/v1/sessions/{session_id}` gives one session's turns in order, each with the user's
text and the answer, as a conversation reads."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, HTTPException, Path, Query
from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool
from starlette.convertors import Convertor, register_url_convertor

from trajhub.evaluators.pricing import Prices, priced_by_sums, usage_cost
from trajhub.normalizers.item_fields import turn_texts
from trajhub.records.pages import Page
from trajhub.records.scores import score_sort_name
from trajhub.records.sessions import SessionQuery, SessionSummary, SessionTurn
from trajhub.service.api.answers import CheckedRoute
from trajhub.service.api.cursors import decode_cursor, next_page_cursor
from trajhub.service.api.models import NOT_FOUND, example_config
from trajhub.service.api.params import CURSOR_DESCRIPTION, MAX_TEXT, PREFIX, Text, no_nul
from trajhub.service.api.records import answer, filter_values
from trajhub.service.api.scopes import Project, Rt
from trajhub.service.prices import cost_json, prices_for, summary_cost
from trajhub.storage import session_reads
from trajhub.storage.database import Connection
from trajhub.storage.session_reads import MAX_TURNS


class _AnyText(Convertor[str]):
    """A path parameter of any text, `/` and newlines included: Starlette's `path` convertor
    stops at a newline, and its route pattern's `$` would then match before a trailing one
    (`/sessions/a%0A` would read session `a`)."""

    regex = "(?s:.+)"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("anytext", _AnyText())

router = APIRouter(prefix=PREFIX, route_class=CheckedRoute, tags=["sessions"])

class SessionPage(Page[SessionSummary]):
    model_config = example_config({"items": [SessionSummary.example()], "next_cursor": None})


class SessionDetail(BaseModel):
    model_config = example_config({"session_id": SessionSummary.example()["session_id"],
                                   "summary": SessionSummary.example(),
                                   "turns": [SessionTurn.example()], "truncated": False})
    session_id: str
    summary: SessionSummary
    turns: list[SessionTurn] = Field(description="in the order they started (ties by trace id)")
    truncated: bool = Field(description="true when the session has more turns than `limit`: "
                                        "`turns` holds the first `limit`")


class SessionListQuery(SessionQuery):
    """The query parameters of `GET /api/v1/sessions`: the filters (trajhub.records.sessions),
    then paging."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    sort: str | None = Field(
        None, pattern=r"^score:[A-Za-z0-9][A-Za-z0-9_.:/-]{0,99}$", description="`score:<name>`: "
        "by the session's mean of that score (its `scores`), highest first; only the sessions "
        "that have one are listed. Without it: the session with the latest turn first")
    limit: int = Field(50, ge=1, le=1000)
    cursor: Text | None = Field(None, description=CURSOR_DESCRIPTION)

    def list_filter(self) -> session_reads.SessionFilter:
        name = score_sort_name(self.sort) if self.sort else None
        cursor = decode_cursor(self.cursor, (float if name is not None else int, str))
        return session_reads.SessionFilter(
            values=filter_values(self), limit=self.limit, score_sort=name,
            cursor=(cursor[0], str(cursor[1])) if cursor is not None else None)


def _utf8(value: str) -> str:
    # a lone surrogate (from a path that was not UTF-8) can be neither stored nor looked up
    try:
        value.encode()
    except UnicodeEncodeError:
        raise ValueError("must be UTF-8 text") from None
    return value


#: a session id in a path: any text but NUL, at most MAX_TEXT characters (a `/` is part of it)
SessionIdPath = Annotated[str, Path(description="the session id (URL-encoded); any text but "
                                                f"NUL, at most {MAX_TEXT} characters",
                                    min_length=1, max_length=MAX_TEXT),
                          AfterValidator(no_nul), AfterValidator(_utf8)]


def _usage_sum(usages: list[Any]) -> dict[str, dict[str, Any]]:
    """The turns' token usage per model (JSON texts of normalizers.playback.model_usage),
    summed per model, and their model calls together (each call is priced on its own: tiers
    and dates); an unreadable count is 0, as in pricing's usage_cost."""
    total: dict[str, dict[str, Any]] = {}
    for usage in usages:
        doc = orjson.loads(usage) if isinstance(usage, str | bytes) else usage
        if not isinstance(doc, Mapping):
            continue
        for model, counts in doc.items():
            if not isinstance(counts, Mapping):
                continue
            into = total.setdefault(str(model), {})
            calls = into.setdefault("calls", [])  # extended in place: a session has thousands
            if not isinstance(counts.get("calls"), list):
                # a turn stored before model calls were kept: one call of its totals
                calls.append([counts.get(k, 0) for k in ("input_tokens", "output_tokens",
                                                         "cached_input_tokens",
                                                         "cache_write_tokens",
                                                         "reasoning_tokens")] + [0])
            for key, value in counts.items():
                if key == "calls" and isinstance(value, list):
                    calls.extend(value)
                elif isinstance(value, int) and not isinstance(value, bool):
                    into[key] = into.get(key, 0) + value
    return total


async def _with_exact_usage(conn: Connection, project: str, prices: Prices,
                            rows: list[session_reads.SessionSummaryRow]
                            ) -> list[session_reads.SessionSummaryRow]:
    """The summaries, each whose stored row sums the calls of a model that is not priced per
    token (a price by the call's size or date) given its final turns' calls instead, so that
    each call is priced on its own as before."""
    out = []
    for row in rows:
        stored = row.stored_usage
        if stored is not None and not all(priced_by_sums(prices, str(model))
                                           for model in orjson.loads(stored)):
            row = row.with_final_usages(
                await session_reads.final_usages(conn, project, row.session_id))
        out.append(row)
    return out


def _converters(prices: Prices) -> dict[str, Callable[[Any], Any]]:
    return {"cost": lambda usage: summary_cost(prices, usage),
            "cost_of_turns": lambda usages: cost_json(usage_cost(prices, _usage_sum(usages)),
                                                      prices)}


@router.get("/sessions", summary="List sessions (the runs sharing a session id), newest "
            "first", response_model=SessionPage)
async def list_sessions(rt: Rt, project: Project,
                        query: Annotated[SessionListQuery, Query()]) -> Any:
    """A session is the set of the project's trajectories that share a session id (read from
    `session_id`, `gen_ai.conversation.id`, LangGraph's `thread_id` or Coze Loop's thread and
    session tags; docs/conventions.md says which wins). Sessions come with the one whose latest
    turn started last first; every filter is a condition on the session as a whole."""
    f = query.list_filter()
    prices = prices_for(rt.settings)
    async with rt.db.acquire() as conn:
        rows = await _with_exact_usage(
            conn, project, prices, await session_reads.list_sessions(conn, project, f))
    converters = _converters(prices)
    next_cursor = next_page_cursor(rows, f.limit, lambda r: (
        r.sort_value if f.score_sort is not None else r.last_turn_ns, r.session_id))
    items = [answer(SessionSummary, r, converters) for r in rows]
    return {"items": items, "next_cursor": next_cursor}


def _turns(rows: list[session_reads.SessionTurnRow], converters: Mapping[str, Any]
           ) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        turn = answer(SessionTurn, row, converters)
        document = row.document
        if document is not None:
            turn["input"], turn["output"] = turn_texts(orjson.loads(document))
        out.append(turn)
    return out


@router.get("/sessions/{session_id:anytext}", summary="One session: its turns in order",
            response_model=SessionDetail, responses=NOT_FOUND)
async def get_session(
    session_id: SessionIdPath, rt: Rt, project: Project,
    limit: Annotated[int, Query(ge=1, le=MAX_TURNS, description="at most this many turns, "
                                "the first ones")] = 1000,
) -> Any:
    """Each turn is one run: the user's text (the last user message of its input), the answer
    (the last assistant message of its output), its status, tokens and cost, and the trace id of
    its trajectory."""
    prices = prices_for(rt.settings)
    async with rt.db.acquire() as conn:
        summary = await session_reads.session_summary(conn, project, session_id)
        if summary is None:
            raise HTTPException(404, f"no session {session_id[:200]!r} in project {project!r}")
        [summary] = await _with_exact_usage(conn, project, prices, [summary])
        rows = await session_reads.session_turns(conn, project, session_id, limit)
    converters = _converters(prices)
    turns = await run_in_threadpool(_turns, rows, converters)
    doc = answer(SessionSummary, summary, converters)
    return {
        "session_id": summary.session_id, "summary": doc, "turns": turns,
        "truncated": doc["turns"] > len(turns)}
