"""What the indexed list filters match (migration 0014): free text (`q`) over trajectories, and
the trace list's attribute and span-name filters, which first narrow the traces by a per-trace
hash set and then check the spans exactly."""

from __future__ import annotations

import asyncpg
import httpx
import pytest

from tests.harness import ServerProcess, TestDatabase, get_json, run, wait_for
from tests.otlp_builders import new_span_id, new_trace_id, request, span

PB = {"content-type": "application/x-protobuf"}
T0 = 1_700_000_000_000_000_000


def send(c: httpx.Client, server: ServerProcess, project: str, spans: list) -> None:
    r = c.post(f"{server.http}/v1/traces", content=request(spans).SerializeToString(),
               headers={**PB, "trajhub-project": project})
    assert r.status_code == 200, r.text


RUNS = {
    "weather": ("What is the Weather forecast for Paris?", "Sunny, 50% chance of rain_fall"),
    "reversed": ("forecast of the weather, please", "it will rain"),
    "cjk": ("今天 天气预报 怎么样", "晴天"),
    "punct": ("why?! because", "ok"),
    "number": ("500 offers", "none"),
}


@pytest.fixture
def runs(server: ServerProcess, project: str) -> dict[str, str]:
    """One single-span agent run per entry of RUNS (root input, root output), all final."""
    ids = {}
    with httpx.Client() as c:
        for i, (name, (question, answer)) in enumerate(RUNS.items()):
            tid = new_trace_id()
            send(c, server, project, [span(tid, "agent", start=T0 + i, attributes={
                "openinference.span.kind": "AGENT", "input.value": question,
                "output.value": answer})])
            ids[name] = tid.hex()
        wait_for(lambda: len(get_json(c, f"{server.http}/api/v1/trajectories", project=project,
                                      status="final")["items"]) == len(RUNS),
                 what="every run final")
    return ids


def test_free_text_matches_word_starts_ignoring_case(server: ServerProcess, project: str,
                                                     runs: dict[str, str]) -> None:
    def found(q: str) -> set[str]:
        with httpx.Client() as c:
            items = get_json(c, f"{server.http}/api/v1/trajectories", project=project,
                             q=q)["items"]
        names = {v: k for k, v in runs.items()}
        return {names[i["trace_id"]] for i in items}

    assert found("weather") == {"weather", "reversed"}
    assert found("WEATH") == {"weather", "reversed"}      # a word's start, any case
    assert found("eather") == set()                       # not the middle of a word
    # the text must occur as written: both runs have both words, one has them in this order
    assert found("weather forecast") == {"weather"}
    assert found("rain_fall") == {"weather"}              # `_` is literal, not a wildcard
    assert found("rain") == {"weather", "reversed"}       # the output is searched too
    assert found("50%") == {"weather"}                    # `%` is literal: "500" is no match
    assert found("天气") == {"cjk"}                        # letters beyond ASCII
    assert found("?!") == {"punct"}                       # no word in it: still found
    assert found("xylophone") == set()


def test_attribute_filters_match_span_values(server: ServerProcess, project: str,
                                             database: TestDatabase) -> None:
    """Strings, numbers by value (120 = 120.0), booleans apart from 1 and 0, span names, and
    several filters together; a trace without its hash set (stored before the index existed)
    is still found."""
    with httpx.Client() as c:
        a, b, cc = new_trace_id(), new_trace_id(), new_trace_id()
        root = new_span_id()
        send(c, server, project, [
            span(a, "root", span_id=root, start=T0, attributes={"user.id": "u7",
                                                                 "flag": True}),
            span(a, "search", parent=root, start=T0 + 1, attributes={"tokens": 120.0,
                                                                     "flag": 1})])
        send(c, server, project, [span(b, "root", start=T0 + 2, attributes={
            "user.id": "u8", "tokens": 121, "flag": False})])
        send(c, server, project, [span(cc, "other", start=T0 + 3, attributes={
            "user.id": "u7", "flag": 0})])
        ids = {a.hex(): "a", b.hex(): "b", cc.hex(): "c"}

        def listed(**params: object) -> set[str]:
            items = get_json(c, f"{server.http}/api/v1/traces", project=project,
                             **params)["items"]
            return {ids[i["trace_id"]] for i in items}

        wait_for(lambda: listed() == {"a", "b", "c"}, what="3 traces listed")

        def check() -> None:
            assert listed(attribute="user.id=u7") == {"a", "c"}
            assert listed(attribute="tokens=120") == {"a"}          # stored as 120.0
            assert listed(attribute="tokens=120.0") == {"a"}
            assert listed(attribute="tokens=1.2e2") == {"a"}
            assert listed(attribute="flag=true") == {"a"}           # not c's or a's 1
            assert listed(attribute="flag=1") == {"a"}
            assert listed(attribute="flag=false") == {"b"}
            assert listed(attribute="flag=0") == {"c"}
            assert listed(attribute=["user.id=u7", "tokens=120"]) == {"a"}
            assert listed(attribute=["user.id=u8", "tokens=120"]) == set()
            assert listed(attribute="user.id=nobody") == set()
            assert listed(span_name="search") == {"a"}
            assert listed(span_name="other") == {"c"}
            assert listed(span_name="nothing") == set()

        check()

        async def forget_hashes() -> None:
            conn = await asyncpg.connect(database.url)
            try:
                await conn.execute("UPDATE traces SET attribute_keys = NULL WHERE project = $1",
                                   project)
            finally:
                await conn.close()

        run(forget_hashes())
        check()
