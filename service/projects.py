"""Project names: what one is allowed to be, and which one a request names.

Every receiver and every REST route resolves and validates a project through this module, so the
rule is written once. A project name is 1–128 characters from `A–Z a–z 0–9 . _ : -` (Coze Loop
workspace ids are digits; the rest covers names such as `team-a:prod`). The limit keeps every
key within PostgreSQL's btree row limit, and the character set keeps names usable in URLs,
headers and file names without escaping.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

DEFAULT_PROJECT = "default"
MAX_PROJECT_LENGTH = 128
PROJECT_CHARACTERS = "A-Z a-z 0-9 . _ : -"

_PROJECT = re.compile(r"[A-Za-z0-9._:-]+")

#: request headers that name a project, in priority order
PROJECT_HEADERS = ("trajhub-project", "cozeloop-workspace-id")


class InvalidProject(ValueError):
    """A project name outside the documented limits; the message names the limit."""


def validate_project(name: str) -> str:
    """`name` if it is a valid project name, else InvalidProject saying why."""
    if not name:
        raise InvalidProject("project name is empty")
    if len(name) > MAX_PROJECT_LENGTH:
        raise InvalidProject(f"project name is {len(name)} characters long; the limit is "
                             f"{MAX_PROJECT_LENGTH}")
    if not _PROJECT.fullmatch(name):
        shown = name if len(name) <= 40 else name[:40] + "…"
        raise InvalidProject(f"project name {shown!r} has characters outside "
                             f"{PROJECT_CHARACTERS}")
    return name


def header_project(headers: Mapping[str, str]) -> str | None:
    """The project a request names in its headers (validated), or None to decide per
    resource or span."""
    for key in PROJECT_HEADERS:
        value = headers.get(key)
        if value:
            return validate_project(value)
    return None
