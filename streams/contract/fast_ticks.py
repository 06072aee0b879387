"""Market ticks read without pydantic when every field is plainly valid: the ticks topic carries
far more messages than all the others, and validating one through its model costs more than
the market stage's work on it.

:func:`read_tick` takes a price or availability tick of schema version 2 whose fields are all
present with their own JSON types (a float price, an integer count) and within their bounds,
whose time carries an offset, and whose ``key`` and ``idempotency_key`` are given (as
:func:`streams.contract.dump_event` writes them). Anything else — a field missing, extra,
repeated or of another type, a value out of bounds, an escape in a string, a key to derive or
that differs — it leaves to the standard path, which reads it or says what is wrong, so what is
read and what is refused, and why, stay those of the event models.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import get_args

from streams.contract.events import AvailabilityReason, AvailabilityTick, PriceTick
from streams.contract.fast_json import orjson_object
from streams.contract.fields import (
    EARLIEST_TIME,
    LATEST_TIME,
    MAX_AVAILABLE,
    MAX_IDEMPOTENCY_KEY_CHARS,
    MAX_KEY_CHARS,
    MAX_PRICE,
    MIN_PRICE,
    is_market_key,
)

Tick = PriceTick | AvailabilityTick

_ENVELOPE = ("type", "schema_version", "event_time", "key", "idempotency_key", "market")
"""The fields every tick read here carries, with its own (``spot_price``, ``available``)."""
_OPTIONAL: dict[type[Tick], str] = {PriceTick: "on_demand_price", AvailabilityTick: "reason"}
_REASONS = frozenset(get_args(AvailabilityReason))
_ENVELOPE_STRINGS = 5
"""String values of a valid tick besides its reason: type, event_time, key, idempotency_key,
market."""
_new = object.__new__
_set = object.__setattr__


def read_tick(raw: bytes) -> Tick | None:
    """The tick ``raw`` holds, equal to what its model reads, when it is a plainly valid one
    (module doc); otherwise ``None``."""
    if b'_tick"' not in raw or b"\\" in raw:
        return None
    data = orjson_object(raw)
    if data is None:
        return None
    try:
        kind, version, time, key, idempotency_key, market = map(data.__getitem__, _ENVELOPE)
        if kind == "price_tick":
            cls: type[Tick] = PriceTick
            spot, on_demand = data["spot_price"], data.get("on_demand_price")
            valid = _price(spot) and (on_demand is None or _price(on_demand))
            own: dict[str, object] = {"spot_price": spot, "on_demand_price": on_demand}
            strings = _ENVELOPE_STRINGS
        elif kind == "availability_tick":
            cls = AvailabilityTick
            available, reason = data["available"], data.get("reason")
            valid = (type(available) is int and 0 <= available <= MAX_AVAILABLE
                     and (reason is None or (type(reason) is str and reason in _REASONS)))
            own = {"available": available, "reason": reason}
            strings = _ENVELOPE_STRINGS + (reason is not None)
        else:
            return None
    except KeyError:  # a field missing
        return None
    # Every field is one of the class's (the count), and without escapes every '"' delimits a
    # string (the field names and the string values, now checked): a repeated field, which
    # orjson reads as its last, leaves more of them.
    if (not valid or len(data) != len(_ENVELOPE) + 1 + (_OPTIONAL[cls] in data)
            or raw.count(b'"') != 2 * (len(data) + strings)
            or not _envelope(version, market, key, idempotency_key)):
        return None
    time = _utc_time(time)
    if time is None:
        return None
    tick = _new(cls)
    _set(tick, "__dict__", {"schema_version": 2, "type": kind, "event_time": time, "key": key,
                            "idempotency_key": idempotency_key, "market": market, **own})
    _set(tick, "__pydantic_fields_set__", set(data))
    _set(tick, "__pydantic_extra__", None)
    _set(tick, "__pydantic_private__", None)
    return tick


def _envelope(version: object, market: object, key: object, idempotency_key: object) -> bool:
    """Whether the version, the keys and the market are plainly valid."""
    return (type(version) is int and version == 2 and type(market) is str
            and len(market) <= MAX_KEY_CHARS and is_market_key(market) and key == market
            and type(idempotency_key) is str
            and 0 < len(idempotency_key) <= MAX_IDEMPOTENCY_KEY_CHARS)


def _utc_time(value: object) -> datetime | None:
    """The UTC time of an ISO-8601 string with an offset within the accepted range."""
    if type(value) is not str:
        return None
    try:
        time = datetime.fromisoformat(value)
        if time.tzinfo is None:
            return None
        time = time.astimezone(UTC)
    except (ValueError, OverflowError):
        return None
    return time if EARLIEST_TIME <= time <= LATEST_TIME else None


def _price(value: object) -> bool:
    return type(value) is float and MIN_PRICE <= value <= MAX_PRICE
