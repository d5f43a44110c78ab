"""SQL of derivation, for the ingest workers and the derivation worker: claim changed traces,
load their spans, store the results, finalize settled trajectories, queue re-derivations."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

import asyncpg

from trajhub.records.traces import TraceSummary
from trajhub.records.trajectories import TrajectorySummary
from trajhub.storage import rollups, session_rows, trace_locks
from trajhub.storage.database import Connection
from trajhub.storage.sql import Params
from trajhub.storage.trace_reads import SPAN_FIELDS

#: "this trace has no queued change": one probe of the queue's (project, trace_id) index per
#: trace checked. The OFFSET keeps it a probe, because PostgreSQL never turns a subquery with an
#: OFFSET into a join. As a join, once the queue's statistics said it was empty (what autovacuum
#: records after a drain), the planner read the whole queue again for every trace it checked,
#: and with the settled rows' delete below a finalizing pass after a drain cost as much as the
#: queue was long, times the open trajectories (bench/README.md, "The derivation queue's
#: claims").
NOT_QUEUED = ("NOT EXISTS (SELECT 1 FROM trace_changes queued_change "
              "WHERE queued_change.project = {project} "
              "AND queued_change.trace_id = {trace_id} OFFSET 0)")


@dataclass(frozen=True)
class ClaimedTrace:
    project: str
    trace_id: str
    last_received_at: datetime


# The two queues here (`trace_changes`, `open_trajectories`) are claimed by taking the rows' keys
# once, as an array (an InitPlan, run once per statement), then deleting the rows by key. Written
# as `id IN (SELECT … FOR UPDATE SKIP LOCKED LIMIT n)`, the planner may put that subquery on the
# inner side of a nested loop, where it runs again for every row of the queue and each run takes
# the next rows not yet taken. It does so when the queue's statistics say it is empty, which is
# what autovacuum records after a drain has emptied it: one claim then took every queued trace,
# not its batch (bench/README.md, "The derivation queue's claims").


async def claim_changes(conn: Connection, limit: int) -> list[ClaimedTrace]:
    """Take up to `limit` change rows (inside the caller's transaction: on rollback they are
    back) and lock each trace for this transaction; traces another worker is deriving right now
    are left queued for later."""
    rows = await conn.fetch(
        f"""
        WITH claimed AS (
            DELETE FROM trace_changes WHERE id = ANY(ARRAY(
                SELECT id FROM trace_changes ORDER BY id FOR UPDATE SKIP LOCKED LIMIT $1))
            RETURNING project, trace_id, received_at
        )
        SELECT project, trace_id, max(received_at) AS last_received_at,
               {trace_locks.TRY_LOCK.format(project="project", trace_id="trace_id")} AS locked
        FROM claimed GROUP BY project, trace_id
        """,
        limit)
    await requeue(conn, [ClaimedTrace(r["project"], r["trace_id"], r["last_received_at"])
                         for r in rows if not r["locked"]])
    return [ClaimedTrace(r["project"], r["trace_id"], r["last_received_at"])
            for r in rows if r["locked"]]


async def requeue(conn: Connection, traces: Sequence[ClaimedTrace]) -> None:
    """Put claimed traces back in the queue (inside the caller's transaction), as of their
    latest change."""
    if traces:
        await conn.execute(
            "INSERT INTO trace_changes (project, trace_id, received_at) "
            "SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[])",
            [t.project for t in traces], [t.trace_id for t in traces],
            [t.last_received_at for t in traces])


async def still_arriving(conn: Connection, traces: Sequence[ClaimedTrace], quiet_s: float,
                         fresh_s: float, min_spans: int) -> set[tuple[str, str]]:
    """Of the claimed `traces`, (project, trace_id) of those whose spans are still arriving
    (the latest within `quiet_s` of this transaction's start) that are large (their trace-list
    row counts `min_spans` spans or more) and whose trajectory was derived within `fresh_s`."""
    rows = await conn.fetch(
        """SELECT c.project, c.trace_id
           FROM unnest($1::text[], $2::text[], $3::timestamptz[]) AS c(project, trace_id, latest)
           JOIN trace_keys k ON k.project = c.project AND k.trace_id = c.trace_id
           JOIN traces s ON s.project = c.project AND s.trace_id = c.trace_id
                AND s.first_seen = k.first_seen
           JOIN trajectories t ON t.project = c.project AND t.trace_id = c.trace_id
                AND t.first_seen = k.first_seen
           WHERE c.latest > now() - make_interval(secs => $4)
             AND s.span_count >= $6 AND t.derived_at > now() - make_interval(secs => $5)""",
        [t.project for t in traces], [t.trace_id for t in traces],
        [t.last_received_at for t in traces], quiet_s, fresh_s, min_spans)
    return {(r["project"], r["trace_id"]) for r in rows}


async def claim_whole(conn: Connection, span_counts: Mapping[tuple[str, str], int]
                      ) -> list[tuple[str, str]]:
    """For the ingest worker, in the transaction that just stored a request's spans: which of
    the traces it carried whole (with `span_counts` spans each) it may derive now. It locks
    each for this transaction (a trace some other transaction is deriving is left to the
    queue), then keeps those whose stored spans are exactly the request's: a trace that
    already had spans from other requests is derived from all of them by the trajectory
    worker. The count runs after the locks are held, so it sees every span committed by a
    deriver that held the lock before."""
    keys = list(span_counts)
    locked = await conn.fetch(
        f"""SELECT project, trace_id FROM unnest($1::text[], $2::text[]) AS c(project, trace_id)
            WHERE {trace_locks.TRY_LOCK.format(project="c.project", trace_id="c.trace_id")}""",
        [k[0] for k in keys], [k[1] for k in keys])
    if not locked:
        return []
    # A trace with log records stored is left to the queue too: they become its spans' events
    # (`load_logs`), which the request's own derivation did not read. One probe of the spans'
    # and of the records' primary key per trace, in one statement whose parts each name the
    # traces by `trace_id` (a correlated count beside `unnest` is what Citus refuses).
    asked = [(r["project"], r["trace_id"]) for r in locked]
    stored = await conn.fetch(
        """SELECT s.project, s.trace_id, count(*) AS spans, false AS logged FROM spans s
           WHERE s.project = ANY($1::text[]) AND s.trace_id = ANY($2::text[])
           GROUP BY s.project, s.trace_id
           UNION ALL
           SELECT DISTINCT l.project, l.trace_id, 0, true FROM log_records l
           WHERE l.project = ANY($1::text[]) AND l.trace_id = ANY($2::text[])""",
        sorted({p for p, _ in asked}), [t for _, t in asked])
    # a project's trace id may name another project's trace too: only the asked pairs count
    counted: dict[tuple[str, str], int] = {}
    for r in stored:
        key = (r["project"], r["trace_id"])
        counted[key] = -1 if r["logged"] or counted.get(key) == -1 else r["spans"]
    return [key for key in asked if counted.get(key) == span_counts[key]]


async def load_spans(conn: Connection, traces: Sequence[ClaimedTrace]
                     ) -> list[asyncpg.Record]:
    return await conn.fetch(
        f"""SELECT s.project, {SPAN_FIELDS}, s.attributes FROM spans s
            JOIN unnest($1::text[], $2::text[]) AS c(project, trace_id)
              ON s.project = c.project AND s.trace_id = c.trace_id""",
        [t.project for t in traces], [t.trace_id for t in traces])


async def load_logs(conn: Connection, traces: Sequence[ClaimedTrace]) -> list[asyncpg.Record]:
    """The stored log records of `traces` that name a span (project, trace_id, body), in time
    order: one statement for the batch, one probe of the records' primary key per trace, so
    a project that sends no logs pays an empty index read."""
    return await conn.fetch(
        """SELECT l.project, l.trace_id, l.body FROM log_records l
           JOIN unnest($1::text[], $2::text[]) AS c(project, trace_id)
             ON l.project = c.project AND l.trace_id = c.trace_id
           WHERE l.span_id <> ''
           ORDER BY l.time_ns, l.span_id, l.digest""",
        [t.project for t in traces], [t.trace_id for t in traces])


class TraceWrite(NamedTuple):
    """One row of `traces` as the worker writes it: what the trace list shows. The columns
    beyond the key are those trajhub.records.traces declares, in `values`."""

    project: str
    trace_id: str
    #: every written column of TraceSummary by name (`trajhub.records.write_values`)
    values: Mapping[str, Any]

    @property
    def start_ns(self) -> int:
        return int(self.values["start_ns"])


class TrajectoryWrite(NamedTuple):
    """One row of `trajectories` as the worker writes it (status and revision are the
    upsert's): the document and its state here, the summary columns that
    trajhub.records.trajectories declares in `values`."""

    project: str
    trace_id: str
    settle_at: datetime
    root_ended: bool
    #: the document and explanation JSON, compressed (storage/stored_documents.py, `pack`)
    document: bytes | None
    explanation: bytes | None
    warnings: Sequence[str]
    #: every written column of TrajectorySummary by name (`trajhub.records.write_values`)
    values: Mapping[str, Any]
    #: a large trajectory's playback order, head and step chunks, compressed
    #: (storage/step_chunks.py, migration 0061); empty for the others, which are paged from
    #: their document
    chunks: Sequence[bytes] = ()


_TRACE_VALUES = TraceSummary.write_columns()
_TRACE_COLUMNS: tuple[str, ...] = ("project", "trace_id", *_TRACE_VALUES)
_TRAJECTORY_VALUES = TrajectorySummary.write_columns()
#: the row's own columns: every field but the chunks (their own table) and the summary values
_OWN = tuple(f for f in TrajectoryWrite._fields if f not in ("chunks", "values"))
TRAJECTORY_COLUMNS: tuple[str, ...] = (*_OWN, *_TRAJECTORY_VALUES)


def _trace_args(row: TraceWrite) -> dict[str, Any]:
    return {"project": row.project, "trace_id": row.trace_id,
            **{c: row.values[c] for c in _TRACE_VALUES}}


def _trajectory_args(row: TrajectoryWrite) -> dict[str, Any]:
    return {**{f: getattr(row, f) for f in _OWN},
            **{c: row.values[c] for c in _TRAJECTORY_VALUES}}


# The time partitions (migration 0021): a trace's rows live in the partition of its first span,
# recorded in `trace_keys` by ingest (storage/span_writer.py); the unique key includes it.
_KEY = "project, trace_id, first_seen"


# One statement per table stores a whole batch. The rows travel as one array of the table's own
# row type, unnested: PostgreSQL then sets up the insert into the partitioned table (the
# partition, its dozen indexes, the trigger) once per batch, where `executemany` set it up once
# per row. That cut the store's PostgreSQL CPU markedly (bench/README.md, "Storing
# trajectories").
def _upsert(table: str, columns: Sequence[str], extra_insert: str = "", extra_values: str = "",
            extra_update: str = "", stored_as: Mapping[str, str] | None = None) -> str:
    """`stored_as`: column → SQL applied to its value (`{}` is the value)."""
    values = ", ".join((stored_as or {}).get(c, "{}").format(f"(r).{c}") for c in columns)
    updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in columns if c not in ("project", "trace_id"))
    return (f"INSERT INTO {table} ({', '.join(columns)}{extra_insert}, first_seen) "
            f"SELECT {values}{extra_values}, "
            "coalesce(k.first_seen, trajhub_partition_time(now())) "
            f"FROM unnest($1::{table}[]) AS r LEFT JOIN trace_keys k "
            "ON k.project = (r).project AND k.trace_id = (r).trace_id "
            f"ON CONFLICT ({_KEY}) DO UPDATE SET {updates}{extra_update}")


#: each table's columns in the order of its row type, read from the catalog once per process
#: (every store applies the same migrations in the same order, so the order is the same in each)
_ROW_TYPES: dict[str, tuple[str, ...]] = {}


async def _rows(conn: Connection, table: str, rows: Sequence[Mapping[str, Any]]
                ) -> list[tuple[Any, ...]]:
    """`rows` as values of `table`'s row type (the columns they lack are NULL)."""
    if table not in _ROW_TYPES:
        _ROW_TYPES[table] = tuple(r[0] for r in await conn.fetch(
            "SELECT attname FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 "
            "AND NOT attisdropped ORDER BY attnum", table))
    order = _ROW_TYPES[table]
    return [tuple(r.get(c) for c in order) for r in rows]


async def trajectory_rows(conn: Connection, trajectories: Sequence[TrajectoryWrite]
                          ) -> list[tuple[Any, ...]]:
    """STORE_TRAJECTORIES' argument: these trajectories as rows of `trajectories`."""
    return await _rows(conn, "trajectories",
                       [_trajectory_args(_searched(t)) for t in trajectories])


_UPSERT_TRACE = _upsert("traces", _TRACE_COLUMNS)
# Free text (storage/trajectory_reads.py) looks for the query, ignoring case, in the first
# 100,000 characters of the root input and output, as far as the words index reaches (migration
# 0014); nothing else reads these columns. So they hold just that (migration 0018): the text cut
# there (in Python, where a slice is free and the rest never travels) and lower-cased, so that a
# query compares bytes instead of lower-casing every run it checks (ILIKE did, and that was most
# of a common two-word query's time). PostgreSQL's lower(), which is what ILIKE applied, not
# Python's, which differs beyond ASCII; it costs little beside the words index (bench/README.md,
# "Free text").
SEARCHED_CHARS = 100_000
_SEARCHED = {"root_input": "lower({})", "root_output": "lower({})"}


def _searched(row: TrajectoryWrite) -> TrajectoryWrite:
    root_input, root_output = row.values["root_input"], row.values["root_output"]
    if len(root_input) <= SEARCHED_CHARS and len(root_output) <= SEARCHED_CHARS:
        return row
    return row._replace(values={**row.values, "root_input": root_input[:SEARCHED_CHARS],
                                "root_output": root_output[:SEARCHED_CHARS]})


# A stored trajectory is open (migration 0016): it joins the open ones, which finalize_settled
# takes from. Its words for free text are to be filled (again) (migration 0068): it joins their
# queue, which the derivation worker fills from (storage/search_words.py), and a search
# meanwhile checks its text itself; its text is never parsed here. Queued again, its row is
# updated in place: the update locks it, so a filling that took it first commits before this
# transaction does, and the row stays queued for this text.
#
# The revision a store replaces is copied into the history first (migration 0073), from the row as
# the statement's snapshot has it: the deriver holds the trace's lock, so no other transaction
# changes that row meanwhile. Every `DO UPDATE SET` here takes its values from the row itself or
# from EXCLUDED (`derived_at`: the `now()` it was inserted with), not from a function of its own:
# Citus refuses non-IMMUTABLE functions there.
_REVISION_COLUMNS = ("project, trace_id, revision, status, derived_at, normalizer_version, "
                     "step_count, input_tokens, output_tokens, derivation_error, first_seen")
_SUPERSEDED = (
    f"superseded AS (INSERT INTO trajectory_revisions ({_REVISION_COLUMNS}) "
    f"SELECT {', '.join('o.' + c for c in _REVISION_COLUMNS.split(', '))} "
    # the keys come as arrays of their own ($2, $3): read from the rows ($1), each key would
    # take its whole row apart, documents and all
    "FROM unnest($2::text[], $3::text[]) AS r(project, trace_id) JOIN trace_keys k "
    "ON k.project = r.project AND k.trace_id = r.trace_id "
    "JOIN trajectories o ON o.project = k.project AND o.trace_id = k.trace_id "
    "AND o.first_seen = k.first_seen "
    "ON CONFLICT (project, trace_id, revision, first_seen) DO UPDATE SET "
    + ", ".join(f"{c} = EXCLUDED.{c}" for c in _REVISION_COLUMNS.split(", ")[3:-1]) + "), ")
STORE_TRAJECTORIES = (
    "WITH " + _SUPERSEDED + "stored AS ("
    + _upsert("trajectories", TRAJECTORY_COLUMNS,
              extra_insert=", status, revision, derived_at", extra_values=", 'open', 1, now()",
              extra_update=", status = 'open', revision = trajectories.revision + 1, "
                           "derived_at = EXCLUDED.derived_at, document_text = NULL, "
                           "explanation_text = NULL",
              stored_as=_SEARCHED)
    + f" RETURNING {_KEY}, settle_at, root_ended, session_id), "
    f"words_queued AS (INSERT INTO trajectory_words_queue ({_KEY}) SELECT {_KEY} FROM stored "
    "ON CONFLICT (project, trace_id) DO UPDATE SET first_seen = EXCLUDED.first_seen) "
    # with its session, which a session's read finds its open turns by (migration 0092)
    "INSERT INTO open_trajectories (project, trace_id, settle_at, root_ended, session_id) "
    "SELECT project, trace_id, settle_at, root_ended, session_id FROM stored "
    "ON CONFLICT (project, trace_id) DO UPDATE "
    "SET settle_at = EXCLUDED.settle_at, root_ended = EXCLUDED.root_ended, "
    "session_id = EXCLUDED.session_id")


# A trajectory's chunks are replaced with its document (migration 0061): the old ones go (one
# statement for the batch, a probe of an empty index for most), the new ones come in one more.
_DELETE_CHUNKS = (
    "DELETE FROM trajectory_chunks c USING unnest($1::text[], $2::text[]) AS k(project, trace_id) "
    "WHERE c.project = k.project AND c.trace_id = k.trace_id")
_INSERT_CHUNKS = (
    "INSERT INTO trajectory_chunks (project, trace_id, chunk, body) "
    "SELECT * FROM unnest($1::text[], $2::text[], $3::integer[], $4::bytea[])")


async def store(conn: Connection, traces: Sequence[TraceWrite],
                trajectories: Sequence[TrajectoryWrite]) -> None:
    """Store a batch of derived rows, at most one per trace (ON CONFLICT cannot change a row
    twice in one statement)."""
    if traces:
        await conn.execute(_UPSERT_TRACE,
                           await _rows(conn, "traces", [_trace_args(t) for t in traces]))
    if trajectories:
        await conn.execute(STORE_TRAJECTORIES, await trajectory_rows(conn, trajectories),
                           [t.project for t in trajectories], [t.trace_id for t in trajectories])
        # after the trajectories, as finalizing writes them: on Citus each statement locks the
        # shards it changes, and two transactions taking a shard of `trajectories` and one of
        # `rollup_contributions` in opposite orders deadlock (deploy/SCALING.md, section 3)
        taken = await conn.fetchval(rollups.TAKE_BACK, [t.project for t in trajectories],
                                    [t.trace_id for t in trajectories])
        if taken:  # only a take-back marks sessions stale: a new run's store skips the read
            await session_rows.refresh(conn)
        await conn.execute(_DELETE_CHUNKS, [t.project for t in trajectories],
                           [t.trace_id for t in trajectories])
        # numbered from -1 (storage/step_chunks.py: the playback order, the head, the steps)
        chunked = [(t.project, t.trace_id, n, body) for t in trajectories
                   for n, body in enumerate(t.chunks, -1)]
        if chunked:
            await conn.execute(_INSERT_CHUNKS, *(list(c) for c in zip(*chunked, strict=True)))


# Online evaluation rules (migration 0055, docs/rules.md): each trajectory that becomes final is
# queued for every enabled rule of its project whose sample takes it, in the statement that
# makes it final. Its filter is checked when the run runs (storage/rules.py), with the list's
# own conditions. A project without enabled rules joins nothing (the partial index
# rules_enabled), so finalizing costs it no more than before.
QUEUE_RULE_RUNS = (
    "INSERT INTO rule_runs (rule_id, project, trace_id, revision) "
    "SELECT r.id, f.project, f.trace_id, f.revision FROM finalized f "
    "JOIN rules r ON r.project = f.project AND r.enabled "
    "WHERE {SAMPLED}")
#: a rule's sample: a fixed share of trace ids per rule, so that every revision of a sampled
#: trajectory is sampled too
SAMPLED = ("((hashtextextended({rule}::bigint::text || '/' || {trace_id}, 0) & 4294967295)::float8 "
           "/ 4294967296.0 < {rate})")
QUEUE_RULE_RUNS = QUEUE_RULE_RUNS.replace(
    "{SAMPLED}", SAMPLED.format(rule="r.id", trace_id="f.trace_id", rate="r.sample_rate"))


# Monitoring's rollups (storage/rollups.py) and the sessions' rows (storage/session_rows.py):
# what a trajectory contributes is added in the statement that makes it final, and taken back
# in the one that stores it again (store()).
_CONTRIBUTED = ", ".join(f"t.{c}" for c in (
    "start_ns", "run_name", "agent_names", "model_names", "release", "prompt_version",
    "has_error", "duration_ms", "input_tokens", "output_tokens", "cache_read_tokens",
    "cache_write_tokens", "reasoning_tokens", "derived_usd", "session_id", "user_id",
    "derivation_error", "interrupted", "input_preview", "usage_sums"))
_ROLLED_UP = rollups.add_ctes("finalized")


#: an open trajectory ready to become final (its settle time passed, root ended, or left open
#: for `$1` seconds past it). The arithmetic is on now(), not on the column: Citus refuses a
#: STABLE function (timestamptz + interval is one) of a column in an UPDATE or DELETE.
_SETTLED = ("(o.settle_at <= now() AND o.root_ended "
            "OR o.settle_at <= now() - make_interval(secs => $1))")


# Finalizing is three statements, each over one kind of table (storage/citus_tables.py): the
# settled candidates (the open trajectories), then those of them with no queued change whose
# trace lock this transaction takes (the queue and the lock, on the coordinator where every
# deriver takes it), then the finalizing itself, which checks again that each is settled: a
# deriver that stored one after the first statement held its lock until it committed, so the
# third statement sees what it stored. The trace locks do what `FOR UPDATE SKIP LOCKED` on the
# open rows did: two finalizers never take the same trace.
async def finalize_settled(conn: Connection, max_open_seconds: float) -> int:
    """Open trajectories whose root has ended and whose settle time has passed become final;
    so does one left open (root never ended) for `max_open_seconds` past settling. A trace with
    queued changes waits: it is about to be re-derived."""
    candidates = await conn.fetch(
        f"SELECT o.project, o.trace_id FROM open_trajectories o WHERE {_SETTLED} "
        "ORDER BY o.settle_at LIMIT 1000", max_open_seconds)
    if not candidates:
        return 0
    # the trace locks are held until the runs are final: two finalizers reading the same
    # candidates then take each a part of them, not both all of them, in orders that may differ
    async with conn.transaction():
        return await _finalize(conn, max_open_seconds, candidates)


async def _finalize(conn: Connection, max_open_seconds: float, candidates: list[Any]) -> int:
    taken = await conn.fetch(
        f"""SELECT c.project, c.trace_id FROM unnest($1::text[], $2::text[]) AS c(project, trace_id)
            WHERE {NOT_QUEUED.format(project="c.project", trace_id="c.trace_id")}
              -- the derivers' lock: one that is storing this trace right now goes first
              AND {trace_locks.TRY_LOCK.format(project="c.project", trace_id="c.trace_id")}""",
        [r["project"] for r in candidates], [r["trace_id"] for r in candidates])
    if not taken:
        return 0
    result = await conn.fetchval(
        f"""
        WITH {rollups.read_scores(
            "(SELECT * FROM unnest($2::text[], $3::text[]) AS c(project, trace_id))")},
        taken AS (
            DELETE FROM open_trajectories o
            USING unnest($2::text[], $3::text[]) AS c(project, trace_id)
            WHERE o.project = c.project AND o.trace_id = c.trace_id
              AND o.trace_id = ANY($3::text[]) AND {_SETTLED}
            RETURNING o.project, o.trace_id
        ), finalized AS (
            UPDATE trajectories t SET status = 'final' FROM taken
            WHERE t.project = taken.project AND t.trace_id = taken.trace_id
            RETURNING t.project, t.trace_id, t.revision, {_CONTRIBUTED}
        ), queued AS (
            {QUEUE_RULE_RUNS}
        ){_ROLLED_UP}
        SELECT count(*) FROM finalized
        """,
        max_open_seconds, [r["project"] for r in taken], [r["trace_id"] for r in taken])
    return int(result)


async def queue_rederive(conn: Connection, project: str | None, since_ns: int | None,
                         outdated_version: str | None) -> int:
    """Queue stored traces for re-derivation from their raw spans: those of `project` (all when
    None) starting at or after `since_ns`, or only those built by another normalizer version."""
    arg, where = Params(), ["true"]
    if project is not None:
        where.append(f"t.project = {arg(project)}")
    if since_ns is not None:
        where.append(f"t.start_ns >= {arg(since_ns)}")
    if outdated_version is not None:
        where.append(f"EXISTS (SELECT 1 FROM trajectories j WHERE j.project = t.project "
                     f"AND j.trace_id = t.trace_id "
                     f"AND j.normalizer_version <> {arg(outdated_version)})")
    # read, then queued: the queue stays on the coordinator, the traces do not
    # (storage/citus_tables.py), and no statement reads both
    found = await conn.fetch(
        "SELECT t.project, t.trace_id FROM traces t WHERE " + " AND ".join(where), *arg.values)
    if found:
        await conn.execute(
            "INSERT INTO trace_changes (project, trace_id) "
            "SELECT * FROM unnest($1::text[], $2::text[])",
            [r["project"] for r in found], [r["trace_id"] for r in found])
    return len(found)

