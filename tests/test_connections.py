"""Every connection trajhub opens has its settings (storage/database.py): JIT off everywhere,
and the REST API's pool plans each statement for its own values."""

from __future__ import annotations

import ast
import asyncio
import json

import asyncpg

from tests.harness import TestDatabase
from tests.test_package import SOURCES
from trajhub.storage.database import Connection, connect, create_pool

#: costly enough for JIT once `jit_above_cost` is 0, whatever the planner estimates
SUMMED = "SELECT sum(g) FROM generate_series(1, 1000) AS g"


async def _compiled(conn: Connection) -> bool:
    """Whether the server compiled the statement to machine code (EXPLAIN ANALYZE's "JIT")."""
    await conn.execute("SET jit_above_cost = 0")
    plan = json.loads(await conn.fetchval(f"EXPLAIN (ANALYZE, FORMAT JSON) {SUMMED}"))
    return "JIT" in plan[0]


def test_no_connection_of_trajhub_compiles_a_statement(database: TestDatabase) -> None:
    async def check() -> None:
        plain = await asyncpg.connect(database.url)
        own = await connect(database.url)
        pool = await create_pool(database.url, size=1)
        try:
            # a plain connection compiles when the server can (PostgreSQL 15 from Debian can;
            # the embedded server is built without LLVM and never does)
            available = await plain.fetchval("SELECT pg_jit_available()")
            assert await _compiled(plain) is available
            assert await own.fetchval("SELECT current_setting('jit')") == "off"
            assert not await _compiled(own)
            async with pool.acquire() as conn:
                assert await conn.fetchval("SELECT current_setting('jit')") == "off"
                assert await conn.fetchval(
                    "SELECT current_setting('plan_cache_mode')") == "force_custom_plan"
                assert not await _compiled(conn)
        finally:
            await pool.close()
            await own.close()
            await plain.close()

    asyncio.run(check())


def _opens_a_connection(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "asyncpg"
            and node.func.attr in ("connect", "create_pool"))


def test_every_connection_is_opened_with_the_settings() -> None:
    """Only storage/database.py calls asyncpg.connect or asyncpg.create_pool: every other
    module opens its connections through it, and so gets the settings."""
    opened = sorted(
        f"{path.relative_to(SOURCES[0].parent)}:{node.lineno}"
        for source in SOURCES for path in source.rglob("*.py")
        if not path.is_symlink() and "__pycache__" not in path.parts
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if _opens_a_connection(node))
    assert opened and all(where.startswith("storage/database.py:") for where in opened), opened
