"""The per-trace transaction lock: what keeps two changes to one trace from deciding on the
same snapshot.

Derivers (ingest, the derivation workers, the drain) and the finalize statement try it and
skip a trace another holds; a writer that must change the trace anyway (a score added or
deleted) waits for it, in a statement of its own before its change, so that the change reads
the trace as the holder left it (docs/monitoring.md, "How corrections work").
"""

from __future__ import annotations

from collections.abc import Iterable

from trajhub.storage.database import Connection

#: the lock's key: one bigint per (project, trace id)
KEY = "hashtextextended({project} || '/' || {trace_id}, 0)"
#: taken if free, within a statement that skips the traces another transaction holds
TRY_LOCK = f"pg_try_advisory_xact_lock({KEY})"

# the locks are taken in the arrays' order, as unnest gives their elements
_WAIT = ("SELECT count(pg_advisory_xact_lock("
         + KEY.format(project="k.project", trace_id="k.trace_id")
         + ")) FROM unnest($1::text[], $2::text[]) AS k(project, trace_id)")


async def wait_for(conn: Connection, project: str, trace_ids: Iterable[str]) -> None:
    """Take the locks of these traces for the rest of the caller's transaction, waiting for any
    another holds. In sorted order, so two callers never wait for each other."""
    ids = sorted(set(trace_ids))
    if ids:
        await conn.execute(_WAIT, [project] * len(ids), ids)
