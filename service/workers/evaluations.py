"""Running an evaluation: each item's trajectory through each requested evaluator.

Runs from a durable queue in PostgreSQL (migration 0056, `run_queue`: a task of `trajhub
serve`, as the online evaluation rules' worker is), so a restart resumes it; an LLM judge takes
seconds per item, and progress and results are written as they come, so a client can poll.
Nothing about one item can fail the run: a missing trajectory, a bad expectation or a judge
that answers nonsense becomes that item's error entry.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg
import orjson

from trajhub.evaluators import (
    JUDGES,
    REGISTRY,
    ConfigError,
    EvaluatorOutput,
    Expectations,
    JudgeContext,
    evaluate,
)
from trajhub.records.scores import COMMENT_MAX
from trajhub.service.config import Settings
from trajhub.service.workers.judge_client import JudgeClient, JudgeConnection, resolve
from trajhub.storage import evaluations
from trajhub.storage import scores as score_store
from trajhub.storage.database import Connection

log = logging.getLogger("trajhub.evaluations")

_PAGE = 100
#: items evaluated at once; only the judges' HTTP calls make this matter
_CONCURRENCY = 8



@dataclass(frozen=True)
class EvaluatorRun:
    """A requested evaluator: its name, its options as given, and its parsed config."""

    name: str
    options: Mapping[str, Any]
    config: Any
    #: where a judge's requests go (judges only); holds the key, so it is never stored
    judge: JudgeConnection | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "config": dict(self.options)}


def parse_evaluators(raw: Sequence[Any], settings: Settings) -> list[EvaluatorRun]:
    """Check every evaluator and its options before anything runs; ConfigError names the
    problem. Entries are a name, or {"name": ..., "config": {...}}."""
    if not raw:
        raise ConfigError("evaluators: give at least one")
    runs: list[EvaluatorRun] = []
    for entry in raw:
        options: Mapping[str, Any]
        if isinstance(entry, str):
            name, options = entry, {}
        elif isinstance(entry, Mapping) and isinstance(entry.get("name"), str):
            unknown = sorted(set(entry) - {"name", "config"})
            if unknown:
                raise ConfigError(f"evaluators: unknown field {unknown[0]!r}")
            name, options = entry["name"], entry.get("config") or {}
            if not isinstance(options, Mapping):
                raise ConfigError(f"{name}: config must be an object")
        else:
            raise ConfigError("evaluators: each must be a name or {\"name\", \"config\"}")
        if any(run.name == name for run in runs):
            raise ConfigError(f"evaluators: {name!r} is given twice")
        if name in JUDGES:
            config = JUDGES[name].config_from_dict(options)
            runs.append(EvaluatorRun(name, options, config,
                                     resolve(config.settings, settings, name)))
        elif name in REGISTRY:
            runs.append(EvaluatorRun(name, options, REGISTRY[name].config_from_dict(options)))
        else:
            known = ", ".join(sorted([*REGISTRY, *JUDGES]))
            raise ConfigError(f"unknown evaluator {name!r} (known: {known})")
    return runs


@dataclass(frozen=True)
class Target:
    kind: str  # snapshot | live
    run_name: str | None


#: evaluations one server runs at once (more wait in the queue)
JOBS = 4
#: how long a claim holds an evaluation, and how often the running server extends it
LEASE_SECONDS = 60.0
HEARTBEAT_SECONDS = 15.0
#: how long the queue loop waits when nothing was due
IDLE_SECONDS = 0.5
#: times an evaluation is put back by servers that cannot run its evaluators before it fails,
#: and how long such a server leaves it to the others each time
UNRUNNABLE_ATTEMPTS = 10
UNRUNNABLE_SKIP_SECONDS = 10.0


async def run_queue(pool: asyncpg.Pool, settings: Settings) -> None:
    """Run queued evaluations (storage/evaluations.py, migration 0056) until cancelled, up to
    JOBS at once. A server that stops puts its evaluations back in the queue; one that is
    killed leaves them claimed until the next server starts (or the lease runs out), which
    goes on with the items that have no result yet."""
    running: set[asyncio.Task[None]] = set()
    #: evaluation id → until when this server leaves it to others (it cannot run it)
    unrunnable: dict[int, float] = {}
    try:
        while True:
            job = None
            if len(running) < JOBS:
                now = time.monotonic()
                for evaluation, until in list(unrunnable.items()):
                    if until <= now:
                        del unrunnable[evaluation]
                try:
                    async with pool.acquire() as conn:
                        job = await evaluations.claim_job(conn, LEASE_SECONDS,
                                                          list(unrunnable))
                except Exception as exc:  # the database: try again shortly
                    log.warning("claiming an evaluation failed: %r", exc)
            if job is not None:
                task = asyncio.create_task(_run_job(pool, settings, job, unrunnable),
                                           name=f"evaluation-{job.evaluation}")
                running.add(task)
                task.add_done_callback(running.discard)
                continue
            await asyncio.sleep(IDLE_SECONDS)
    finally:
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)


async def _run_job(pool: asyncpg.Pool, settings: Settings, job: evaluations.Job,
                   unrunnable: dict[int, float] | None = None) -> None:
    try:
        runs = parse_evaluators(orjson.loads(job.evaluators), settings)
    except (ConfigError, ValueError) as exc:
        # checked when the evaluation was created, so this server's settings lack what the
        # creating server had (a judge's URL, model or key variable): another server sharing
        # the database may run it; after UNRUNNABLE_ATTEMPTS the evaluation fails, saying why
        async with pool.acquire() as conn:
            if job.attempts + 1 >= UNRUNNABLE_ATTEMPTS:
                await evaluations.finish_job(conn, job, f"no server could run its evaluators:"
                                                        f" {exc}")
            else:
                # due now for the others; this server leaves it alone for a while
                await evaluations.postpone_job(conn, job, 0)
                if unrunnable is not None:
                    unrunnable[job.evaluation] = time.monotonic() + UNRUNNABLE_SKIP_SECONDS
                log.info("evaluation %s put back: this server cannot run it (%s)",
                         job.evaluation, exc)
        return
    log.info("running evaluation %s", job.evaluation)
    if job.dataset is None:
        async with pool.acquire() as conn:
            await evaluations.finish_job(conn, job, "the dataset was deleted")
        return
    work = asyncio.create_task(_run(pool, settings, job.project, job.evaluation, job.dataset,
                                    Target(job.target, job.run_name), runs))
    try:
        while not work.done():
            await asyncio.wait([work], timeout=HEARTBEAT_SECONDS)
            if work.done():
                break
            async with pool.acquire() as conn:
                if not await evaluations.extend_job(conn, job, LEASE_SECONDS):
                    work.cancel()  # another server has it now
        error = await work
    except asyncio.CancelledError:
        work.cancel()
        await asyncio.gather(work, return_exceptions=True)
        try:
            async with pool.acquire() as conn:
                await evaluations.release_job(conn, job)
        except Exception:  # the pool may be closing at shutdown; the lease runs out instead
            log.warning("could not put evaluation %s back in the queue", job.evaluation)
        raise
    async with pool.acquire() as conn:
        await evaluations.finish_job(conn, job, error)
    log.info("evaluation %s finished%s", job.evaluation, f": {error}" if error else "")


async def _run(pool: asyncpg.Pool, settings: Settings, project: str, evaluation: int,
               dataset: int, target: Target, runs: Sequence[EvaluatorRun]) -> str | None:
    """Evaluate the items with no result yet; the error that failed the run, if any."""
    judge = JudgeClient() if any(r.judge is not None for r in runs) else None
    error: str | None = None
    try:
        after = 0
        limit = asyncio.Semaphore(_CONCURRENCY)
        while True:
            async with pool.acquire() as conn:
                items = await evaluations.items_for_run(conn, dataset, after, _PAGE, evaluation)
                docs = await _documents(conn, project, target, items)
            if not items:
                break
            after = items[-1]["seq"]

            await asyncio.gather(*(
                _evaluate_and_record(pool, project, evaluation, item, docs[item["id"]], runs,
                                     judge, limit) for item in items))
    except Exception as exc:  # a bug or the database: the run failed, say so on the run
        log.exception("evaluation %s failed", evaluation)
        error = f"{type(exc).__name__}: {exc}"
    finally:
        if judge is not None:
            await judge.aclose()
    return error


async def _evaluate_and_record(pool: asyncpg.Pool, project: str, evaluation: int,
                               item: Mapping[str, Any], doc: _Doc, runs: Sequence[EvaluatorRun],
                               judge: JudgeClient | None, limit: asyncio.Semaphore) -> None:
    async with limit:
        rows, judged = await _evaluate_item(item, doc, runs, judge)
    async with pool.acquire() as conn, conn.transaction():
        # the item's results and scores together, once (a resumed evaluation skips an item
        # stored before the restart)
        stored = await evaluations.record_results(conn, evaluation, rows)
        if stored and judged and doc.trace_id is not None:
            await score_store.add(conn, project, verdict_scores(evaluation, doc.trace_id,
                                                                rows, runs))


def verdict_scores(evaluation: int, trace_id: str, rows: Sequence[evaluations.ResultRow],
                   runs: Sequence[EvaluatorRun]) -> list[dict[str, Any]]:
    """Each evaluator's verdict on a trajectory, as a score on it (trajhub.records.scores):
    named after the evaluator, its value the evaluator's score (0 to 1), its comment the
    readable reason, or its error when the evaluator failed on this trajectory. (storage
    keeps it only while the project has that trajectory.)"""
    configs = {r.name: r.to_dict()["config"] for r in runs}
    return [{
        "trace_id": trace_id, "step_id": None, "name": r.evaluator,
        "value_type": "number" if r.error is None else None,
        "number_value": r.score if r.error is None else None,
        "comment": r.explanation[:COMMENT_MAX] if r.explanation else None,
        "source": "evaluator", "evaluator": r.evaluator,
        "evaluator_config": orjson.dumps(configs.get(r.evaluator, {})).decode(),
        "evaluation_id": evaluation,
        "error": (r.error or "failed")[:COMMENT_MAX] if r.error is not None else None,
    } for r in rows if r.error is not None or r.score is not None]


@dataclass(frozen=True)
class _Doc:
    """An item's trajectory for this run, or why there is none."""

    trace_id: str | None
    document: str | None
    problem: str | None
    #: the item's snapshot when another run (live) is evaluated: the judges' reference run
    reference: str | None = None


async def _documents(conn: Connection, project: str, target: Target,
                     items: Sequence[Mapping[str, Any]]) -> dict[str, _Doc]:
    if target.kind == "snapshot":
        return {i["id"]: _Doc(i["source_trace_id"], i["trajectory"],
                              None if i["trajectory"] else "the item has no trajectory snapshot")
                for i in items}
    assert target.run_name is not None
    traces = await evaluations.live_traces(conn, project, target.run_name,
                                           [i["id"] for i in items])
    trajectories = await evaluations.trajectories_of(conn, project, list(traces.values()))
    out: dict[str, _Doc] = {}
    for item in items:
        trace_id = traces.get(item["id"])
        row = trajectories.get(trace_id) if trace_id else None
        if trace_id is None or row is None:
            out[item["id"]] = _Doc(trace_id, None, f"no trajectory for run {target.run_name!r}")
        elif row["status"] != "final":
            # judging half a run would score what has not happened yet
            out[item["id"]] = _Doc(trace_id, None,
                                   f"the trajectory of trace {trace_id} is not final yet")
        elif row["document"] is None:
            out[item["id"]] = _Doc(trace_id, None,
                                   f"the trajectory of trace {trace_id} could not be derived")
        else:
            out[item["id"]] = _Doc(trace_id, row["document"], None, item["trajectory"])
    return out


async def _evaluate_item(item: Mapping[str, Any], doc: _Doc, runs: Sequence[EvaluatorRun],
                         judge: JudgeClient | None
                         ) -> tuple[list[evaluations.ResultRow], bool]:
    """Each evaluator's result on the item, and whether they judged its trajectory (False when
    there was none to judge, or the item's expectations did not read)."""
    def row(name: str, result: EvaluatorOutput | None, error: str | None
            ) -> evaluations.ResultRow:
        data = result.to_dict() if result is not None else None
        return evaluations.ResultRow(
            item_id=item["id"], evaluator=name, seq=item["seq"], trace_id=doc.trace_id,
            score=result.score if result else None, passed=result.passed if result else None,
            error=error, reason=orjson.dumps(data["reason"]).decode() if data else None,
            explanation=data["explanation"] if data else None)

    if doc.problem is not None or doc.document is None:
        return [row(r.name, None, doc.problem) for r in runs], False
    try:
        expectations = Expectations.from_dict(orjson.loads(item["expectations"]))
    except ValueError as exc:
        return [row(r.name, None, f"bad expectations: {exc}") for r in runs], False
    trajectory = orjson.loads(doc.document)
    context = JudgeContext(input=_loads(item["input"]),
                           reference_output=_loads(item["reference_output"]),
                           reference_trajectory=_loads(doc.reference))
    rows = []
    for run in runs:
        try:
            if run.judge is not None:
                assert judge is not None
                spec = JUDGES[run.name]
                request = spec.build_request(trajectory, context, expectations, run.config,
                                             run.judge.model)
                body = await judge.complete(run.judge, request)
                result = spec.parse_response(body, trajectory, context, expectations,
                                             run.config)
            else:
                result = evaluate(run.name, trajectory, expectations, run.config)
        except Exception as exc:  # one evaluator's failure on one item is that result's error
            rows.append(row(run.name, None, str(exc) or type(exc).__name__))
        else:
            rows.append(row(run.name, result, None))
    return rows, True


def _loads(text: str | None) -> Any:
    return None if text is None else orjson.loads(text)
