"""`trajhub keys create|list|revoke`: API keys, managed on the server's database directly.

Like `trajhub rederive`, these work on the database (TRAJHUB_DATABASE_URL or the embedded one in
the data directory), not through a server: they are how the first key of a project comes to
exist. An admin key (or TRAJHUB_BOOTSTRAP_KEY) does the same over REST at /api/v1/keys, which
answers only while the server runs with auth on (service/api/keys.py says why).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from trajhub.service import config
from trajhub.service.cli.common import CliError, Command, print_json, table, when
from trajhub.service.projects import InvalidProject, validate_project
from trajhub.storage import keys
from trajhub.storage.keys import SCOPES, KeyRow

_DATABASE = ("database_url", "data_dir")


def _project(name: str) -> str:
    try:
        return validate_project(name)
    except InvalidProject as exc:
        raise CliError(f"--project: {exc}") from None


async def _create(args: argparse.Namespace) -> tuple[KeyRow, str]:
    from trajhub.service.cli.admin import database

    async with database(config.settings_from(args), "create a key in") as conn:
        return await keys.create(conn, _project(args.project), args.scope, args.name)


def _run_create(args: argparse.Namespace) -> int:
    row, key = asyncio.run(_create(args))
    # the key alone on stdout (for `$(trajhub keys create ...)`); the rest on stderr
    print(key)
    print(f"created {row.scope} key {row.key_id} for project {row.project!r}. It is shown only "
          "now (stored as a digest): send it as `Authorization: Bearer <key>`", file=sys.stderr)
    return 0


async def _list(args: argparse.Namespace) -> list[KeyRow]:
    from trajhub.service.cli.admin import database

    project = _project(args.project) if args.project else None
    async with database(config.settings_from(args), "list keys of") as conn:
        return await keys.list_keys(conn, project)


def _key_json(row: KeyRow) -> dict[str, Any]:
    """A key as the API lists it (service/api/keys.py, `ApiKey`): the moments as `_time`, the
    stored `_at` names after them as their deprecated aliases."""
    return {"key_id": row.key_id, "project": row.project, "scope": row.scope,
            "name": row.name, "created_time": row.created_at, "revoked_time": row.revoked_at,
            "created_at": row.created_at, "revoked_at": row.revoked_at}


def _run_list(args: argparse.Namespace) -> int:
    rows = asyncio.run(_list(args))
    if args.json:
        print_json([_key_json(r) for r in rows])
        return 0
    print(table([(r.key_id, r.project, r.scope, r.name, when(r.created_at.isoformat()),
                  when(r.revoked_at.isoformat()) if r.revoked_at else "-") for r in rows],
                ("KEY_ID", "PROJECT", "SCOPE", "NAME", "CREATED", "REVOKED")))
    return 0


async def _revoke(args: argparse.Namespace) -> KeyRow | None:
    from trajhub.service.cli.admin import database

    project = _project(args.project) if args.project else None
    async with database(config.settings_from(args), "revoke a key in") as conn:
        return await keys.revoke(conn, args.key_id, project)


def _run_revoke(args: argparse.Namespace) -> int:
    row = asyncio.run(_revoke(args))
    if row is None:
        where = f" in project {args.project!r}" if args.project else ""
        raise CliError(f"no API key {args.key_id!r}{where} (see `trajhub keys list`)")
    print(f"revoked key {row.key_id} ({row.scope}, project {row.project!r})")
    return 0


def register(sub: Any) -> None:
    """Add `keys` to the `trajhub` subcommands."""
    # no server options: the actions take the database's, after their own arguments
    kc = Command(sub, "keys", help="create, list and revoke API keys", parents=(),
                 description="API keys for a server running with TRAJHUB_AUTH on. Works on the "
                             "server's database directly (--database-url or --data-dir, as for "
                             "`trajhub serve`), so no key is needed to create the first one; "
                             "admin keys do the same over REST at /api/v1/keys while the "
                             "server runs with auth on.")

    create = kc.action(
        "create", _run_create, help="create a key and print it (once)",
        description="Print a new key on stdout. Only its SHA-256 digest is stored: it cannot "
                    "be shown again. Scopes: ingest = write spans; read = read everything, "
                    "create and edit datasets and evaluations; admin = all of that, plus keys, "
                    "re-derivation and deletes; metrics = scrape /metrics, nothing else (the "
                    "figures are server-wide, whatever --project says).")
    create.add_argument("--project", required=True, help="the project the key works in")
    create.add_argument("--scope", required=True, choices=SCOPES, help="what the key may do")
    create.add_argument("--name", default="", help="what the key is for (shown in lists)")
    config.add_arguments(create, only=_DATABASE)

    listing = kc.action("list", _run_list, help="list keys (never the keys themselves)")
    listing.add_argument("--project", help="only this project's keys (default: all)")
    listing.add_argument("--json", action="store_true", help="print JSON")
    config.add_arguments(listing, only=_DATABASE)

    revoke = kc.action("revoke", _run_revoke, help="revoke a key: it stops working at once")
    revoke.add_argument("key_id", help="the key's id (KEY_ID in `trajhub keys list`)")
    revoke.add_argument("--project", help="refuse unless the key is of this project")
    config.add_arguments(revoke, only=_DATABASE)
