"""The shared coercions (normalizers.coerce) against the semantics its module doc states: one table
per function, each row a value and what the stated rule makes of it."""

from __future__ import annotations

import math
from typing import Any

import pytest

from trajhub.normalizers.coerce import (
    to_bool,
    to_dict,
    to_float,
    to_int,
    to_list,
    to_str,
    to_whole,
)

INT_CASES: list[tuple[Any, int | None]] = [
    (12, 12),
    (-3, -3),
    (0, 0),
    (12.0, 12),  # a float with no fractional part is that integer
    (-0.0, 0),
    ("12", 12),
    (" +12 ", 12),  # surrounding spaces and a sign are part of a decimal spelling
    ("-7", -7),
    ("12.0", 12),  # a number string with an integral value
    ("1e3", 1000),
    (b"42", 42),
    (12.5, None),  # fractional: unknown, not truncated
    ("12.5", None),
    (True, None),  # bool is not an int
    (False, None),
    (math.nan, None),
    (math.inf, None),
    (-math.inf, None),
    ("nan", None),
    ("inf", None),
    ("", None),
    ("twelve", None),
    ("0x10", None),
    (None, None),
    ([12], None),
    ({"n": 12}, None),
]


@pytest.mark.parametrize(("value", "expected"), INT_CASES)
def test_to_int_reads_exact_integers_only(value: Any, expected: int | None) -> None:
    result = to_int(value)
    assert result == expected
    assert result is None or type(result) is int


WHOLE_CASES: list[tuple[Any, int | None]] = [
    (12, 12),
    ("12", 12),
    ("12.0", 12),
    (12.5, 12),  # the whole part of a fraction
    ("12.5", 12),
    (-12.5, -12),  # toward zero
    ("1.5e3", 1500),
    (True, None),  # bool is not a number
    (math.nan, None),
    (math.inf, None),
    ("inf", None),
    ("", None),
    ("twelve", None),
    (None, None),
    ({"n": 1}, None),
]


@pytest.mark.parametrize(("value", "expected"), WHOLE_CASES)
def test_to_whole_keeps_the_whole_part_of_finite_numbers(value: Any,
                                                         expected: int | None) -> None:
    result = to_whole(value)
    assert result == expected
    assert result is None or type(result) is int


FLOAT_CASES: list[tuple[Any, float | None]] = [
    (1.5, 1.5),
    (2, 2.0),
    ("0.7", 0.7),
    (" 3 ", 3.0),
    ("1e-3", 0.001),
    (True, None),
    (math.nan, None),
    (math.inf, None),
    ("nan", None),
    ("Infinity", None),
    ("", None),
    ("abc", None),
    (None, None),
    ([1.5], None),
]


@pytest.mark.parametrize(("value", "expected"), FLOAT_CASES)
def test_to_float_reads_finite_numbers_only(value: Any, expected: float | None) -> None:
    result = to_float(value)
    assert result == expected
    assert result is None or type(result) is float


STR_CASES: list[tuple[Any, str]] = [
    (None, ""),
    ("text", "text"),
    ("", ""),
    (True, "true"),
    (False, "false"),
    (12, "12"),
    (1.5, "1.5"),
    (b"caf\xc3\xa9", "café"),
    ({"b": 1, "a": [True, None]}, '{"a": [true, null], "b": 1}'),  # key-sorted JSON
    (["x", 1], '["x", 1]'),
]


@pytest.mark.parametrize(("value", "expected"), STR_CASES)
def test_to_str_gives_one_text_per_value(value: Any, expected: str) -> None:
    assert to_str(value) == expected


BOOL_CASES: list[tuple[Any, bool | None]] = [
    (True, True),
    (False, False),
    ("true", True),
    (" FALSE ", False),
    ("True", True),
    (1, None),  # numbers are not bools
    (0, None),
    ("yes", None),
    ("", None),
    (None, None),
]


@pytest.mark.parametrize(("value", "expected"), BOOL_CASES)
def test_to_bool_reads_bools_and_their_spellings(value: Any, expected: bool | None) -> None:
    assert to_bool(value) is expected


def test_to_list_keeps_lists_and_tuples_and_empties_the_rest() -> None:
    items = [1, 2]
    assert to_list(items) is items
    assert to_list((1,)) == (1,)
    for odd in (None, "ab", {"a": 1}, 3):
        assert list(to_list(odd)) == []


def test_to_dict_keeps_mappings_and_empties_the_rest() -> None:
    mapping = {"a": 1}
    assert to_dict(mapping) is mapping
    for odd in (None, "ab", [("a", 1)], 3):
        assert dict(to_dict(odd)) == {}
