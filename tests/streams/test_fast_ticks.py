"""The fast tick reader reads exactly what the event models read, or declines."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from streams.contract import AvailabilityTick, EventError, PriceTick, dump_event, parse_event
from streams.contract.codec import parse_standard
from streams.contract.fast_ticks import MAX_TICK_BYTES, read_tick
from streams.contract.fields import MAX_AVAILABLE, MAX_PRICE, MIN_PRICE
from tests.streams.strategies import available, job_ids, market_keys, tick_prices, times

offsets = st.integers(-23 * 60, 23 * 60).map(lambda m: timezone(timedelta(minutes=m)))
odd = st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=4) | st.just([1])


def mostly(valid: st.SearchStrategy, invalid: st.SearchStrategy) -> st.SearchStrategy:
    """``valid`` nine times in ten, else ``invalid`` or something of another type."""
    return st.integers(0, 9).flatmap(lambda n: valid if n else invalid | odd)


valid_times = (st.builds(lambda t, tz: t.astimezone(tz).isoformat(), times, offsets)
               | times.map(lambda t: t.isoformat().replace("+00:00", "Z")))
invalid_times = (
    times.map(lambda t: t.replace(tzinfo=None).isoformat())  # no offset
    | st.sampled_from(["1999-12-31T23:59:59Z", "2100-01-01T00:00:01Z", "2024-02-30T00:00:00Z",
                       "0001-01-01T00:00:00+01:00", "2024-05-01 12:00:00+00:00", "now", ""])
    | st.floats(9.4e8, 4.2e9) | st.integers(9 * 10**8, 42 * 10**8))
bad_prices = st.sampled_from([0.0, MIN_PRICE / 2, MAX_PRICE * 2, -1.0, 1e300]) | st.integers(0, 20)
bad_counts = st.sampled_from([-1, MAX_AVAILABLE + 1, 2**70]) | st.floats(0, 10)
reasons = st.sampled_from(["obtained", "refused", "preempted", "probe"]) | st.none()
bad_keys = st.sampled_from(["-x", "a b", "a*", "é", "x" * 1025]) | st.text(max_size=20)
bad_markets = st.sampled_from(["a/b/c", "a/b/c/d/e", "a//c/d", "x" * 300 + "/b/c/d"])


FIELDS = ("schema_version", "type", "event_time", "key", "idempotency_key", "market",
          "spot_price", "on_demand_price", "available", "reason")


@st.composite
def tick_fields(draw: st.DrawFn, wrong: str = "some") -> dict[str, object]:
    """The fields of a tick as a writer may send them. ``wrong``: "none", every one valid;
    "one", a single field's value wrong or of another type; "some", each field's value wrong
    one time in ten, and now and then a field missing or one too many."""
    spoiled = draw(st.sampled_from(FIELDS)) if wrong == "one" else None

    def pick(name: str, valid: st.SearchStrategy, invalid: st.SearchStrategy) -> object:
        if wrong == "some":
            return draw(mostly(valid, invalid))
        return draw(invalid | odd if name == spoiled else valid)

    market = pick("market", market_keys, bad_markets)
    price = spoiled in ("spot_price", "on_demand_price") or (
        spoiled not in ("available", "reason") and draw(st.booleans()))
    kind = "price_tick" if price else "availability_tick"
    data: dict[str, object] = {
        "schema_version": pick("schema_version", st.just(2), st.sampled_from([1, 2.0, 3])),
        "type": pick("type", st.just(kind), st.sampled_from(["price_tick", "availability_tick",
                                                             "job_finished"])),
        "event_time": pick("event_time", valid_times, invalid_times),
        "key": pick("key", st.just(market), st.just("")),
        "idempotency_key": pick("idempotency_key", job_ids, bad_keys),
        "market": market,
    }
    if price:
        data["spot_price"] = pick("spot_price", tick_prices, bad_prices)
        if spoiled == "on_demand_price" or draw(st.booleans()):
            data["on_demand_price"] = pick("on_demand_price", tick_prices, bad_prices)
    else:
        data["available"] = pick("available", available, bad_counts)
        if spoiled == "reason" or draw(st.booleans()):
            data["reason"] = pick("reason", reasons, st.just("lost"))
    if wrong == "some" and draw(st.integers(0, 9)) == 0:
        for name in draw(st.lists(st.sampled_from(sorted(data)), max_size=2, unique=True)):
            del data[name]
    if wrong == "some" and draw(st.integers(0, 9)) == 0:
        data[draw(st.sampled_from(["reason", "available", "spot_price", "extra"]))] = 1.5
    return data


def _raw(data: dict[str, object], repeated: str | None) -> bytes:
    raw = json.dumps(data, ensure_ascii=False).encode()
    if repeated is not None and repeated in data:
        raw = raw[:-1] + b", " + json.dumps({repeated: data[repeated]}).encode()[1:]
    return raw


def _same(fast: PriceTick | AvailabilityTick, reference: object) -> None:
    assert type(fast) is type(reference)
    assert repr(fast) == repr(reference)  # each value, its type and the time zone
    assert fast == reference
    assert fast.model_fields_set == reference.model_fields_set  # type: ignore[attr-defined]
    assert dump_event(fast) == dump_event(reference)  # type: ignore[arg-type]


def _read_by_models(raw: bytes) -> object | None:
    """The event the models read from ``raw``; ``None`` if they refuse it."""
    try:
        return parse_standard(raw)
    except EventError:
        return None


@given(tick_fields(wrong="none"))
def test_a_valid_tick_as_a_writer_sends_it_takes_the_fast_path(data):
    raw = _raw(data, None)
    fast = read_tick(raw)
    assert fast is not None
    _same(fast, parse_standard(raw))


@given(tick_fields(wrong="one") | tick_fields(),
       st.sampled_from([None, "market", "spot_price", "available", "type"]))
def test_what_the_fast_reader_reads_is_what_the_models_read(data, repeated):
    """It declines what the models refuse, and reads the rest as they do (or declines it:
    the models then read it, :func:`test_parse_event_reads_and_refuses_as_the_models_do`)."""
    raw = _raw(data, repeated)
    fast, reference = read_tick(raw), _read_by_models(raw)
    assume(fast is not None or reference is None)
    if reference is None:
        assert fast is None
    else:
        _same(fast, reference)


@given(tick_fields(), st.sampled_from([None, "market", "spot_price", "available"]))
def test_parse_event_reads_and_refuses_as_the_models_do(data, repeated):
    raw = _raw(data, repeated)
    try:
        reference = parse_standard(raw)
    except EventError as exc:
        with pytest.raises(EventError) as refused:
            parse_event(raw)
        assert str(refused.value) == str(exc)
        return
    _same(parse_event(raw), reference)  # type: ignore[arg-type]


@given(times, market_keys, tick_prices, st.none() | tick_prices, available,
       st.sampled_from([None, "obtained", "refused", "preempted", "probe"]))
def test_ticks_as_written_take_the_fast_path(time, market, spot, on_demand, count, reason):
    for tick in (PriceTick(event_time=time, market=market, spot_price=spot,
                           on_demand_price=on_demand),
                 AvailabilityTick(event_time=time, market=market, available=count,
                                  reason=reason)):
        raw = dump_event(tick)
        fast = read_tick(raw)
        assert fast is not None
        _same(fast, parse_standard(raw))
        assert fast == tick


LONG_TICK = (b'{"event_time":"2024-05-01T12:00:00Z","idempotency_key":"' + b"k" * 1024
             + b'",' + b" " * 1024 + b'"key":"a/b/c/d","market":"a/b/c/d",'
             b'"schema_version":2,"spot_price":0.5,"type":"price_tick"}')
"""A valid tick longer than MAX_TICK_BYTES (the longest key, and spaces between fields)."""


@pytest.mark.parametrize("raw", [
    b'{"event_time":"2024-05-01T12:00:00Z","idempotency_key":"i","key":"a/b/c/d",'
    b'"market":"a/b/c/d","schema_version":2,"spot_price":0.5,"spot_price":0.6,'
    b'"type":"price_tick"}',  # a repeated field: orjson keeps the last, the models refuse
    b'{"event_time":"2024-05-01T12:00:00Z","idempotency_key":"i","key":"a/b/c/d",'
    b'"market":"a\\/b/c/d","schema_version":2,"spot_price":0.5,"type":"price_tick"}',
    b'{"event_time":"2024-05-01T12:00:00Z","idempotency_key":"","key":"a/b/c/d",'
    b'"market":"a/b/c/d","schema_version":2,"spot_price":0.5,"type":"price_tick"}',
    b'{"available":1.0,"event_time":"2024-05-01T12:00:00Z","idempotency_key":"i",'
    b'"key":"a/b/c/d","market":"a/b/c/d","schema_version":2,"type":"availability_tick"}',
    b'{"available":true,"event_time":"2024-05-01T12:00:00Z","idempotency_key":"i",'
    b'"key":"a/b/c/d","market":"a/b/c/d","schema_version":2,"type":"availability_tick"}',
    b'{"event_time":1714564800,"idempotency_key":"i","key":"a/b/c/d",'
    b'"market":"a/b/c/d","schema_version":2,"spot_price":0.5,"type":"price_tick"}',
    LONG_TICK,
])
def test_the_models_read_what_is_not_plainly_valid(raw):
    assert read_tick(raw) is None


PLAIN_PRICE = {"event_time": "2024-05-01T12:00:00Z", "idempotency_key": "i", "key": "a/b/c/d",
               "market": "a/b/c/d", "schema_version": 2, "spot_price": 0.5,
               "type": "price_tick"}
PLAIN_AVAILABILITY = {**{k: v for k, v in PLAIN_PRICE.items() if k != "spot_price"},
                      "type": "availability_tick", "available": 1}


ONE_WRONG = [
    ("idempotency_key", PLAIN_PRICE, "-x"),
    ("schema_version", PLAIN_PRICE, 3),
    ("event_time", PLAIN_PRICE, "2024-05-01T12:00:00"),
    ("key", PLAIN_PRICE, "a/b/c/e"),
    ("spot_price", PLAIN_PRICE, MAX_PRICE * 2),
    ("on_demand_price", PLAIN_PRICE, 0.0),
    ("available", PLAIN_AVAILABILITY, -1),
    ("reason", PLAIN_AVAILABILITY, "lost"),
]
"""A plain tick with one field's value wrong: the field, the tick, the value."""


@pytest.mark.parametrize(("field", "plain", "value"), ONE_WRONG, ids=[f for f, _, _ in ONE_WRONG])
def test_a_tick_with_one_wrong_field_is_declined_and_refused_for_it(field, plain, value):
    raw = json.dumps({**plain, field: value}).encode()
    assert read_tick(raw) is None
    with pytest.raises(EventError, match=rf"\.{field} = "):
        parse_standard(raw)


def test_a_time_with_an_offset_reads_as_utc():
    raw = (b'{"event_time":"2024-05-01T14:00:00+02:00","idempotency_key":"i","key":"a/b/c/d",'
           b'"market":"a/b/c/d","schema_version":2,"spot_price":0.5,"type":"price_tick"}')
    tick = read_tick(raw)
    assert tick is not None and tick.event_time == datetime(2024, 5, 1, 12, tzinfo=UTC)
    assert tick.event_time.tzinfo is UTC
    _same(tick, parse_standard(raw))


def test_a_tick_longer_than_the_fast_path_takes_is_read_by_the_models():
    assert len(LONG_TICK) > MAX_TICK_BYTES and read_tick(LONG_TICK) is None
    tick = parse_event(LONG_TICK)
    assert isinstance(tick, PriceTick) and tick.idempotency_key == "k" * 1024
