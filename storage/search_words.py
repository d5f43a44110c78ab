"""The free-text words index, kept while the derivation has no backlog (migrations 0066 and
0068): the words of the trajectories queued since, the merge of the index's pending list, and
the statistics of the runs and their words as wholes."""

from __future__ import annotations

from trajhub.storage import trace_locks
from trajhub.storage.database import Connection

# The queued trajectories, then the trace lock of each (storage/trace_locks.py:
# what every deriver holds while it stores a trace), each in their own statement: the statement
# that fills their words then reads their text with a snapshot taken after the locks were held.
# A deriver that stored one of them committed before the lock, and its text is what is read; one
# that comes later finds the lock held and leaves the trace to the queue of changes, to be stored
# (and queued here) again. Traces another transaction holds are left to the next round. (Row
# locks on the queue did this before; Citus takes none across shards, storage/citus_tables.py.)
_TAKE = """
SELECT project, trace_id, first_seen FROM trajectory_words_queue
LIMIT $1
"""
_LOCK = f"""
SELECT k.i FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS k(project, trace_id, i)
WHERE {trace_locks.TRY_LOCK.format(project="k.project", trace_id="k.trace_id")}
"""

# strip(): the words without their positions, which a search never reads (its query is words'
# starts joined by AND, migration 0014), so that the row holds about half the bytes. A queued
# trajectory that is gone (retention took it) just leaves the queue.
_FILL = """
WITH k AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[])
        AS k(project, trace_id, first_seen)
), filled AS (
    INSERT INTO trajectory_words (project, trace_id, first_seen, words)
    SELECT t.project, t.trace_id, t.first_seen,
           strip(trajhub_search_words(t.root_input, t.root_output))
    FROM k JOIN trajectories t
      ON t.project = k.project AND t.trace_id = k.trace_id AND t.first_seen = k.first_seen
    ON CONFLICT (project, trace_id, first_seen) DO UPDATE SET words = EXCLUDED.words
)
DELETE FROM trajectory_words_queue q USING k
WHERE q.project = k.project AND q.trace_id = k.trace_id
"""


async def fill(conn: Connection, limit: int) -> int:
    """Fill the words of up to `limit` queued trajectories, in one transaction; returns how
    many it took off the queue (fewer than `limit`: none are left but those being stored right
    now, which the next round takes)."""
    async with conn.transaction():
        rows = await conn.fetch(_TAKE, limit)
        if rows:
            locked = [rows[r["i"] - 1] for r in await conn.fetch(
                _LOCK, [r["project"] for r in rows], [r["trace_id"] for r in rows])]
            if locked:
                await conn.execute(_FILL, *([r[c] for r in locked]
                                            for c in ("project", "trace_id", "first_seen")))
            rows = locked
    return len(rows)


async def words_written(conn: Connection) -> int:
    """Rows written to `trajectory_words` (inserts, and updates that are not HOT), by the
    statistics counters: the words index's pending list grows with them. The counters start
    from zero again after a crash or a statistics reset."""
    return int(await conn.fetchval(
        "SELECT coalesce(sum(s.n_tup_ins + s.n_tup_upd - s.n_tup_hot_upd), 0) "
        "FROM pg_stat_user_tables s JOIN pg_inherits h ON h.inhrelid = s.relid "
        "WHERE h.inhparent = 'trajectory_words'::regclass"))


async def merge_pending(conn: Connection) -> int:
    """Merge the pending list of every partition of the words index into the index; returns
    how many pending-list pages that emptied (0 when there was nothing to merge)."""
    return int(await conn.fetchval(
        "SELECT coalesce(sum(gin_clean_pending_list(h.inhrelid)), 0) FROM pg_inherits h "
        "WHERE h.inhparent = 'trajectory_words_search'::regclass"))


# A free-text search joins the runs and their words (storage/trajectory_reads.py), and
# PostgreSQL estimates that join from the statistics of the partitioned tables as wholes, which
# autovacuum never gathers (it analyzes each partition): without them it took trace_id for a
# column of 200 values and any text for a common one, and walked every run of a project to find
# a rare word (bench/README.md, "Free text"). So they are gathered when missing or once the
# tables have doubled since, for the columns the join and the words' check read: an ANALYZE of a
# partitioned table samples every partition, and also re-analyzes those columns in each, which
# is not free on a large store.
#: the tables analyzed as wholes, and their columns that the join and the words' check read
_WHOLES = {"trajectories": ("project", "trace_id", "first_seen"),
           "trajectory_words": ("project", "trace_id", "first_seen", "words")}
_OUTGROWN = f"""
SELECT bool_or(p.reltuples < 0 OR c.rows > 2 * greatest(p.reltuples, 500))
FROM pg_class p
CROSS JOIN LATERAL (
    SELECT coalesce(sum(greatest(k.reltuples, 0)), 0) AS rows
    FROM pg_inherits h JOIN pg_class k ON k.oid = h.inhrelid WHERE h.inhparent = p.oid) c
WHERE p.oid = ANY(ARRAY[{", ".join(f"'{t}'::regclass" for t in _WHOLES)}])
"""
_ANALYZE = "ANALYZE " + ", ".join(f"{t} ({', '.join(c)})" for t, c in _WHOLES.items())


async def analyze_outgrown(conn: Connection) -> bool:
    """Gather the statistics of `trajectories` and `trajectory_words` as wholes if they are
    missing or the tables have more than doubled since (partitions' own estimates of their
    rows, which autovacuum keeps); returns whether it did."""
    if not await conn.fetchval(_OUTGROWN):
        return False
    await conn.execute(_ANALYZE)
    return True
