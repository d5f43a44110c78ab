"""The free-text words index's pending list, merged while the derivation has no backlog
(migration 0066): how many trajectories were written since a merge, and the merge itself."""

from __future__ import annotations

from trajhub.storage.database import Connection


async def trajectories_written(conn: Connection) -> int:
    """Row versions written to `trajectories` that took new index entries (inserts, and
    updates that are not HOT), by the statistics counters: the words index's pending list grows
    with them. The counters start from zero again after a crash or a statistics reset."""
    return int(await conn.fetchval(
        "SELECT coalesce(sum(s.n_tup_ins + s.n_tup_upd - s.n_tup_hot_upd), 0) "
        "FROM pg_stat_user_tables s JOIN pg_inherits h ON h.inhrelid = s.relid "
        "WHERE h.inhparent = 'trajectories'::regclass"))


async def merge_pending(conn: Connection) -> int:
    """Merge the pending list of every partition of the words index into the index; returns
    how many pending-list pages that emptied (0 when there was nothing to merge)."""
    return int(await conn.fetchval(
        "SELECT coalesce(sum(gin_clean_pending_list(h.inhrelid)), 0) FROM pg_inherits h "
        "WHERE h.inhparent = 'trajectories_words'::regclass"))
