"""REST: sessions — the trajectories of a project sharing a session id (trajhub.records.sessions).

`GET /api/v1/sessions` lists them, the one with the latest turn first, with keyset paging;
`GET /api/v1/sessions/{session_id}` gives one session's turns in order, each with the user's
text and the answer, as a conversation reads."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, cast

import orjson
from fastapi import APIRouter, HTTPException, Path, Query
from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool
from starlette.convertors import Convertor, register_url_convertor

from trajhub.evaluators.pricing import Prices, priced_by_sum, usage_cost
from trajhub.normalizers.item_fields import turn_texts
from trajhub.records.pages import Page
from trajhub.records.scores import score_sort_name
from trajhub.records.sessions import SessionQuery, SessionSummary, SessionTurn
from trajhub.service.api.answers import CheckedRoute
from trajhub.service.api.cursors import decode_cursor, encode_cursor
from trajhub.service.api.models import NOT_FOUND, example_config
from trajhub.service.api.params import CURSOR_DESCRIPTION, MAX_TEXT, PREFIX, Text, no_nul
from trajhub.service.api.records import answer, filter_values
from trajhub.service.api.scopes import Project, Rt
from trajhub.service.prices import cost_json, prices_for, summary_cost
from trajhub.storage import session_reads
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


def _models(value: Any) -> dict[str, Any]:
    """A summary's `cost` as read (trajhub.records.sessions `_MODELS`): the session and its
    calls' count and billable tokens summed per model."""
    doc = orjson.loads(value) if isinstance(value, str | bytes) else value
    return cast(dict[str, Any], doc)


async def _calls(conn: Any, project: str, rows: list[session_reads.SessionSummaryRow],
                 prices: Prices) -> dict[tuple[str, str], list[Any]]:
    """The calls of the listed sessions' models that are priced call by call (a price by size
    or date: `priced_by_sum` is false); the others are priced from their sums."""
    wanted = [(doc["session"], model) for doc in (_models(r["cost"]) for r in rows)
              for model in doc["models"] if not priced_by_sum(prices, model or None)]
    return await session_reads.session_calls(conn, project, wanted)


def _session_cost(prices: Prices, calls: Mapping[tuple[str, str], list[Any]], value: Any
                  ) -> dict[str, Any]:
    """A session's cost, as usage_cost prices its turns' calls: a model priced by sum as one
    call of its billable tokens summed (the same money, the same tokens), the others call by
    call."""
    doc = _models(value)
    usage = {model: {"calls": calls.get((doc["session"], model))
                     or [[*(int(n) for n in figures[1:]), 0]]}
             for model, figures in doc["models"].items()}
    return cost_json(usage_cost(prices, usage), prices)


def _converters(prices: Prices, calls: Mapping[tuple[str, str], list[Any]] | None = None
                ) -> dict[str, Callable[[Any], Any]]:
    return {"cost": lambda usage: summary_cost(prices, usage),
            "cost_of_session": lambda value: _session_cost(prices, calls or {}, value)}


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
        rows = await session_reads.list_sessions(conn, project, f)
        calls = await _calls(conn, project, rows, prices)
    converters = _converters(prices, calls)
    last = rows[-1] if len(rows) == f.limit else None
    next_cursor = None if last is None else encode_cursor(
        last.sort_value if f.score_sort is not None else last.last_turn_ns, last.session_id)
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
    async with rt.db.acquire() as conn:
        summary = await session_reads.session_summary(conn, project, session_id)
        if summary is None:
            raise HTTPException(404, f"no session {session_id[:200]!r} in project {project!r}")
        rows = await session_reads.session_turns(conn, project, session_id, limit)
        prices = prices_for(rt.settings)
        calls = await _calls(conn, project, [summary], prices)
    converters = _converters(prices, calls)
    turns = await run_in_threadpool(_turns, rows, converters)
    doc = answer(SessionSummary, summary, converters)
    return {
        "session_id": summary.session_id, "summary": doc, "turns": turns,
        "truncated": doc["turns"] > len(turns)}
