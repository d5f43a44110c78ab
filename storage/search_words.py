"""The free-text words index, kept while the derivation has no backlog (migrations 0066 and
0068): the words of trajectories stored since, and the merge of the index's pending list."""

from __future__ import annotations

from trajhub.storage.database import Connection

# The rows whose words are to be filled, locked, in their own statement: the statement that
# fills them then reads the trajectories' text with a snapshot taken after the locks were
# held. A deriver storing one of these trajectories again sets its words back to NULL in the
# transaction that stores its text (storage/derivation_store.py): either it committed before
# the lock, and its text is what is read; or its reset waits for this transaction, and comes
# after the words filled here. Rows another transaction holds are left to the next round.
_TAKE = """
SELECT project, trace_id, first_seen FROM trajectory_words
WHERE words IS NULL
LIMIT $1
FOR UPDATE SKIP LOCKED
"""

# strip(): the words without their positions, which a search never reads (its query is words'
# starts joined by AND, migration 0014), so that the row holds about half the bytes.
_FILL = """
UPDATE trajectory_words w
SET words = strip(trajhub_search_words(t.root_input, t.root_output))
FROM unnest($1::text[], $2::text[], $3::timestamptz[]) AS k(project, trace_id, first_seen)
JOIN trajectories t
  ON t.project = k.project AND t.trace_id = k.trace_id AND t.first_seen = k.first_seen
WHERE w.project = k.project AND w.trace_id = k.trace_id AND w.first_seen = k.first_seen
"""

# A row whose trajectory is gone (a test or an operator deleted it by hand; retention deletes
# both) would otherwise be taken in every round.
_ORPHANS = """
DELETE FROM trajectory_words w
USING unnest($1::text[], $2::text[], $3::timestamptz[]) AS k(project, trace_id, first_seen)
WHERE w.project = k.project AND w.trace_id = k.trace_id AND w.first_seen = k.first_seen
  AND w.words IS NULL
  AND NOT EXISTS (SELECT 1 FROM trajectories t WHERE t.project = k.project
                  AND t.trace_id = k.trace_id AND t.first_seen = k.first_seen)
"""


async def fill(conn: Connection, limit: int) -> int:
    """Fill the words of up to `limit` stored trajectories that have none yet, in one
    transaction; returns how many rows it took (fewer than `limit`: none are left)."""
    async with conn.transaction():
        rows = await conn.fetch(_TAKE, limit)
        if rows:
            keys = [[r[c] for r in rows] for c in ("project", "trace_id", "first_seen")]
            filled = await conn.execute(_FILL, *keys)
            if int(filled.split()[-1]) < len(rows):
                await conn.execute(_ORPHANS, *keys)
    return len(rows)


async def words_written(conn: Connection) -> int:
    """Row versions written to `trajectory_words` that took new index entries (inserts, and
    updates that are not HOT), by the statistics counters: the words index's pending list grows
    with them. The counters start from zero again after a crash or a statistics reset."""
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
