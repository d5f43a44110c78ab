"""Building evaluator config dataclasses from JSON options.

Configs arrive as JSON from the API; an option name typed wrong must be an error that names it,
not a silently ignored key that leaves the evaluator on its default.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import fields
from typing import TYPE_CHECKING, Any, ClassVar, Self, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

C = TypeVar("C", bound="DataclassInstance")


class ConfigError(ValueError):
    """An evaluator config that cannot be used; the message names the evaluator and option."""


def config_from_mapping(cls: type[C], options: Mapping[str, Any] | None, evaluator: str) -> C:
    """Instantiate `cls` from `options`; an unknown option -> ConfigError (a ValueError) naming
    it. Type and range checks are the dataclass's own `__post_init__`."""
    options = options or {}
    if not isinstance(options, Mapping):
        raise ConfigError(f"{evaluator}: config must be an object")
    known = {f.name for f in fields(cls)}
    unknown = sorted(str(key) for key in options if key not in known)
    if unknown:
        raise ConfigError(
            f"{evaluator}: unknown option {unknown[0]!r} (known: {', '.join(sorted(known))})"
        )
    return cls(**options)


class Options:
    """Base of an evaluator's config dataclass: it names its evaluator in `EVALUATOR`, and
    `from_dict` builds it from JSON options with `config_from_mapping`."""

    EVALUATOR: ClassVar[str] = ""
    __dataclass_fields__: ClassVar[dict[str, Any]]

    @classmethod
    def from_dict(cls, options: Mapping[str, Any] | None) -> Self:
        return config_from_mapping(cls, options, cls.EVALUATOR)


def require_type(evaluator: str, name: str, value: Any, *types: type) -> None:
    # bool is an int subclass; a flag passed where a number is expected is a mistake.
    if isinstance(value, bool) and bool not in types:
        raise ConfigError(f"{evaluator}: option {name!r} must be {_names(types)}, got a boolean")
    if not isinstance(value, types):
        raise ConfigError(
            f"{evaluator}: option {name!r} must be {_names(types)}, got {type(value).__name__}"
        )


def require_names(options: Any, evaluator: str, name: str) -> None:
    """The option `name` of the frozen `options` is a list of strings; kept as a tuple (JSON
    gives a list), so the options stay hashable and immutable."""
    names = getattr(options, name)
    require_type(evaluator, name, names, list, tuple)
    for item in names:
        require_type(evaluator, f"{name}[]", item, str)
    object.__setattr__(options, name, tuple(names))


def require_budget(evaluator: str, name: str, value: Any, *, integer: bool) -> None:
    if value is None:
        return
    require_type(evaluator, name, value, *((int,) if integer else (int, float)))
    if value < 0 or math.isnan(value):
        raise ConfigError(f"{evaluator}: option {name!r} must be >= 0, got {value!r}")


def _names(types: tuple[type, ...]) -> str:
    return " or ".join(t.__name__ for t in types)
