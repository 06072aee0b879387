"""Market ticks read without pydantic when every field is plainly valid: the ticks topic carries
far more messages than all the others, and validating one through its model costs more than
the market stage's work on it.

:func:`read_tick` takes a price or availability tick of schema version 2 whose fields are all
present with their own JSON types (a float price, an integer count) and within their bounds,
whose time carries an offset, and whose ``key`` and ``idempotency_key`` are given (as
:func:`streams.contract.dump_event` writes them). Anything else — a field missing, extra,
repeated or of another type, a value out of bounds, an escape in a string, a key to derive or
that differs, a message longer than :data:`MAX_TICK_BYTES` — it leaves to the standard path,
which reads it or says what is wrong, so what is read and what is refused, and why, stay those
of the event models.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache
from typing import get_args

from streams.contract.events import AvailabilityReason, AvailabilityTick, PriceTick
from streams.contract.fast_json import MAX_CONTAINERS, orjson_object
from streams.contract.fields import (
    EARLIEST_TIME,
    LATEST_TIME,
    MAX_AVAILABLE,
    MAX_IDEMPOTENCY_KEY_CHARS,
    MAX_KEY_CHARS,
    MAX_PRICE,
    MIN_PRICE,
    is_idempotency_key,
    is_market_key,
)

Tick = PriceTick | AvailabilityTick

_ENVELOPE_FIELDS = 6
"""The fields every tick read here carries: type, schema_version, event_time, key,
idempotency_key and market."""
_REASONS = frozenset(get_args(AvailabilityReason))
_ENVELOPE_STRINGS = 5
"""String values of a valid tick besides its reason: type, event_time, key, idempotency_key,
market."""
MAX_TICK_BYTES = 2 * MAX_CONTAINERS
"""Longest message read here: too short to nest deeper than orjson can read (a plain tick is
a few hundred bytes; a longer one takes the standard path)."""
MARKETS_REMEMBERED = 4096
"""Market keys found plainly valid that are remembered, so as not to match them again."""
_plain_markets: set[str] = set()
TIMES_REMEMBERED = 1024
"""Tick times last read that are remembered, with the UTC time each gives."""
_new = object.__new__
_set = object.__setattr__


def read_tick(raw: bytes) -> Tick | None:
    """The tick ``raw`` holds, equal to what its model reads, when it is a plainly valid one
    (module doc); otherwise ``None``."""
    if len(raw) > MAX_TICK_BYTES or b"\\" in raw:
        return None
    data = orjson_object(raw)
    if data is None:
        return None
    kind = data.get("type")
    cls: type[Tick]
    try:
        if kind == "price_tick":
            cls = PriceTick
            spot, on_demand = data["spot_price"], data.get("on_demand_price")
            if not (type(spot) is float and MIN_PRICE <= spot <= MAX_PRICE
                    and (on_demand is None or (type(on_demand) is float
                                               and MIN_PRICE <= on_demand <= MAX_PRICE))):
                return None
            fields = _ENVELOPE_FIELDS + 1 + ("on_demand_price" in data)
            strings = _ENVELOPE_STRINGS
        elif kind == "availability_tick":
            cls = AvailabilityTick
            available, reason = data["available"], data.get("reason")
            if not (type(available) is int and 0 <= available <= MAX_AVAILABLE
                    and (reason is None or (type(reason) is str and reason in _REASONS))):
                return None
            fields = _ENVELOPE_FIELDS + 1 + ("reason" in data)
            strings = _ENVELOPE_STRINGS + (reason is not None)
        else:
            return None
        version, time, key = data["schema_version"], data["event_time"], data["key"]
        idempotency_key, market = data["idempotency_key"], data["market"]
    except KeyError:  # a field missing
        return None
    # Every field is one of the class's (the count), and without escapes every '"' delimits a
    # string (the field names and the string values, now checked): a repeated field, which
    # orjson reads as its last, leaves more of them.
    if (len(data) != fields or raw.count(b'"') != 2 * (fields + strings)
            or type(version) is not int or version != 2 or key != market
            or not _plain_market(market) or type(idempotency_key) is not str
            or not 0 < len(idempotency_key) <= MAX_IDEMPOTENCY_KEY_CHARS
            or not is_idempotency_key(idempotency_key)):
        return None
    time = _utc_time(time)
    if time is None:
        return None
    values = {"schema_version": 2, "type": kind, "event_time": time, "key": key,
              "idempotency_key": idempotency_key, "market": market}
    if cls is PriceTick:
        values["spot_price"], values["on_demand_price"] = spot, on_demand
    else:
        values["available"], values["reason"] = available, reason
    tick = _new(cls)
    _set(tick, "__dict__", values)
    _set(tick, "__pydantic_fields_set__", set(data))
    _set(tick, "__pydantic_extra__", None)
    _set(tick, "__pydantic_private__", None)
    return tick


def _plain_market(market: object) -> bool:
    """Whether ``market`` is a plainly valid market key (those found so are remembered)."""
    if type(market) is not str:
        return False
    if market in _plain_markets:
        return True
    if not (len(market) <= MAX_KEY_CHARS and is_market_key(market)):
        return False
    if len(_plain_markets) < MARKETS_REMEMBERED:
        _plain_markets.add(market)
    return True


def _utc_time(value: object) -> datetime | None:
    """The UTC time of an ISO-8601 string with an offset within the accepted range."""
    return _utc_time_of(value) if type(value) is str else None


@lru_cache(maxsize=TIMES_REMEMBERED)
def _utc_time_of(value: str) -> datetime | None:
    """:func:`_utc_time` of a string (the latest ones read are remembered: the ticks of many
    markets share their times)."""
    try:
        time = datetime.fromisoformat(value)
        if time.tzinfo is None:
            return None
        time = time.astimezone(UTC)
    except (ValueError, OverflowError):
        return None
    return time if EARLIEST_TIME <= time <= LATEST_TIME else None
