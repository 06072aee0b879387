"""The orjson path reads and writes exactly what the standard ``json`` does, or declines."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streams.contract import MAX_NESTING, PriceTick, dump_event, fast_json, parse_event
from streams.contract.events import canonical_json

scalars = (st.none() | st.booleans() | st.integers(-(2**70), 2**70)
           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8))
values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=20)
objects = st.dictionaries(st.text(max_size=6), values, max_size=6)


def typed(value: object) -> object:
    """``value`` with each scalar paired with its type (``1 == 1.0`` but they read apart)."""
    if isinstance(value, dict):
        return {k: typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [typed(v) for v in value]
    return type(value), value


@given(objects)
def test_what_orjson_reads_is_what_json_reads(data):
    raw = canonical_json(data)
    fast = fast_json.loads(raw, MAX_NESTING)
    if fast is not None:
        assert typed(fast) == typed(json.loads(raw))


@given(objects)
def test_what_orjson_reads_of_json_it_would_write_otherwise_is_what_json_reads(data):
    raw = json.dumps(data, ensure_ascii=False).encode()  # spaced: not as orjson writes it
    fast = fast_json.loads(raw, MAX_NESTING)
    if fast is not None:
        assert typed(fast) == typed(json.loads(raw))


@given(objects)
def test_what_orjson_writes_is_what_json_writes(data):
    fast = fast_json.dumps(data)
    if fast is not None:
        assert fast == canonical_json(data)


def depth(value: object) -> int:
    """How deep arrays and objects nest in ``value``."""
    if not isinstance(value, dict | list):
        return 0
    return 1 + max(map(depth, value.values() if isinstance(value, dict) else value), default=0)


bracketed = st.text(alphabet='[]{}"a', max_size=5)
shapes = st.recursive(st.none() | bracketed, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(bracketed, inner, max_size=3), max_leaves=12)


@given(st.dictionaries(bracketed, shapes, max_size=4))
def test_the_nesting_limit_counts_arrays_and_objects_not_brackets_in_strings(data):
    raw = canonical_json(data)
    deepest = depth(data)
    if fast_json.loads(raw, deepest) is None:
        assert b"\\" in raw  # a quote in a string: escaped, left to the standard path
        return
    assert fast_json.loads(raw, deepest - 1) is None


@pytest.mark.parametrize("raw", [
    b'{"spot_price":0.5,"spot_price":0.6}',  # a repeated field
    b'{"a":{"b":1,"b":2}}',
    b'{"offset":18446744073709551616}',  # beyond 64 bits: orjson reads a float
    b'{"offset":-9223372036854775809}',
    b'{"a": 1, "a": 2}',  # the same, spaced: orjson does not write them back as they came
    b'{"offset": 18446744073709551616}',
    b'{"a":' + b"[" * 2000 + b"]" * 2000 + b"}",  # nesting orjson may not survive
    b'{"a":[[[[[[1]]]]]]}',  # deeper than MAX_NESTING
    b'{"market":"a\\/b"}',  # an escape
    b'{"spot_price":NaN}',
    b'{"a":"\xff"}',
    b"[1]",
])
def test_the_standard_path_reads_what_orjson_could_misread(raw):
    assert fast_json.loads(raw, MAX_NESTING) is None


@pytest.mark.parametrize("value", [1e-05, 5e-324, 1e16, -2.5e20, 2**64, [0.5, 1e-05], [0.5, 1e16]])
def test_the_standard_path_writes_what_orjson_would_write_otherwise(value):
    assert fast_json.dumps({"x": value}) is None
    assert fast_json.dumps({"europe-west4": [value], "e1": "e-5"}) is None
    assert fast_json.dumps({"x": 0.5}) == canonical_json({"x": 0.5})


@pytest.mark.parametrize("written", [b'{"x":1e16}', b'{"x":1e+16}', b'{"x":[0.5,-2.5e20]}',
                                     b'{"x":-2.5e+20}', b'{"x":5e-324}'])
def test_an_exponent_in_either_spelling_is_seen(written):
    """orjson before 3.13 writes ``1e16``, from 3.13 ``1e+16``: both take the standard path."""
    assert fast_json._has_exponent(written)
    assert not fast_json._has_exponent(b'{"e1":"e-5","x":10.5}')


def test_a_repeated_field_is_still_named():
    with pytest.raises(ValueError, match="event field 'type' appears twice"):
        parse_event(b'{"type":"price_tick","type":"job_finished"}')


def test_ordinary_events_take_the_orjson_path():
    tick = PriceTick(event_time=datetime(2024, 5, 1, 12, tzinfo=UTC),
                     market="gcp/europe-west4/europe-west4-a/a2-highgpu-1g", spot_price=0.91)
    raw = dump_event(tick)
    assert fast_json.loads(raw, MAX_NESTING) == json.loads(raw)
    assert fast_json.dumps(tick.model_dump(mode="json")) == raw


def test_a_long_fraction_takes_the_orjson_path():
    raw = b'{"price":[0.0077092684612544106,0.010000017342953030]}'  # 19 digits after the point
    assert fast_json.loads(raw, MAX_NESTING) == json.loads(raw)
