"""Span bodies compressed with a trained zstd dictionary (storage/compression.py, migration
0062): a server of its own, fed by the OTel SDK's OTLP/HTTP exporter, trains one from the first
spans, stores the later spans with it, reads them back exactly from processes that never saw it
(after a restart), and retention deletes a dictionary once no partition can hold its spans."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import asyncpg
import httpx
import pytest
import zstandard
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.trace.v1.trace_pb2 import Span as OtlpSpan
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from tests.harness import (
    ServerProcess,
    TestDatabase,
    final_trajectory,
    get_json,
    on_separate_database,
    separate_database,
    wait_for,
)
from tests.test_compression import _prose_bodies
from trajhub.service import retention as retention_sweep
from trajhub.service.dictionaries import DictionaryKeeper
from trajhub.storage import compression, compression_dictionaries
from trajhub.storage.migrate import migrate

PROMPT = ("You are a travel agent. Answer with the cheapest itinerary, name every leg, and "
          "convert prices to the traveller's currency before you answer. ") * 4


def _send(server: ServerProcess, project: str, runs: list[dict[str, str]]) -> list[str]:
    """Each run as an OpenInference-shaped trace: an agent root and six model calls, through
    the SDK's batch processor and OTLP/HTTP exporter. Returns the trace ids."""
    provider = TracerProvider(resource=Resource.create({"service.name": "dictionary-test"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(
        endpoint=f"{server.http}/v1/traces", headers={"trajhub-project": project}),
        max_export_batch_size=512))
    tracer = provider.get_tracer("test")
    ids = []
    for run in runs:
        with tracer.start_as_current_span("agent") as root:
            root.set_attribute("openinference.span.kind", "AGENT")
            root.set_attribute("input.value", run["question"])
            for step in range(6):
                with tracer.start_as_current_span("llm") as call:
                    call.set_attribute("openinference.span.kind", "LLM")
                    call.set_attribute("llm.model_name", "gpt-4o-2024-08-06")
                    call.set_attribute("llm.input_messages.0.message.role", "system")
                    call.set_attribute("llm.input_messages.0.message.content", PROMPT)
                    call.set_attribute("llm.input_messages.1.message.role", "user")
                    call.set_attribute("llm.input_messages.1.message.content", run["question"])
                    call.set_attribute("llm.output_messages.0.message.role", "assistant")
                    call.set_attribute("llm.output_messages.0.message.content",
                                       f"{run['answer']} (step {step})")
            root.set_attribute("output.value", run["answer"])
            ids.append(format(root.get_span_context().trace_id, "032x"))
    assert provider.force_flush(60_000)
    provider.shutdown()
    return ids


def _runs(count: int, seed: int) -> list[dict[str, str]]:
    rng = random.Random(seed)
    cities = ["Lisbon", "Porto", "Madrid", "Seville", "Lyon", "Turin", "Bologna", "Ghent"]
    return [{"question": f"Cheapest trip from {rng.choice(cities)} to {rng.choice(cities)} "
                         f"on day {rng.randint(1, 28)} for {rng.randint(1, 6)} people?",
             "answer": f"Take train {rng.randint(100, 999)} then bus {rng.randint(10, 99)}: "
                       f"{rng.randint(40, 900)} EUR in all."} for _ in range(count)]


def _fetch(url: str, sql: str, *args: Any) -> list[asyncpg.Record]:
    async def run() -> list[asyncpg.Record]:
        conn = await asyncpg.connect(url)
        try:
            return list(await conn.fetch(sql, *args))
        finally:
            await conn.close()
    return asyncio.run(run())


@pytest.fixture(scope="module")
def store(database: TestDatabase, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[dict[str, Any]]:
    """A server with one ingest worker, derivation left to the derivation worker (so it reads
    the bodies back), fed enough spans to train a dictionary, then three probe runs; then
    restarted, so no process of it has loaded the dictionary, and fed three later runs."""
    workdir = tmp_path_factory.mktemp("dictionaries")
    env = {"TRAJHUB_INGEST_WORKERS": "1", "TRAJHUB_DERIVE_AT_INGEST": "false"}
    with separate_database(database) as url:
        server = ServerProcess.start(url, workdir, settle_seconds=0.2, extra_env=env)
        project = "dict-" + uuid.uuid4().hex[:8]
        try:
            samples = compression_dictionaries.SAMPLES
            _send(server, project, _runs(samples // 7 + 1, 1))
            stored = wait_for(lambda: _fetch(url, "SELECT id FROM compression_dictionaries"),
                              timeout=30, what="a trained dictionary")
            probe = _runs(3, 2)
            probe_ids = _send(server, project, probe)
        finally:
            server.stop()
        server = ServerProcess.start(url, workdir, settle_seconds=0.2, extra_env=env)
        try:
            later = _runs(3, 3)
            later_ids = _send(server, project, later)
            yield {"url": url, "server": server, "project": project,
                   "dictionary": stored[0]["id"], "probe": dict(zip(probe_ids, probe, strict=True)),
                   "later": dict(zip(later_ids, later, strict=True))}
        finally:
            server.stop()


def test_spans_after_the_dictionary_is_trained_are_stored_with_it_and_smaller(
        store: dict[str, Any]) -> None:
    rows = _fetch(store["url"], "SELECT body FROM spans WHERE trace_id = ANY($1::text[])",
                  list(store["probe"]))
    assert len(rows) == 3 * 7
    assert {compression.dictionary_id(r["body"]) for r in rows} == {store["dictionary"]}
    dictionary = _fetch(store["url"], "SELECT data FROM compression_dictionaries")[0]["data"]
    compression.register(dictionary)
    bodies = [compression.decompress(r["body"]) for r in rows]
    without = zstandard.ZstdCompressor(level=compression.LEVEL)  # a store with no dictionary
    assert sum(len(r["body"]) for r in rows) < 0.8 * sum(len(without.compress(b))
                                                          for b in bodies)
    # each body is the span as the exporter sent it
    assert {OtlpSpan.FromString(b).name for b in bodies} == {"agent", "llm"}


def test_a_restarted_server_reads_those_spans_back_exactly(store: dict[str, Any]) -> None:
    server, project = store["server"], store["project"]
    with httpx.Client(timeout=30) as c:
        for trace_id, run in store["probe"].items():
            spans = get_json(c, f"{server.http}/api/v1/traces/{trace_id}", project=project,
                             view="flat")["spans"]
            calls = [s for s in spans if s["name"] == "llm"]
            assert len(calls) == 6
            attributes = calls[0]["attributes"]
            assert attributes["llm.input_messages.0.message.content"] == PROMPT
            assert attributes["llm.input_messages.1.message.content"] == run["question"]
            # derived by the derivation worker from the bodies it read back
            document = final_trajectory(c, server.http, project, trace_id).text
            assert run["question"] in document and run["answer"] in document


def test_documents_derived_once_the_dictionary_is_stored_are_compressed_with_it(
        store: dict[str, Any]) -> None:
    server, project = store["server"], store["project"]
    with httpx.Client(timeout=30) as c:
        for trace_id, run in store["later"].items():
            document = final_trajectory(c, server.http, project, trace_id).text
            assert run["question"] in document and run["answer"] in document
    rows = _fetch(store["url"], "SELECT document FROM trajectories "
                                "WHERE trace_id = ANY($1::text[])", list(store["later"]))
    assert {compression.dictionary_id(r["document"]) for r in rows} == {store["dictionary"]}


def test_retention_deletes_a_dictionary_once_no_partition_can_hold_its_spans(
        store: dict[str, Any]) -> None:
    url = store["url"]
    oldest = _fetch(url, "SELECT min(lower) AS at FROM trajhub_time_partitions")[0]["at"]
    rng = random.Random(3)
    made = {}
    # replaced two days before the oldest partition began (by `kept`): no span of it is left;
    # replaced after it began (by the server's own): spans of it may be
    for name, trained in (("gone", oldest - timedelta(days=3)),
                          ("kept", oldest - timedelta(days=1))):
        samples = [" ".join(rng.choices([*PROMPT.split(), name], k=80)).encode() * 3
                   for _ in range(400)]
        data = compression_dictionaries.train(samples)
        made[name] = compression.register(data).dict_id()
        _fetch(url, "INSERT INTO compression_dictionaries (id, trained_at, data) "
                    "VALUES ($1, $2, $3)", made[name], trained, data)
    # the server's own dictionary was trained after `kept` and replaced nothing before

    async def sweep() -> int:
        pool = await asyncpg.create_pool(url, min_size=1, max_size=1)
        try:
            return await retention_sweep.sweep(pool, 3650)  # keeps every trace
        finally:
            await pool.close()

    asyncio.run(sweep())
    left = {r["id"] for r in _fetch(url, "SELECT id FROM compression_dictionaries")}
    assert left == {made["kept"], store["dictionary"]}


@pytest.mark.usefixtures("fresh_dictionaries")
def test_a_stores_first_dictionary_is_replaced_once_ten_minutes_after_then_daily(
        database: TestDatabase) -> None:
    """The first dictionary may come from one burst's spans alone: an ingest worker with enough
    samples replaces it once it is ten minutes old; the one after that lasts a day."""

    async def worker_with_samples(conn: asyncpg.Connection, seed: int
                                  ) -> compression_dictionaries.StoredDictionary | None:
        """An ingest worker that has compressed a sample's worth of bodies, at its next look;
        what the store's newest dictionary then is."""
        keeper = DictionaryKeeper(train=True)
        for body in _prose_bodies(compression_dictionaries.SAMPLES, seed):
            compression.compress_body(body)
        await keeper.refresh(conn)
        return await compression_dictionaries.newest(conn)

    async def later(conn: asyncpg.Connection, minutes: int) -> None:
        """As if `minutes` had passed: every dictionary that much older."""
        await conn.execute("UPDATE compression_dictionaries SET trained_at = trained_at - "
                           "make_interval(mins => $1)", minutes)

    async def check(conn: asyncpg.Connection) -> None:
        await migrate(conn)
        first = await worker_with_samples(conn, 1)
        assert first is not None and first.only
        # nine minutes on: not yet due, the next worker's samples make none
        await later(conn, 9)
        assert (await worker_with_samples(conn, 2)).id == first.id  # type: ignore[union-attr]
        # ten minutes on: replaced
        await later(conn, 1)
        second = await worker_with_samples(conn, 3)
        assert second is not None and second.id != first.id and not second.only
        # the second is replaced after a day, not ten minutes
        await later(conn, 60 * 23)
        assert (await worker_with_samples(conn, 4)).id == second.id  # type: ignore[union-attr]
        await later(conn, 60)
        third = await worker_with_samples(conn, 5)
        assert third is not None and third.id not in (first.id, second.id)
        assert await conn.fetchval("SELECT count(*) FROM compression_dictionaries") == 3

    on_separate_database(database, check)
