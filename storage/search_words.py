"""The free-text words index, kept while the derivation has no backlog (migrations 0066 and
0068): the words of the trajectories queued since, and the merge of the index's pending list."""

from __future__ import annotations

from trajhub.storage.database import Connection

# The queued trajectories, locked, in their own statement: the statement that fills their words
# then reads their text with a snapshot taken after the locks were held. A deriver storing one
# of them again queues it again in the transaction that stores its text, by updating its row of
# the queue (storage/derivation_store.py): either it committed before the lock, and its text is
# what is read; or its update waits for this transaction, finds the row gone and queues it anew,
# so its text is filled later. Rows another transaction holds are left to the next round.
_TAKE = """
SELECT project, trace_id, first_seen FROM trajectory_words_queue
LIMIT $1
FOR UPDATE SKIP LOCKED
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
    many it took off the queue (fewer than `limit`: none are left)."""
    async with conn.transaction():
        rows = await conn.fetch(_TAKE, limit)
        if rows:
            await conn.execute(_FILL, *([r[c] for r in rows]
                                        for c in ("project", "trace_id", "first_seen")))
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
