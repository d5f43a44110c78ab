"""trajhub's SQL avoids what Citus refuses, checked on plain PostgreSQL (no Citus in CI): every
statement trajhub's processes send during a workload that covers ingest of the captured
clients, derivation, finalizing, sessions, scores, a rule run, a review queue, retention and
re-derivation, plus the statements of the migrations applied after the distribution, parsed with
PostgreSQL's own parser and checked against the one table classification
(storage/citus_tables.py; tests/citus_checks.py says what is checked)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import asyncpg
import pglast
import pytest

from tests.citus_checks import problems
from tests.harness import TestDatabase, run
from trajhub.storage import citus_tables
from trajhub.storage.migrate import migrate, migration_files

ROOT = Path(__file__).parent.parent

#: the migration that distributes the tables where Citus is installed, and the later ones that
#: place the tables created after it
DISTRIBUTION = 74
PLACEMENTS = (DISTRIBUTION, 91, 92)

#: existing test files whose servers and commands make the workload
WORKLOAD = ("test_replay_captures.py", "test_log_events.py", "test_sessions.py", "test_api_keys.py",
            "test_scores.py", "test_rules.py", "test_review.py", "test_retention.py",
            "test_partitions.py", "test_normalize_rederive.py", "test_queue_claims.py",
            "test_rollups.py", "test_timeseries.py", "test_read_indexes.py")

#: loaded into every Python process of the workload (PYTHONPATH): each connection a trajhub
#: process opens logs the statements it sends, once each, to a file of that process
_CAPTURE = '''
import os, sys
import asyncpg.connection

_dir = os.environ["TRAJHUB_CAPTURE_STATEMENTS"]
_seen = set()
_init = asyncpg.connection.Connection.__init__


def _log(record):
    if record.query not in _seen:
        _seen.add(record.query)
        with open(os.path.join(_dir, f"{os.getpid()}.sql.jsonl"), "a") as out:
            out.write(__import__("json").dumps(record.query) + "\\n")


def _init_logging(self, *args, **kwargs):
    _init(self, *args, **kwargs)
    if "_pytest" not in sys.modules:  # the test process's own statements are not trajhub's
        self.add_query_logger(_log)


asyncpg.connection.Connection.__init__ = _init_logging
'''


def _created_tables() -> set[str]:
    names = set()
    for _, _, sql in migration_files():
        names |= {m.lower() for m in re.findall(
            r"CREATE TABLE (?:IF NOT EXISTS )?([a-z_]+) \(", sql, flags=re.IGNORECASE)}
        for old, new in re.findall(r"ALTER TABLE (?:IF EXISTS )?([a-z_]+) RENAME TO ([a-z_]+)",
                                   sql, flags=re.IGNORECASE):
            names.discard(old)
            names.add(new)
    return names


@pytest.mark.unit
def test_every_table_is_classified_once() -> None:
    kinds = (citus_tables.DISTRIBUTED, citus_tables.REFERENCE, citus_tables.LOCAL)
    assert not any(a & b for i, a in enumerate(kinds) for b in kinds[i + 1:])
    assert set().union(*kinds) == _created_tables() | {"schema_migrations"}


@pytest.mark.unit
def test_the_distribution_migration_follows_the_classification() -> None:
    sql = "\n".join(sql for number, _, sql in migration_files() if number in PLACEMENTS)
    def listed(call: str) -> set[str]:
        # the tables named in the ARRAY[…] a call loops over, and those it is called with
        found = set(re.findall(call + r"\('([a-z_]+)'", sql))
        for names in re.findall(r"ARRAY\[([^\]]*)\] LOOP\s+PERFORM " + call, sql):
            found |= set(re.findall(r"'([a-z_]+)'", names))
        return found

    distributed, reference = listed("create_distributed_table"), listed("create_reference_table")
    assert distributed == citus_tables.DISTRIBUTED
    assert reference == citus_tables.REFERENCE


@pytest.mark.unit
def test_the_check_finds_what_citus_refuses() -> None:
    def vol(name: str) -> str:
        return {"now": "s", "lower": "i"}.get(name, "v")

    refused = {
        "SELECT 1 FROM trace_changes c JOIN traces t ON t.trace_id = c.trace_id": "local",
        "SELECT c.p, (SELECT count(*) FROM spans s WHERE s.trace_id = c.t) "
        "FROM unnest($1::text[]) AS c(t)": "correlated",
        "INSERT INTO traces (trace_id) VALUES ($1) ON CONFLICT (trace_id) "
        "DO UPDATE SET first_seen = now()": "IMMUTABLE",
        "INSERT INTO traces (trace_id, first_seen) VALUES "
        "($1, (SELECT first_seen FROM trace_keys))": "VALUES",
        "WITH RECURSIVE p AS (SELECT min(project) FROM traces UNION ALL "
        "SELECT 1 FROM p) SELECT * FROM p": "recursive",
        "SELECT 1 FROM open_trajectories ORDER BY settle_at LIMIT 5 FOR UPDATE SKIP LOCKED":
            "FOR UPDATE",
        "SELECT pg_try_advisory_xact_lock(1) FROM open_trajectories": "advisory",
        "SELECT 1 FROM trace_keys WHERE trace_id = ANY($1) FOR UPDATE SKIP LOCKED": "FOR UPDATE",
        "DELETE FROM scores x USING traces t WHERE x.trace_id = t.trace_id": "reference table",
        "DELETE FROM open_trajectories o WHERE o.settle_at + make_interval(secs => $1) <= now()":
            "STABLE",
        "UPDATE rules SET n = CASE WHEN w <= now() THEN 1 ELSE n + 1 END": "CASE",
        "UPDATE rules SET n = CASE WHEN w <= $2::timestamptz - interval '1 minute' THEN 1 END":
            "CASE",
        "SELECT 1 FROM trajectories t WHERE NOT EXISTS (SELECT 1 FROM trajectories n "
        "WHERE n.session_id = t.session_id)": "correlated on another column",
    }
    for sql, words in refused.items():
        found = problems(sql, vol)
        assert any(words in p for p in found), (sql, found)
    for sql in ("SELECT 1 FROM spans WHERE trace_id = $1 FOR UPDATE",
                "SELECT c.t FROM unnest($1::text[]) AS c(t) WHERE pg_try_advisory_xact_lock(1)",
                "INSERT INTO traces (trace_id) SELECT * FROM unnest($1::text[]) "
                "ON CONFLICT (trace_id) DO UPDATE SET name = lower(EXCLUDED.name)",
                "SELECT 1 FROM rules r JOIN rule_runs q ON q.rule_id = r.id",
                "SELECT 1 FROM open_trajectories o WHERE NOT EXISTS (SELECT 1 FROM traces c "
                "WHERE c.project = o.project AND c.trace_id = o.trace_id)"):
        assert problems(sql, vol) == [], sql


async def _migrated(url: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        await migrate(conn)
    finally:
        await conn.close()


def _volatility(url: str) -> dict[str, str]:
    async def read() -> dict[str, str]:
        conn = await asyncpg.connect(url)
        try:
            rows = await conn.fetch("SELECT proname, provolatile::text FROM pg_proc")
        finally:
            await conn.close()
        found: dict[str, str] = {}
        for r in rows:  # an overload that is not immutable makes the name suspect
            found[r["proname"]] = max(found.get(r["proname"], "i"), r["provolatile"],
                                      key="ivs".index)
        return found

    return dict(run(read()))


@pytest.mark.integration
@pytest.mark.slow
def test_no_statement_trajhub_sends_is_refused_by_citus(database: TestDatabase,
                                                         tmp_path: Path) -> None:
    # the workload's files run on this suite's database (embedded or not), and the functions'
    # volatility is read from it once every migration is applied
    url = database.url
    run(_migrated(url))
    capture, site = tmp_path / "statements", tmp_path / "site"
    capture.mkdir()
    site.mkdir()
    (site / "sitecustomize.py").write_text(_CAPTURE)
    env = {**os.environ, "TRAJHUB_CAPTURE_STATEMENTS": str(capture),
           "TRAJHUB_TEST_DATABASE_URL": url,
           "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-n", "0", "-p", "no:cacheprovider",
         *(f"tests/{name}" for name in WORKLOAD)],
        cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:]
    statements = {json.loads(line) for f in capture.iterdir()
                  for line in f.read_text().splitlines()}
    assert len(statements) > 100, len(statements)
    # the migrations before the distribution run on plain tables, even on Citus (serve applies
    # them, so they are among the statements); those from it on are checked
    statements -= {part for number, _, sql in migration_files() if number < DISTRIBUTION
                   for part in pglast.split(sql)}
    statements |= {part for number, _, sql in migration_files() if number >= DISTRIBUTION
                   for part in pglast.split(sql)}
    volatility = _volatility(url)
    refused = {sql: found for sql in statements
               if (found := problems(sql, lambda name: volatility.get(name, "v")))}
    assert not refused, "\n\n".join(f"{sql}\n  -> {'; '.join(p)}" for sql, p in refused.items())
