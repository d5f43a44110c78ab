"""Sessions: the runs of a project sharing a session id, over REST, the client and the
CLI, against a real server.

Two kinds of data:
- the two-turn conversation captured under each instrumentation (tests/capture/conversation.py;
  ground truth in tests/fixtures/sessions/ground_truth.json, written from the script), which
  must land as one session of two turns, in order, under the id the documented precedence
  gives (docs/conventions.md, "Which id is the session");
- hand-built OTel GenAI runs whose session, user, agent, error, tokens and times are chosen
  here, for the list's filters, order, paging and sums.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import asyncpg
import httpx
import pytest

from tests.captures import Capture, replay
from tests.cli_runner import run_cli
from tests.harness import (
    CapturedQuery,
    ServerProcess,
    TestDatabase,
    final_trajectory,
    get_json,
    run,
    separate_database,
)
from tests.normalize_support import load_file
from tests.otlp_builders import new_span_id, new_trace_id, request, span
from trajhub.service.client.api import ApiError, TrajhubClient

ROOT = Path(__file__).parent.parent
SESSIONS = ROOT / "tests" / "fixtures" / "sessions"
TRUTH = json.loads((SESSIONS / "ground_truth.json").read_text())
CLIENTS = sorted(TRUTH["session_id_by_client"])
PB = {"content-type": "application/x-protobuf"}
T0 = 1_700_000_000_000_000_000
SECOND = 1_000_000_000
#: gpt-4o-mini in genai-prices' bundled data (evaluators/pricing.py), USD per 1M tokens
PRICE_IN, PRICE_OUT = 0.15, 0.60


def conversation_captures(client: str) -> list[Capture]:
    out = []
    for body in sorted((SESSIONS / client / "conversation").glob("http_*.bin")):
        meta = json.loads(body.with_suffix(".json").read_text())
        headers = {k.lower(): v for k, v in meta["headers"].items()
                   if k.lower() in ("content-type", "content-encoding")}
        out.append(Capture(body, "http", meta["path"], headers))
    return out


def iso(ns: int) -> datetime:
    return datetime.fromtimestamp(ns / 1e9, tz=UTC)


def parsed(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


# ----------------------------------------------------------------- the captured conversations

@pytest.mark.parametrize("client", CLIENTS)
def test_a_captured_two_turn_conversation_is_one_session_of_two_turns_in_order(
        client: str, server: ServerProcess, project: str) -> None:
    captures = conversation_captures(client)
    assert captures, f"no conversation capture for {client}"
    trace_ids: set[str] = set()
    for capture in captures:
        response = replay(capture, server.http, server.grpc, project)
        assert isinstance(response, httpx.Response) and response.status_code == 200
        trace_ids.update(s.trace_id for s in load_file(capture.path))
    expected_id = TRUTH["session_id_by_client"][client]
    expected = TRUTH["turns"]
    with httpx.Client() as c:
        for trace_id in trace_ids:
            final_trajectory(c, server.http, project, trace_id)
        listed = get_json(c, f"{server.http}/api/v1/sessions", project=project)
        assert [s["session_id"] for s in listed["items"]] == [expected_id]
        summary = listed["items"][0]
        assert summary["turns"] == TRUTH["session"]["turns"] == 2
        assert summary["failed_turns"] == 0 and summary["open_turns"] == 0
        assert summary["input_tokens"] == TRUTH["session"]["input_tokens"]
        assert summary["output_tokens"] == TRUTH["session"]["output_tokens"]
        detail = get_json(c, f"{server.http}/api/v1/sessions/{quote(expected_id, safe='')}",
                          project=project)
        # the trajectory list's Input and Output columns: the user's text and the answer, not
        # the message JSON (the script's questions and answers are short: no cut)
        listed_runs = get_json(c, f"{server.http}/api/v1/trajectories", project=project,
                               session_id=expected_id)["items"]
    assert sorted((t["input_preview"], t["output_preview"]) for t in listed_runs) == sorted(
        (t["question"], t["answer"]) for t in expected)
    turns = detail["turns"]
    assert detail["session_id"] == expected_id and detail["truncated"] is False
    assert [t["input"] for t in turns] == [t["question"] for t in expected]
    assert [t["output"] for t in turns] == [t["answer"] for t in expected]
    assert [(t["input_tokens"], t["output_tokens"]) for t in turns] == \
        [(t["input_tokens"], t["output_tokens"]) for t in expected]
    assert [t["status"] for t in turns] == ["final", "final"]
    assert [t["has_error"] for t in turns] == [False, False]
    assert parsed(turns[0]["start_time"]) < parsed(turns[1]["start_time"])
    # each turn is one of the captured traces (the others, e.g. Traceloop's create_agent side
    # trace, carry no session id)
    assert {t["trace_id"] for t in turns} <= trace_ids and len({t["trace_id"] for t in turns}) == 2
    # the list's first input is the user's text of the first turn, not its message JSON
    assert summary["first_input_preview"] == expected[0]["question"]
    assert summary["first_trace_id"] == turns[0]["trace_id"]
    assert detail["summary"]["first_input_preview"] == expected[0]["question"]
    assert parsed(detail["summary"]["start_time"]) == parsed(turns[0]["start_time"])
    assert parsed(detail["summary"]["last_turn_time"]) == parsed(turns[1]["start_time"])


# ----------------------------------------------------------------- hand-built sessions

@dataclass(frozen=True)
class Turn:
    session: str | None
    at: int  # seconds after T0
    user: str = "u1"
    agent: str = "assistant"
    error: bool = False
    tokens: tuple[int, int] = (100, 10)


#: the sessions below, newest latest turn first: odd (50 s), s-c (30 s), s-a (10 s), s-b (5 s)
ODD = "odd/session\nid ✓ \"quoted\""
TURNS = [
    Turn("s-a", 0, tokens=(100, 10)),
    Turn("s-a", 10, error=True, tokens=(200, 20)),
    Turn("s-b", 5, user="u2", agent="planner", tokens=(1000, 100)),
    Turn("s-c", 20, tokens=(1, 1)),
    Turn("s-c", 30, tokens=(2, 2)),
    Turn(None, 40),  # no session: in no session
    Turn(ODD, 50, user="u3", tokens=(7, 3)),
]


def _post_turn(c: httpx.Client, server: ServerProcess, project: str, turn: Turn) -> str:
    tid, root = new_trace_id(), new_span_id()
    start = T0 + turn.at * SECOND
    attrs: dict[str, Any] = {"gen_ai.operation.name": "invoke_agent",
                             "gen_ai.agent.name": turn.agent, "user.id": turn.user}
    if turn.session is not None:
        attrs["session.id"] = turn.session
    spans = [
        span(tid, f"invoke_agent {turn.agent}", span_id=root, start=start,
             duration=2 * SECOND, attributes=attrs, error=turn.error),
        span(tid, "chat gpt-4o-mini", parent=root, start=start + 1000, duration=SECOND,
             attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini",
                         "gen_ai.usage.input_tokens": turn.tokens[0],
                         "gen_ai.usage.output_tokens": turn.tokens[1]}),
    ]
    r = c.post(f"{server.http}/v1/traces", content=request(spans).SerializeToString(),
               headers={**PB, "trajhub-project": project})
    assert r.status_code == 200, r.text
    return tid.hex()


@dataclass(frozen=True)
class Built:
    project: str
    traces: list[str]  # per TURNS


@pytest.fixture(scope="module")
def built(server: ServerProcess) -> Iterator[Built]:
    project = "sessions-" + new_trace_id().hex()[:10]
    with httpx.Client() as c:
        traces = [_post_turn(c, server, project, t) for t in TURNS]
        for trace_id in traces:
            final_trajectory(c, server.http, project, trace_id)
    yield Built(project, traces)


def _ids(server: ServerProcess, project: str, **params: Any) -> list[str]:
    with httpx.Client() as c:
        return [s["session_id"] for s in get_json(c, f"{server.http}/api/v1/sessions",
                                                  project=project, **params)["items"]]


def test_sessions_are_listed_latest_turn_first_and_a_run_without_one_is_in_none(
        server: ServerProcess, built: Built) -> None:
    assert _ids(server, built.project) == [ODD, "s-c", "s-a", "s-b"]


def test_each_filter_is_a_condition_on_the_whole_session(server: ServerProcess,
                                                          built: Built) -> None:
    p = built.project
    assert _ids(server, p, user_id="u1") == ["s-c", "s-a"]
    assert _ids(server, p, agent="PLANNER") == ["s-b"]
    assert _ids(server, p, has_error="true") == ["s-a"]
    assert _ids(server, p, has_error="false") == [ODD, "s-c", "s-b"]
    # a turn at or after 15 s / before 6 s
    assert _ids(server, p, start=str(T0 + 15 * SECOND)) == [ODD, "s-c"]
    assert _ids(server, p, end=iso(T0 + 6 * SECOND).isoformat()) == ["s-a", "s-b"]
    assert _ids(server, p, min_turns=2, user_id="u1") == ["s-c", "s-a"]
    assert _ids(server, p, start=str(T0 + 8 * SECOND), user_id="u1", has_error="false") \
        == ["s-c"]
    assert _ids(server, p, user_id="nobody") == []


def test_keyset_paging_walks_every_session_once(server: ServerProcess, built: Built) -> None:
    seen: list[str] = []
    cursor = None
    with httpx.Client() as c:
        for _ in range(10):
            page = get_json(c, f"{server.http}/api/v1/sessions", project=built.project,
                            limit=1, **({"cursor": cursor} if cursor else {}))
            seen += [s["session_id"] for s in page["items"]]
            cursor = page["next_cursor"]
            if not cursor:
                break
    assert seen == [ODD, "s-c", "s-a", "s-b"]


def test_a_session_sums_its_turns(server: ServerProcess, built: Built) -> None:
    with httpx.Client() as c:
        items = {s["session_id"]: s for s in get_json(
            c, f"{server.http}/api/v1/sessions", project=built.project)["items"]}
    a = items["s-a"]
    assert (a["turns"], a["failed_turns"], a["open_turns"]) == (2, 1, 0)
    assert (a["input_tokens"], a["output_tokens"]) == (300, 30)
    assert a["user_ids"] == ["u1"]
    assert parsed(a["start_time"]) == iso(T0)
    assert parsed(a["last_turn_time"]) == iso(T0 + 10 * SECOND)
    assert parsed(a["end_time"]) == iso(T0 + 12 * SECOND)  # the last turn lasted 2 s
    assert a["cost"]["usd"] == pytest.approx((300 * PRICE_IN + 30 * PRICE_OUT) / 1e6)
    assert a["cost"]["complete"] is True
    assert (a["cost"]["input_tokens"], a["cost"]["output_tokens"]) == (300, 30)
    assert items["s-b"]["user_ids"] == ["u2"] and items["s-b"]["failed_turns"] == 0


def test_scores_of_turns_are_averaged_filtered_on_and_shown_per_turn(
        server: ServerProcess) -> None:
    project = "session-scores-" + new_trace_id().hex()[:10]
    with httpx.Client() as c:
        x1, x2, y1 = (_post_turn(c, server, project, t) for t in (
            Turn("s-x", 0), Turn("s-x", 10), Turn("s-y", 20)))
        for trace_id in (x1, x2, y1):
            final_trajectory(c, server.http, project, trace_id)

        def score(trace_id: str, name: str, value: Any) -> None:
            r = c.post(f"{server.http}/api/v1/trajectories/{trace_id}/scores",
                       json={"name": name, "value": value}, headers={"trajhub-project": project})
            assert r.status_code in (200, 201), r.text

        score(x1, "correctness", 1.0)
        score(x1, "correctness", 0.0)  # the newer score of a name is the turn's
        score(x1, "ok", True)
        score(x2, "correctness", 0.5)
        score(x2, "verdict", "pass")
        # a step's score is not the turn's: it counts in no mean and no filter
        chat = next(s["span_id"] for s in get_json(
            c, f"{server.http}/api/v1/traces/{x2}", project=project, view="flat")["spans"]
            if s["name"].startswith("chat "))
        r = c.post(f"{server.http}/api/v1/trajectories/{x2}/scores",
                   json={"name": "correctness", "value": 0.0, "step_id": chat},
                   headers={"trajhub-project": project})
        assert r.status_code in (200, 201), r.text
        score(y1, "correctness", 0.9)
        listed = {s["session_id"]: s for s in get_json(
            c, f"{server.http}/api/v1/sessions", project=project)["items"]}
        detail = get_json(c, f"{server.http}/api/v1/sessions/s-x", project=project)
        bad = c.get(f"{server.http}/api/v1/sessions", params={"score": "=oops"},
                    headers={"trajhub-project": project})
    # means over the turns that have the name: (0.0 + 0.5) / 2; a boolean counts 1; a category
    # has no mean
    assert listed["s-x"]["scores"] == {"correctness": pytest.approx(0.25), "ok": 1.0}
    assert listed["s-y"]["scores"] == {"correctness": pytest.approx(0.9)}
    assert _ids(server, project, score="correctness>=0.8") == ["s-y"]
    assert _ids(server, project, score="correctness<=0.1") == ["s-x"]
    assert _ids(server, project, score="verdict=pass") == ["s-x"]
    assert _ids(server, project, score="ok=false") == []
    assert [t["scores"] for t in detail["turns"]] == [
        {"correctness": 0.0, "ok": True}, {"correctness": 0.5, "verdict": "pass"}]
    assert detail["summary"]["scores"] == listed["s-x"]["scores"]
    assert bad.status_code == 400 and "score" in bad.text
    # sorted by the mean correctness, highest first; a session without it is not listed
    assert _ids(server, project, sort="score:correctness") == ["s-y", "s-x"]
    assert _ids(server, project, sort="score:ok") == ["s-x"]
    assert _ids(server, project, sort="score:correctness", score="verdict=pass") == ["s-x"]
    walked, cursor = [], None
    with httpx.Client() as c:
        for _ in range(4):
            page = get_json(c, f"{server.http}/api/v1/sessions", project=project, limit=1,
                            sort="score:correctness", **({"cursor": cursor} if cursor else {}))
            walked += [s["session_id"] for s in page["items"]]
            cursor = page["next_cursor"]
            if not cursor:
                break
    assert walked == ["s-y", "s-x"]


def test_one_session_gives_its_turns_in_order(server: ServerProcess, built: Built) -> None:
    with httpx.Client() as c:
        doc = get_json(c, f"{server.http}/api/v1/sessions/s-a", project=built.project)
        one = get_json(c, f"{server.http}/api/v1/sessions/s-a", project=built.project, limit=1)
    assert [t["trace_id"] for t in doc["turns"]] == built.traces[:2]
    assert [t["has_error"] for t in doc["turns"]] == [False, True]
    assert [(t["input_tokens"], t["output_tokens"]) for t in doc["turns"]] == [(100, 10),
                                                                              (200, 20)]
    assert doc["turns"][1]["cost"]["usd"] == pytest.approx((200 * PRICE_IN + 20 * PRICE_OUT)
                                                           / 1e6)
    assert doc["summary"]["turns"] == 2 and doc["truncated"] is False
    assert [t["trace_id"] for t in one["turns"]] == built.traces[:1] and one["truncated"]


def test_a_session_id_with_odd_characters_reads_back_and_bad_ones_are_a_4xx(
        server: ServerProcess, built: Built) -> None:
    base = f"{server.http}/api/v1/sessions"
    with httpx.Client() as c:
        odd = c.get(f"{base}/{quote(ODD, safe='')}", params={"project": built.project})
        assert odd.status_code == 200, odd.text
        assert odd.json()["session_id"] == ODD
        assert [t["trace_id"] for t in odd.json()["turns"]] == [built.traces[6]]
        unknown = c.get(f"{base}/no-such-session", params={"project": built.project})
        assert unknown.status_code == 404 and "no-such-session" in unknown.json()["detail"]
        newline = c.get(f"{base}/s-a%0A", params={"project": built.project})
        assert newline.status_code == 404
        nul = c.get(f"{base}/s%00a", params={"project": built.project})
        assert nul.status_code == 400 and "NUL" in nul.text
        long = c.get(f"{base}/{'x' * 1001}", params={"project": built.project})
        assert long.status_code == 400 and "1000" in long.text
        not_utf8 = c.get(f"{base}/%FF%FE", params={"project": built.project})
        assert not_utf8.status_code in (400, 404), not_utf8.text
        bad_cursor = c.get(base, params={"project": built.project, "cursor": "nope"})
        assert bad_cursor.status_code == 400 and "cursor" in bad_cursor.text
        bad_time = c.get(base, params={"project": built.project, "start": "yesterday"})
        assert bad_time.status_code == 400 and "start" in bad_time.text


# ----------------------------------------------------------------- client and CLI

def test_the_client_lists_pages_and_reads_a_session(server: ServerProcess, built: Built) -> None:
    with TrajhubClient(server.http, project=built.project) as hub:
        page = hub.list_sessions(user_id="u1")
        assert [s.session_id for s in page.items] == ["s-c", "s-a"]
        assert page.items[1].input_tokens == 300 and page.items[1].cost.usd is not None
        assert [s.session_id for s in hub.iter_sessions(limit=1)] == [ODD, "s-c", "s-a", "s-b"]
        session = hub.get_session(ODD)
        assert session.session_id == ODD and session.summary.turns == 1
        assert [t.trace_id for t in session.turns] == [built.traces[6]]
        with pytest.raises(TypeError, match="unknown filter"):
            hub.list_sessions(colour=1)
        with pytest.raises(ApiError) as missing:
            hub.get_session("no-such-session")
        assert missing.value.status == 404


def trajhub(*argv: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*argv, keep_trajhub_env=True)


def test_cli_lists_sessions_and_shows_one_as_a_transcript(server: ServerProcess,
                                                          project: str) -> None:
    (capture,) = conversation_captures("openinference")
    replay(capture, server.http, server.grpc, project)
    with httpx.Client() as c:
        for trace_id in {s.trace_id for s in load_file(capture.path)}:
            final_trajectory(c, server.http, project, trace_id)
    where = ["--url", server.http, "--project", project]
    listed = trajhub("sessions", "list", *where)
    assert listed.returncode == 0, listed.stderr
    header, row = listed.stdout.splitlines()[:2]
    assert header.split()[:2] == ["SESSION", "TURNS"]
    session_id = TRUTH["session_id_by_client"]["openinference"]
    assert row.split()[:2] == [session_id, "2"]
    shown = trajhub("sessions", "show", session_id, *where)
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    questions = [t["question"] for t in TRUTH["turns"]]
    answers = [t["answer"] for t in TRUTH["turns"]]
    # the transcript: turn 1's question and answer, then turn 2's
    positions = [text.index(f"user: {questions[0]}"), text.index(f"assistant: {answers[0]}"),
                 text.index(f"user: {questions[1]}"), text.index(f"assistant: {answers[1]}")]
    assert positions == sorted(positions)
    as_json = json.loads(trajhub("sessions", "show", session_id, "--json", *where).stdout)
    assert [t["input"] for t in as_json["turns"]] == questions
    missing = trajhub("sessions", "show", "no-such-session", *where)
    assert missing.returncode == 2 and "no-such-session" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1


# ----------------------------------------------------------------- the list at scale

def test_the_session_list_reads_indexes_and_pages_as_a_full_aggregate_would(
        database: TestDatabase) -> None:
    """With a few thousand runs in 1,000 sessions, two thirds of them final, and statistics
    gathered, the list's query reads indexes, never a filled partition whole (the sessions'
    rows by their latest turn when every filter reads the rows, migration 0094; else migration
    0030's walk of each session's latest turn), and for every filter its pages hold exactly the
    sessions that an aggregate of every run, computed here, gives, in its order (for fixed
    filters, and 25 combinations drawn at random)."""
    import random
    from datetime import UTC
    from datetime import datetime as dt

    from trajhub.records import write_values
    from trajhub.records.trajectories import TrajectorySummary
    from trajhub.storage import derivation_store, session_reads
    from trajhub.storage.migrate import migrate

    rng = random.Random(21)
    runs = []
    for i in range(3000):
        runs.append({"trace_id": f"{i:032x}", "start_ns": T0 + rng.randrange(10**6) * 1000,
                     "session_id": f"s{i % 1000:04d}" if i < 2600 else None,
                     "user_id": f"u{i % 7}", "agent_names": [f"A{i % 5}"],
                     "has_error": i % 53 == 0})

    def expected(keep: Any) -> list[str]:
        sessions: dict[str, list[dict[str, Any]]] = {}
        for r in runs:
            if r["session_id"] is not None:
                sessions.setdefault(r["session_id"], []).append(r)
        chosen = [(max(t["start_ns"] for t in turns), sid) for sid, turns in sessions.items()
                  if keep(turns)]
        return [sid for _, sid in sorted(chosen, reverse=True)]

    cases: list[tuple[dict[str, Any], Any]] = [
        ({}, lambda ts: True),
        ({"user_id": "u3"}, lambda ts: any(t["user_id"] == "u3" for t in ts)),
        ({"agent": "a2"}, lambda ts: any(t["agent_names"] == ["A2"] for t in ts)),
        ({"has_error": True}, lambda ts: any(t["has_error"] for t in ts)),
        ({"has_error": False}, lambda ts: not any(t["has_error"] for t in ts)),
        ({"min_turns": 3}, lambda ts: len(ts) >= 3),
        ({"start": T0 + 900_000_000}, lambda ts: max(t["start_ns"] for t in ts)
         >= T0 + 900_000_000),
        # every kind at once: a condition on the latest turn, sets in and out, a count
        ({"start": T0 + 300_000_000, "user_id": "u2", "agent": "a4", "has_error": False,
          "min_turns": 2},
         lambda ts: max(t["start_ns"] for t in ts) >= T0 + 300_000_000
         and any(t["user_id"] == "u2" for t in ts) and any(t["agent_names"] == ["A4"]
                                                            for t in ts)
         and not any(t["has_error"] for t in ts) and len(ts) >= 2),
        ({"end": T0 + 100_000_000, "user_id": "u1"},
         lambda ts: min(t["start_ns"] for t in ts) < T0 + 100_000_000
         and any(t["user_id"] == "u1" for t in ts)),
    ]

    # and 25 combinations drawn at random (seeded), each filter with a value or absent
    pool: dict[str, list[Any]] = {
        "start": [T0 + 200_000_000, T0 + 700_000_000], "end": [T0 + 50_000_000, T0 + 600_000_000],
        "user_id": ["u0", "u5"], "agent": ["a1", "A3"], "has_error": [True, False],
        "min_turns": [2, 3]}

    def keeps(values: dict[str, Any]) -> Any:
        def keep(ts: list[dict[str, Any]]) -> bool:
            ok = True
            if "start" in values:
                ok &= max(t["start_ns"] for t in ts) >= values["start"]
            if "end" in values:
                ok &= min(t["start_ns"] for t in ts) < values["end"]
            if "user_id" in values:
                ok &= any(t["user_id"] == values["user_id"] for t in ts)
            if "agent" in values:
                ok &= any(t["agent_names"][0].lower() == values["agent"].lower() for t in ts)
            if "has_error" in values:
                ok &= any(t["has_error"] for t in ts) == values["has_error"]
            if "min_turns" in values:
                ok &= len(ts) >= values["min_turns"]
            return ok
        return keep

    fixed = len(cases)  # the plans of these are checked too
    for _ in range(25):
        drawn = {name: rng.choice(options) for name, options in pool.items()
                 if rng.random() < 0.5}
        cases.append((drawn, keeps(drawn)))

    async def check(url: str) -> None:
        conn = await asyncpg.connect(url)
        try:
            await migrate(conn)
            rows = [derivation_store.TrajectoryWrite(
                project="p", trace_id=r["trace_id"], settle_at=dt.now(UTC), root_ended=True,
                document=None, explanation=None, warnings=[], values=write_values(
                    TrajectorySummary, None, {
                        "normalizer_version": "test", "start_ns": r["start_ns"],
                        "session_id": r["session_id"], "user_id": r["user_id"],
                        "agent_names": r["agent_names"], "has_error": r["has_error"]}))
                for r in runs]
            for i in range(0, len(rows), 100):
                async with conn.transaction():
                    await derivation_store.store(conn, [], rows[i:i + 100])
            # two thirds of the runs final, so that pages mix sessions read from their rows
            # (migration 0092) alone, with their open turns, and from open turns alone
            assert [await derivation_store.finalize_settled(conn, 0) for _ in range(2)] \
                == [1000, 1000]
            kinds = await conn.fetchrow(
                "SELECT count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM trajectories t WHERE "
                "t.session_id = s.session_id AND t.status = 'open')) AS whole, count(*) "
                "FILTER (WHERE EXISTS (SELECT 1 FROM trajectories t WHERE t.session_id = "
                "s.session_id AND t.status = 'open')) AS with_open FROM sessions s")
            assert kinds["whole"] > 100 and kinds["with_open"] > 100, dict(kinds)
            await conn.execute("ANALYZE trajectories")
            filled = {r["relname"] for r in await conn.fetch(
                "SELECT c.relname FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid "
                "WHERE h.inhparent = 'trajectories'::regclass AND c.reltuples > 0")}
            assert filled
            # every way of finding a page: with a filter read from turns, a named set read
            # session by session (every set here is under 1,000 sessions) and the walk that
            # looks each session up in it; paging the rows, a user's sessions read first,
            # hashed, and probed per row
            for (small_set, hashed_users), index, (values, keep) in [
                    (n, i, case) for n in ((session_reads.SMALL_SET, session_reads.HASHED_USERS),
                                           (10, session_reads.HASHED_USERS), (10, 20))
                    for i, case in enumerate(cases)]:
                session_reads.SMALL_SET, session_reads.HASHED_USERS = small_set, hashed_users
                seen: list[str] = []
                cursor = None
                while True:
                    page = await session_reads.list_sessions(conn, "p", session_reads.SessionFilter(
                        values=values, cursor=cursor, limit=97))
                    seen += [r.session_id for r in page]
                    if len(page) < 97:
                        break
                    cursor = (page[-1].last_turn_ns, page[-1].session_id)
                assert seen == expected(keep), (small_set, hashed_users, values)
                if small_set == 10 or index >= fixed:
                    # forced: with a few thousand rows the planner rightly reads them whole
                    continue
                cap = CapturedQuery(conn)
                await session_reads.list_sessions(cap, "p", session_reads.SessionFilter(  # type: ignore[arg-type]
                    values=values))
                # each statement's plan with sequential scans priced out: a few thousand rows
                # are rightly read whole, and what is checked is that no statement needs to
                async with conn.transaction():
                    await conn.execute("SET LOCAL enable_seqscan = off")
                    plan = "\n".join([r[0] for sql, args in cap.statements
                                      for r in await conn.fetch("EXPLAIN " + sql, *args)])
                # the rows by their latest turn when every filter reads them; the walk when
                # one reads turns and names no small set of sessions to start from
                if set(values) <= {"start", "user_id", "has_error", "min_turns"}:
                    assert "sessions_latest" in plan, (values, plan)
                    assert "trajectories_session_latest" not in plan, (values, plan)
                assert not any(f"Seq Scan on {name} " in plan for name in filled), \
                    (values, plan)
        finally:
            session_reads.SMALL_SET, session_reads.HASHED_USERS = small
            await conn.close()

    small = session_reads.SMALL_SET, session_reads.HASHED_USERS
    with separate_database(database) as url:
        run(check(url))
