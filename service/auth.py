"""API keys at the door: who a request is, which project it may touch, and what it may do there.

Every transport asks `authenticate` (the REST router check in api/scopes.py, the HTTP ingest
routes in ingest/http.py, the gRPC service in ingest/grpc.py) and `scoped_project`, so the rules
live here once:

- a key is sent as `Authorization: Bearer <key>` (HTTP header or gRPC metadata);
- the key's project wins: a request naming another project is refused, and one naming none
  works in the key's project;
- scopes: `ingest` writes spans; `read` reads everything and also creates and edits datasets
  and evaluations (evaluating is a reader's work); `admin` includes both, and alone manages
  keys, re-derives and deletes; `metrics` scrapes `/metrics` and nothing else;
- `metrics` is apart from the others because the metrics are server-wide (they count every
  project's traffic), while every other scope works in one project: a project's admin key does
  not include it;
- `TRAJHUB_BOOTSTRAP_KEY` is an admin key of every project, and the operator's: it may do
  everything, `metrics` included.

A missing, unknown or revoked key is Unauthenticated (401 / UNAUTHENTICATED); a key used outside
its project or scope is Forbidden (403 / PERMISSION_DENIED). Messages name the key by its public
id only: a key is never logged or echoed.
"""

from __future__ import annotations

import hmac
import ipaddress
from dataclasses import dataclass
from typing import Literal

import asyncpg

from trajhub.service.config import Settings
from trajhub.service.errors import Forbidden, Unauthenticated, Unavailable
from trajhub.storage import keys

Scope = Literal["ingest", "read", "admin", "metrics"]
INGEST: Scope = "ingest"
READ: Scope = "read"
ADMIN: Scope = "admin"
METRICS: Scope = "metrics"

#: what each scope may do
GRANTS: dict[str, frozenset[str]] = {
    INGEST: frozenset({INGEST}),
    READ: frozenset({READ}),
    ADMIN: frozenset({ADMIN, READ, INGEST}),
    METRICS: frozenset({METRICS}),
}
#: what the bootstrap key may do: everything
EVERY_SCOPE: frozenset[str] = frozenset(GRANTS)

BOOTSTRAP_KEY_ID = "bootstrap"


@dataclass(frozen=True)
class Principal:
    """Who a request is: a key's public id, its project (None: every project, the bootstrap
    key) and its scope."""

    key_id: str
    project: str | None
    scope: str

    @property
    def grants(self) -> frozenset[str]:
        """The scopes this key may act in: its scope's, or every one for the bootstrap key."""
        return EVERY_SCOPE if self.project is None else GRANTS[self.scope]


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve to anything
        return False


def auth_enabled(settings: Settings) -> bool:
    """`auto` asks for keys only when the server listens beyond this machine, so the local
    quickstart needs none."""
    if settings.auth == "auto":
        return not is_loopback(settings.host)
    return settings.auth == "on"


def bearer_token(authorization: str | None) -> str:
    """The key in an `Authorization: Bearer <key>` value; Unauthenticated naming what is
    missing."""
    if not authorization:
        raise Unauthenticated("an API key is required: send `Authorization: Bearer <key>`")
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise Unauthenticated("the Authorization header must read `Bearer <key>`")
    return token


async def identify(db: asyncpg.Pool, settings: Settings, token: str) -> Principal:
    """The principal of a presented key; Unauthenticated when the key is not valid."""
    if settings.bootstrap_key and hmac.compare_digest(token.encode(),
                                                      settings.bootstrap_key.encode()):
        return Principal(BOOTSTRAP_KEY_ID, None, ADMIN)
    if keys.key_id_of(token) is None:
        raise Unauthenticated("the API key is not valid (not a key trajhub issued)")
    async with db.acquire() as conn:
        row = await keys.find(conn, token)
    if row is None:
        raise Unauthenticated("the API key is not valid (unknown key)")
    if row.revoked_at is not None:
        raise Unauthenticated(f"the API key {row.key_id} was revoked")
    return Principal(row.key_id, row.project, row.scope)


async def authenticate(db: asyncpg.Pool, settings: Settings, authorization: str | None,
                       needs: str) -> Principal | None:
    """The principal allowed to do `needs` (a scope), None when auth is off; Unauthenticated or
    Forbidden otherwise."""
    if not auth_enabled(settings):
        return None
    principal = await identify(db, settings, bearer_token(authorization))
    if needs not in principal.grants:
        raise Forbidden(f"the API key {principal.key_id} has scope {principal.scope!r}; "
                        f"this needs {needs!r}")
    return principal


def scoped_project(principal: Principal | None, named: str | None) -> str | None:
    """The project a request works in: the key's, whatever it names; naming another one is
    Forbidden. Without a key (auth off) or with the bootstrap key, the named one (or None)."""
    if principal is None or principal.project is None:
        return named
    if named is not None and named != principal.project:
        raise Forbidden(f"the API key {principal.key_id} is for project {principal.project!r}, "
                        f"not {named[:128]!r}")
    return principal.project


@dataclass
class IngestGate:
    """The key check of the gRPC server, which starts before the database pool exists."""

    settings: Settings
    db: asyncpg.Pool | None = None

    async def project(self, authorization: str | None, named: str | None) -> str | None:
        """The project a call stores its spans under: the key's (whatever the metadata or the
        resource attributes say), else `named`, else None (decided per resource)."""
        if not auth_enabled(self.settings):
            return named
        if self.db is None:
            raise Unavailable("trajhub is starting: the database is not connected yet")
        return scoped_project(await authenticate(self.db, self.settings, authorization, INGEST),
                              named)
