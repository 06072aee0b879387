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
from typing import Any, get_args

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

_REQUIRED: dict[type[Tick], frozenset[str]] = {
    PriceTick: frozenset({"schema_version", "type", "event_time", "key", "idempotency_key",
                          "market", "spot_price"}),
    AvailabilityTick: frozenset({"schema_version", "type", "event_time", "key",
                                 "idempotency_key", "market", "available"}),
}
_CLASSES: dict[str, type[Tick]] = {"price_tick": PriceTick,
                                   "availability_tick": AvailabilityTick}
_FIELDS = {cls: frozenset(cls.model_fields) for cls in _REQUIRED}
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
    kind = data.get("type")
    cls = _CLASSES.get(kind) if type(kind) is str else None
    if cls is None or not _REQUIRED[cls] <= data.keys() <= _FIELDS[cls]:
        return None
    time = _utc_time(data["event_time"])
    if time is None or not _envelope(data):
        return None
    if cls is PriceTick:
        if not (_price(data["spot_price"]) and _optional_price(data.get("on_demand_price"))):
            return None
        values = {"schema_version": 2, "type": kind, "event_time": time, "key": data["key"],
                  "idempotency_key": data["idempotency_key"], "market": data["market"],
                  "spot_price": data["spot_price"],
                  "on_demand_price": data.get("on_demand_price")}
        strings = _ENVELOPE_STRINGS
    else:
        available, reason = data["available"], data.get("reason")
        if (type(available) is not int or not 0 <= available <= MAX_AVAILABLE
                or (reason is not None and (type(reason) is not str or reason not in _REASONS))):
            return None
        values = {"schema_version": 2, "type": kind, "event_time": time, "key": data["key"],
                  "idempotency_key": data["idempotency_key"], "market": data["market"],
                  "available": available, "reason": reason}
        strings = _ENVELOPE_STRINGS + (reason is not None)
    # Without escapes every '"' delimits a string (field names and the string values, now
    # checked): a repeated field, which orjson reads as its last, leaves more of them.
    if raw.count(b'"') != 2 * (len(data) + strings):
        return None
    tick = _new(cls)
    _set(tick, "__dict__", values)
    _set(tick, "__pydantic_fields_set__", set(data))
    _set(tick, "__pydantic_extra__", None)
    _set(tick, "__pydantic_private__", None)
    return tick


def _envelope(data: dict[str, Any]) -> bool:
    """Whether the version, the keys and the market are plainly valid."""
    version, market, key, idempotency_key = (data["schema_version"], data["market"], data["key"],
                                             data["idempotency_key"])
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


def _optional_price(value: object) -> bool:
    return value is None or _price(value)
