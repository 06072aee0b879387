"""Events to bytes and back: :func:`dump_event` writes schema version 2, :func:`parse_event`
reads it and says in one line what is wrong with anything else (another version included)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, field_validator

from streams.contract.events import (
    EVENT_TYPES,
    SCHEMA_VERSION,
    Envelope,
    Event,
    PublishedForecast,
    canonical_json,
)
from streams.contract.fast_json import dumps as fast_dumps
from streams.contract.fast_json import loads as fast_loads
from streams.contract.fast_ticks import read_tick
from streams.contract.fields import expected, iso

MAX_EVENT_BYTES = 1 << 20
"""Longest message accepted, in bytes (Kafka's default largest message)."""
MAX_NESTING = 6
"""Deepest nesting of arrays and objects in a message (a forecast's run hazards reach 6)."""


class EventError(ValueError):
    """An event that cannot be decoded: bad bytes, bad JSON or a schema violation."""


def _readable_version(value: object) -> object:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or value != SCHEMA_VERSION:
        raise expected(f"{SCHEMA_VERSION} (the schema version this reader supports)")
    return value


class _Header(BaseModel):
    """The fields read before choosing the event class; errors are titled ``Event``."""

    model_config = ConfigDict(title="Event", extra="ignore")

    schema_version: Annotated[int, BeforeValidator(_readable_version)] = SCHEMA_VERSION
    type: str

    @field_validator("type", mode="before")
    @classmethod
    def _known_type(cls, value: object) -> object:
        if not isinstance(value, str) or value not in EVENT_TYPES:
            raise expected("one of " + ", ".join(map(repr, EVENT_TYPES)))
        return value


def dump_event(event: Envelope) -> bytes:
    """Compact UTF-8 JSON with sorted keys: equal events give equal bytes (its numbers are
    finite, as every event's are)."""
    data = event.model_dump(mode="json")
    return fast_dumps(data) or canonical_json(data)


def parse_event(raw: bytes | str) -> Event:
    """Decode one event from the wire; raise :class:`EventError` saying what is wrong. Reads
    what :func:`parse_standard` reads, the plainly valid ticks faster
    (:mod:`streams.contract.fast_ticks`)."""
    if type(raw) is bytes and len(raw) <= MAX_EVENT_BYTES:
        tick = read_tick(raw)
        if tick is not None:
            return tick
    return parse_standard(raw)


def parse_standard(raw: bytes | str) -> Event:
    """Decode one event through its model: the reference reader."""
    data = _fast_object(raw)
    if data is None:
        data = _load_object(raw)
    try:
        kind, version = data.get("type"), data.get("schema_version")
        if (type(version) is not int or version != SCHEMA_VERSION or type(kind) is not str
                or kind not in EVENT_TYPES):
            kind = _Header.model_validate(data).type  # says what is wrong
        return EVENT_TYPES[kind].model_validate(data)
    except ValidationError as exc:
        raise EventError(describe_validation_error(exc)) from exc


def read_forecast_envelope(raw: bytes) -> Event:
    """The event of ``raw``; a market forecast of this schema version without its outlook
    (set to ``None``: a stage that relays the bytes need not read it). Anything else, and a
    message the fast reader leaves to the standard one, is read in full (:func:`parse_event`)."""
    data = _fast_object(raw)
    if (data is None or data.get("type") != "market_forecast"
            or type(data.get("schema_version")) is not int
            or data["schema_version"] != SCHEMA_VERSION):
        return parse_event(raw)
    try:
        return PublishedForecast.model_validate({**data, "outlook": None})
    except ValidationError as exc:
        raise EventError(describe_validation_error(exc)) from exc


def _fast_object(raw: bytes | str) -> dict[str, Any] | None:
    """What :func:`~streams.contract.fast_json.loads` reads of ``raw`` when it may."""
    if type(raw) is bytes and len(raw) <= MAX_EVENT_BYTES:
        return fast_loads(raw, MAX_NESTING)
    return None


_TOO_DEEP = (f"event nests arrays or objects deeper than {MAX_NESTING} levels: expected at most "
             f"{MAX_NESTING}")


def _load_object(raw: bytes | str) -> dict[str, Any]:
    if isinstance(raw, str):
        size = len(raw.encode("utf-8", "surrogatepass"))
    else:
        raw = raw if isinstance(raw, bytes) else bytes(raw)
        size = len(raw)
    if size > MAX_EVENT_BYTES:
        raise EventError(f"event is {size:,} bytes: expected at most {MAX_EVENT_BYTES:,}")
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise EventError(
                f"event is not valid UTF-8 at byte {exc.start}: expected UTF-8 JSON"
            ) from exc
    opened = raw.count("{") + raw.count("[")  # bounds the nesting from above
    try:
        data = _DECODER.decode(raw)
    except json.JSONDecodeError as exc:
        raise EventError(
            f"event is not valid JSON at line {exc.lineno} col {exc.colno}: {exc.msg}"
        ) from exc
    except RecursionError:
        raise EventError(_TOO_DEEP) from None
    except EventError:
        raise
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise EventError(
            f"event holds a number that cannot be read ({str(exc).split(';')[0]}): expected "
            "numbers within the documented bounds") from None
    if not isinstance(data, dict):
        raise EventError(f"event = {_show(data)}: expected a JSON object")
    if opened > MAX_NESTING and _depth(data) > MAX_NESTING:
        raise EventError(_TOO_DEEP)
    return data


def _depth(data: dict[str, Any] | list[Any]) -> int:
    """Nesting depth of a decoded JSON object or array, walked without recursion (only the
    containers are visited)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, level = stack.pop()
        deepest = max(deepest, level)
        if deepest > MAX_NESTING:
            return deepest
        children = value.values() if type(value) is dict else value
        stack.extend([(child, level + 1) for child in children if type(child) in _CONTAINERS])
    return deepest


_CONTAINERS = (dict, list)
"""The containers JSON decodes to (exactly these types)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data = dict(pairs)
    if len(data) != len(pairs):
        names = [name for name, _ in pairs]
        name = next(n for i, n in enumerate(names) if n in names[:i])
        raise EventError(f"event field {name!r} appears twice: expected unique field names")
    return data


_DECODER = json.JSONDecoder(object_pairs_hook=_unique_keys)
"""One decoder for every message (``json.loads`` with a hook makes one per call)."""

_BOUNDS = {
    "greater_than": ("gt", ">"),
    "greater_than_equal": ("ge", ">="),
    "less_than": ("lt", "<"),
    "less_than_equal": ("le", "<="),
}
_EVENT_CLASSES = {cls.__name__: cls for cls in EVENT_TYPES.values()}


def describe_validation_error(exc: ValidationError) -> str:
    """One line naming, for each error, the field, the value and what was expected."""
    return "; ".join(_describe(exc.title, error) for error in exc.errors())


def _describe(model: str, error: Any) -> str:
    kind, ctx = error["type"], error.get("ctx", {})
    if kind == "field_invalid":
        return f"{model}.{ctx['field']} = {_show(ctx['value'])}: expected {ctx['expected']}"
    where = model + _location(error["loc"])
    if kind == "missing":
        return f"{where} is missing: expected a value"
    if kind == "extra_forbidden":
        known = _EVENT_CLASSES[model].model_fields if model in _EVENT_CLASSES else {}
        allowed = f"one of {', '.join(sorted(known))}" if known else "no other fields"
        return f"{where} = {_show(error['input'])}: unknown field, expected {allowed}"
    return f"{where} = {_show(error['input'])}: expected {_expectation(kind, ctx, error['msg'])}"


def _expectation(kind: str, ctx: dict[str, Any], message: str) -> str:
    if kind == "expected":
        return ctx["expected"]
    if kind in _BOUNDS:
        name, sign = _BOUNDS[kind]
        return f"{sign} {_number(ctx[name])}"
    if kind == "finite_number":
        return "a finite number"
    if kind == "literal_error":
        return ctx["expected"]
    if kind == "string_too_short":
        return f"at least {ctx['min_length']} character(s)"
    if kind == "string_too_long":
        return f"at most {ctx['max_length']} character(s)"
    if kind == "too_short":
        return f"at least {ctx['min_length']} item(s)"
    if kind == "too_long":
        return f"at most {ctx['max_length']} item(s)"
    return message.removeprefix("Input should be ")


def _number(value: float) -> str:
    """A bound as people write it: ``10,000``, ``0.5``, ``1e-06``."""
    if float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:g}"


def _location(loc: tuple[int | str, ...]) -> str:
    if not loc:
        return ""
    rest = "".join(" key" if part == "[key]" else f"[{part!r}]" for part in loc[1:])
    return f".{loc[0]}{rest}"


def _show(value: object) -> str:
    text = iso(value) if isinstance(value, datetime) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
