"""The filterable copy of an OTLP span's attributes (the `attributes` JSONB column that the
span and trace filters read): scalars only, strings up to 256 characters, no NUL in a key or a
string, no NaN or infinity; everything else stays in the span body alone."""

from __future__ import annotations

import orjson
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from tests.otlp_builders import new_trace_id, request, span
from trajhub.service.ingest.decode import otlp_batch


def _pair(key: str, value: AnyValue) -> KeyValue:
    return KeyValue(key=key, value=value)


def _filterable(pairs: list[KeyValue]) -> dict[str, object]:
    s = span(new_trace_id(), "op")
    s.attributes.extend(pairs)
    (row,) = otlp_batch(request([s]), "filterable").rows.values()
    loaded: dict[str, object] = orjson.loads(row.attributes)
    return loaded


def test_scalar_attributes_are_filterable_as_their_own_type() -> None:
    assert _filterable([
        _pair("s", AnyValue(string_value="weather")),
        _pair("i", AnyValue(int_value=-7)),
        _pair("b", AnyValue(bool_value=False)),
        _pair("d", AnyValue(double_value=0.5)),
        _pair("zero", AnyValue(int_value=0)),
    ]) == {"s": "weather", "i": -7, "b": False, "d": 0.5, "zero": 0}


def test_an_empty_string_is_filterable_and_an_attribute_without_a_value_is_not() -> None:
    assert _filterable([_pair("empty", AnyValue(string_value="")),
                        _pair("unset", AnyValue())]) == {"empty": ""}


def test_long_strings_nul_and_non_finite_numbers_stay_in_the_body_only() -> None:
    assert _filterable([
        _pair("at_limit", AnyValue(string_value="x" * 256)),
        _pair("too_long", AnyValue(string_value="x" * 257)),
        _pair("nul_value", AnyValue(string_value="a\x00b")),
        _pair("nul\x00key", AnyValue(string_value="fine")),
        _pair("nan", AnyValue(double_value=float("nan"))),
        _pair("inf", AnyValue(double_value=float("-inf"))),
    ]) == {"at_limit": "x" * 256}


def test_arrays_maps_and_bytes_are_not_filterable() -> None:
    array = AnyValue()
    array.array_value.values.add(string_value="a")
    kvlist = AnyValue()
    kvlist.kvlist_value.values.add(key="k", value=AnyValue(string_value="v"))
    assert _filterable([_pair("array", array), _pair("map", kvlist),
                        _pair("bytes", AnyValue(bytes_value=b"\x01"))]) == {}


def test_a_repeated_key_keeps_its_last_filterable_value() -> None:
    assert _filterable([_pair("k", AnyValue(string_value="first")),
                        _pair("k", AnyValue(int_value=2)),
                        _pair("k", AnyValue(string_value="x" * 300))]) == {"k": 2}
