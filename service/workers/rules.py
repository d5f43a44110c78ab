"""The online evaluation rules' worker: runs the queued rule runs (storage/rules.py) and stores
each verdict as a score (docs/rules.md).

It is an asyncio task of `trajhub serve`'s main process, next to the HTTP server, not a
derivation worker: a run is mostly waiting (for the database, or for a judge's answer, seconds
long), the parent is where /metrics counts, and the derivation workers stay free for
derivation. It never blocks ingest or derivation: ingest runs in the ingest worker processes and
derivation in its own; the runs it claims are rows of their own table, and while the ingest pool
is saturated it steps back as the derivation workers do.

Nothing about one run can stop the worker: an evaluator that raises, a judge that answers
nonsense or a filter that no longer reads becomes that run's error score. An unreachable judge
(or one answering 429 or 5xx) leaves the run queued, due again after a backoff; after
MAX_ATTEMPTS the run ends with an error score saying so.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

import asyncpg
import orjson

from trajhub.evaluators import JUDGES, ConfigError, Expectations, JudgeContext
from trajhub.evaluators import evaluate as run_evaluator
from trajhub.records.scores import COMMENT_MAX
from trajhub.service import metrics
from trajhub.service.api.filters import stored_filter
from trajhub.service.config import Settings
from trajhub.service.workers.backoff import backoff_seconds
from trajhub.service.workers.claims import release_stale_claims, run_claimed
from trajhub.service.workers.evaluations import parse_evaluators
from trajhub.service.workers.judge_client import JudgeClient, JudgeUnavailable
from trajhub.storage import rules as rule_store
from trajhub.storage.database import is_transient

log = logging.getLogger("trajhub.rules")

#: runs claimed per round
BATCH = 50
#: runs evaluated at once (only judges' HTTP calls make this matter)
CONCURRENCY = 8
#: how long a claim holds a run: longer than a judge call may take (judge_client's timeout)
LEASE_SECONDS = 180.0
#: attempts to reach a judge (backoff_seconds apart) before the run ends with an error score
MAX_ATTEMPTS = 8
#: how long the worker waits when nothing was due
IDLE_SECONDS = 0.5
#: how long a server that cannot run a rule's evaluator (no judge settings) leaves its runs to
#: the other servers sharing the database
UNRUNNABLE_SKIP_SECONDS = 10.0


def check_evaluator(name: str, config: Any, settings: Settings) -> None:
    """ConfigError naming the problem: an unknown evaluator, a bad option, a judge with no
    endpoint or model. The same check a dataset evaluation's evaluators pass."""
    parse_evaluators([{"name": name, "config": config}], settings)


class RuleWorker:
    def __init__(self, pool: asyncpg.Pool, settings: Settings,
                 saturated: Callable[[], bool] | None = None) -> None:
        self.pool = pool
        self.settings = settings
        self.saturated = saturated
        self._judge: JudgeClient | None = None
        #: rule id → until when this server leaves its runs to others (it cannot run them)
        self._unrunnable: dict[int, float] = {}
        self._limit = asyncio.Semaphore(CONCURRENCY)

    def judge(self) -> JudgeClient:
        if self._judge is None:
            self._judge = JudgeClient()
        return self._judge

    async def run(self) -> None:
        """Run queued runs until cancelled: up to BATCH runs held at once (CONCURRENCY of them
        evaluating), more claimed as soon as some end, so one slow judge does not hold back
        the runs behind it."""
        inflight: set[asyncio.Task[None]] = set()
        try:
            while True:
                if self.saturated is not None and self.saturated():
                    await asyncio.sleep(IDLE_SECONDS)
                    continue
                claimed = 0
                try:
                    claimed = await self.claim_into(inflight)
                except Exception as exc:  # a bug is logged, and the worker lives on
                    if is_transient(exc):
                        metrics.DATABASE_ERRORS.labels("rules").inc()
                        log.warning("database unavailable, retrying: %s", exc)
                    else:
                        log.exception("claiming rule runs failed")
                    await asyncio.sleep(1)
                if inflight and (claimed == 0 or len(inflight) >= BATCH):
                    await asyncio.wait(inflight, timeout=IDLE_SECONDS,
                                       return_when=asyncio.FIRST_COMPLETED)
                elif not inflight:
                    await asyncio.sleep(IDLE_SECONDS)
        finally:
            for task in inflight:
                task.cancel()
            await asyncio.gather(*inflight, return_exceptions=True)
            if self._judge is not None:
                await self._judge.aclose()

    async def claim_into(self, inflight: set[asyncio.Task[None]]) -> int:
        """Claim up to the free places of `inflight` and start each run; how many."""
        free = BATCH - len(inflight)
        if free <= 0:
            return 0
        now = time.monotonic()
        for rule, until in list(self._unrunnable.items()):
            if until <= now:
                del self._unrunnable[rule]
        async with self.pool.acquire() as conn:
            claimed = await rule_store.claim(conn, free, LEASE_SECONDS, list(self._unrunnable))
        for run in claimed:
            task = asyncio.create_task(self._guarded(run))
            inflight.add(task)
            task.add_done_callback(inflight.discard)
        return len(claimed)

    async def round(self) -> int:
        """Claim one batch of due runs and run them all (benchmarks and tests); how many."""
        return await run_claimed(
            self.pool, lambda conn: rule_store.claim(conn, BATCH, LEASE_SECONDS), self._guarded)

    async def _guarded(self, run: rule_store.ClaimedRun) -> None:
        async with self._limit:
            started = time.perf_counter()
            try:
                outcome = await self.run_one(run)
            except Exception as exc:  # a bug: logged, and the run ends with an error score
                if is_transient(exc):
                    # the run's claim lapses after its lease, and it runs again
                    metrics.DATABASE_ERRORS.labels("rules").inc()
                    log.warning("database unavailable during rule run %s: %s", run.id, exc)
                    return
                log.exception("rule run %s failed", run.id)
                outcome = await self._end(run, error=f"internal error: {type(exc).__name__}: "
                                                     f"{exc}")
            metrics.RULE_RUNS.labels(outcome).inc()
            metrics.RULE_RUN_SECONDS.observe(time.perf_counter() - started)

    async def run_one(self, run: rule_store.ClaimedRun) -> str:
        """Run one claimed run; returns its outcome (a label of trajhub_rule_runs)."""
        try:
            _, trajectory_filter = stored_filter(run.filter)
        except ValueError as exc:
            return await self._end(run, error=f"the rule's filter does not read: {exc}")
        async with self.pool.acquire() as conn:
            target = await rule_store.target(conn, run, trajectory_filter)
        if target is None:
            return await self._end(run, skip=True)  # gone (retention)
        if target.revision != run.revision or target.status != "final":
            # a newer revision: it is queued (or will be, once final) in its own run
            return await self._end(run, skip=True)
        if not target.matches:
            return await self._end(run, skip=True)
        if target.document is None:
            return await self._end(run, error="the trajectory could not be derived")
        try:
            expectations = Expectations.from_dict(run.expectations or {})
        except ValueError as exc:
            return await self._end(run, error=f"the rule's expectations do not read: {exc}")
        try:
            evaluator = parse_evaluators([{"name": run.evaluator, "config": run.config}],
                                         self.settings)[0]
        except (ConfigError, ValueError) as exc:
            # checked when the rule was saved, so this server's settings lack what that one
            # had (a judge's URL, model or key variable): the run goes back, due now for the
            # other servers, while this one leaves the rule's runs alone for a while; after
            # MAX_ATTEMPTS of that it ends with an error score
            self._unrunnable[run.rule_id] = time.monotonic() + UNRUNNABLE_SKIP_SECONDS
            return await self._retry_or_fail(run, f"the rule's evaluator does not run here: "
                                                  f"{exc}", delay=0.0)
        document = orjson.loads(target.document)
        if evaluator.judge is None:
            try:
                result = run_evaluator(run.evaluator, document, expectations, evaluator.config)
            except Exception as exc:  # the evaluator's failure is this run's error score
                return await self._end(run, error=str(exc) or type(exc).__name__)
            return await self._end(run, number=result.score, comment=result.explain())
        return await self._judge_run(run, evaluator, document, expectations)

    async def _judge_run(self, run: rule_store.ClaimedRun, evaluator: Any,
                         document: Any, expectations: Expectations) -> str:
        async with self.pool.acquire() as conn:
            wait = await rule_store.judge_slot(conn, run.rule_id)
            if wait > 0:
                await rule_store.postpone(conn, run, wait)
                return "postponed"
        spec = JUDGES[run.evaluator]
        context = JudgeContext(input=None, reference_output=None, reference_trajectory=None)
        try:
            request = spec.build_request(document, context, expectations, evaluator.config,
                                         evaluator.judge.model)
            body = await self.judge().complete(evaluator.judge, request)
        except JudgeUnavailable as exc:
            return await self._retry_or_fail(run, str(exc))
        except Exception as exc:  # any other refusal: the run's error score
            return await self._end(run, error=str(exc) or type(exc).__name__)
        try:
            result = spec.parse_response(body, document, context, expectations,
                                         evaluator.config)
        except Exception as exc:  # a malformed verdict: an error score with its reason
            return await self._end(run, error=f"malformed verdict: {exc}")
        return await self._end(run, number=result.score, comment=result.explain())

    async def _retry_or_fail(self, run: rule_store.ClaimedRun, why: str,
                             delay: float | None = None) -> str:
        """Queue the run again after `delay` (a backoff when None), or end it with an error
        score once it has had MAX_ATTEMPTS."""
        if run.attempts + 1 >= MAX_ATTEMPTS:
            return await self._end(run, error=f"no judgement in {MAX_ATTEMPTS} attempts; the "
                                              f"last: {why}")
        wait = backoff_seconds(run.attempts + 1) if delay is None else delay
        async with self.pool.acquire() as conn:
            await rule_store.retry_later(conn, run, wait, why[:COMMENT_MAX])
        return "retried"

    async def _end(self, run: rule_store.ClaimedRun, *, skip: bool = False,
                   number: float | None = None, comment: str | None = None,
                   error: str | None = None) -> str:
        score = None if skip else rule_store.score_columns(
            run, number=number, comment=comment[:COMMENT_MAX] if comment else None,
            error=error[:COMMENT_MAX] if error is not None else None)
        if score is not None and error is None and number is None:
            score = rule_store.score_columns(run, number=None, comment=None,
                                             error="the evaluator gave no score")
        async with self.pool.acquire() as conn:
            finished = await rule_store.finish(conn, run, score)
        if not finished:
            return "lost_claim"
        if skip:
            return "skipped"
        return "error" if score is not None and score["error"] is not None else "scored"


async def release_claims(pool: asyncpg.Pool) -> None:
    """At start: the runs a killed server held are due now."""
    await release_stale_claims(pool, rule_store.release_claims, log, "rule run(s)")


def start(pool: asyncpg.Pool, settings: Settings,
          saturated: Callable[[], bool] | None = None) -> asyncio.Task[None]:
    """The worker as a task of the running loop (cancel it to stop)."""
    return asyncio.create_task(RuleWorker(pool, settings, saturated).run(), name="rules")

