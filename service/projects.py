"""Project names: what one may look like.

Placeholder of the validator the ingest side defines (h7's service/projects.py); the REST API
validates the `project` parameter and header with it."""

from __future__ import annotations

import re

#: at most 200 characters: a letter or digit, then letters, digits and `._:@/-`
PROJECT_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@/-]{0,199}")
MAX_PROJECT_LENGTH = 200


class InvalidProject(ValueError):
    """A project name outside the documented length or character set."""


def validate_project(name: str) -> str:
    """`name` when it is a valid project name; InvalidProject (naming the limit) otherwise."""
    if len(name) > MAX_PROJECT_LENGTH:
        raise InvalidProject(f"project name is {len(name)} characters long; the limit is "
                             f"{MAX_PROJECT_LENGTH}")
    if not PROJECT_PATTERN.fullmatch(name):
        raise InvalidProject(f"project name {name[:60]!r} is not allowed: use up to "
                             f"{MAX_PROJECT_LENGTH} letters, digits and . _ : @ / -, "
                             "starting with a letter or digit")
    return name
