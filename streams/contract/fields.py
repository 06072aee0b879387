"""The field types of the contract and the bounds every value lies within.

Every number is finite and bounded and every time lies between :data:`EARLIEST_TIME` and
:data:`LATEST_TIME`, so whatever passes :func:`streams.contract.parse_event` is plausible enough
for every stage to compute with (docs/operations.md lists the bounds). What JSON Schema accepts,
the reader accepts: an integer field takes ``1.0`` as JSON Schema does, and a time string
follows the pattern the schemas state.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from functools import lru_cache
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BeforeValidator,
    Field,
    StrictFloat,
    StrictInt,
    WithJsonSchema,
)
from pydantic_core import PydanticCustomError

ID_CHARS = "A-Za-z0-9._:@+=-"
"""The characters of an identifier besides ``/``: no wildcard (``*``, ``?``), no backslash, no
space, quote or control character, so an id never matches another in a cloud's filter, a
tag, a shell or a log line. An identifier starts with a letter or a digit."""
_PART = f"[A-Za-z0-9][{ID_CHARS}]*"
MAX_JOB_ID_CHARS = 128
"""Longest job id."""
JOB_ID_PATTERN = f"^[A-Za-z0-9][/{ID_CHARS}]{{0,{MAX_JOB_ID_CHARS - 1}}}$"
"""A job id: a letter or a digit, then up to 127 of letters, digits and ``._:@+=-/``."""
MARKET_KEY_PATTERN = f"^{_PART}/{_PART}/{_PART}/{_PART}$"
"""A market key: four parts, each a letter or a digit and then letters, digits, ``._:@+=-``."""
_MARKET_KEY = re.compile(MARKET_KEY_PATTERN)
IDEMPOTENCY_KEY_PATTERN = f"^([A-Za-z0-9][/{ID_CHARS}]*)?$"
"""An idempotency key given by its writer (empty: derived), in the alphabet of job ids."""
REGION_PATTERN = f"^{_PART}/{_PART}$"
"""A region 'cloud/region'."""
PLACE_PATTERN = f"^{_PART}/{_PART}(/{_PART})?$"
"""A place 'cloud/region[/zone]'."""
MARKET_PATTERN_PATTERN = r"^[A-Za-z0-9._:@+=/*?\[\]!-]+$"
"""An fnmatch pattern on market keys: the characters of market keys and ``*?[]!``."""
MAX_MARKET_PATTERNS = 32
"""Most market patterns of one job (each is matched against the whole catalogue)."""
_UNSAFE = "(no spaces, wildcards, backslashes or control characters)"
ID_EXPECTED = f"a letter or a digit, then letters, digits and ._:@+=-/ only {_UNSAFE}"
PART_EXPECTED = f"a letter or a digit, then letters, digits and ._:@+=- only {_UNSAFE}"
TIME_PATTERN = (r"^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):"
                r"[0-5][0-9]:[0-5][0-9](\.[0-9]+)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$")
"""ISO-8601 (RFC 3339) with an upper-case ``T`` and ``Z`` or a ``±hh:mm`` offset."""

EARLIEST_TIME = datetime(2000, 1, 1, tzinfo=UTC)
"""The earliest event time, release, deadline or slot start accepted."""
LATEST_TIME = datetime(2100, 1, 1, tzinfo=UTC)
"""The latest event time, release, deadline or slot start accepted."""
MIN_PRICE, MAX_PRICE = 1e-6, 10_000.0
"""Lowest and highest spot or on-demand price of a tick, USD per instance-hour."""
MAX_INSTANCES = 10_000
"""Most instances one job may run (``n_max``, a decision's spot and on-demand counts)."""
MAX_AVAILABLE = 1_000_000
"""Highest spot availability count of a market."""
MAX_WORKLOAD = 1e7
"""Most work units one job may need (reference GPU-hours)."""
MIN_THROUGHPUT = 1e-6
"""Least throughput a job may have at ``n_min`` instances, work units per hour."""
MAX_THROUGHPUT = 1e6
"""Largest throughput coefficient ``alpha`` or ``|beta|``, work units per hour."""
MAX_OVERHEAD_SECONDS = 86_400.0
"""Longest restart overhead, seconds."""
MAX_USD = 1e9
"""Largest value, value at the hard deadline or miss penalty of a job, USD."""
MIN_SLOT_SECONDS, MAX_SLOT_SECONDS = 1.0, 7 * 86_400.0
"""Shortest and longest slot length Δ."""
MAX_EPOCH = 10**10
"""Largest epoch index (slots since Unix time 0; 2100 is epoch 4.1e9 at one-second slots)."""
MAX_SECONDS = 1e18
"""Largest magnitude of a duration such as a decision's slack."""
MAX_AMOUNT = 1e12
"""Largest magnitude of a derived amount: expected cost, forecast value, forecast error."""
MAX_ITEMS = 1_000
"""Most items in a list: markets of an epoch or a job, forecast horizon."""
MAX_CHECKPOINT_GB = 1e6
"""Largest checkpoint a job may declare, GB."""
MAX_COUNT = 2**63 - 1
"""Largest offset or byte count."""
MAX_KEY_CHARS = 256
"""Longest market key, and longest Kafka message key an event carries."""
MAX_IDEMPOTENCY_KEY_CHARS = 1024
"""Longest idempotency key."""

TIME_EXPECTED = ("a time from 2000-01-01T00:00:00Z to 2100-01-01T00:00:00Z: ISO-8601 with an "
                 "offset (e.g. '2024-05-01T12:00:00Z') or Unix seconds")


def expected(text: str) -> PydanticCustomError:
    """A field error whose message is ``expected <text>``."""
    return PydanticCustomError("expected", "expected {expected}", {"expected": text})


def field_error(field: str, value: object, what: str) -> PydanticCustomError:
    """A cross-field error reported against ``field`` (model validators have no location)."""
    return PydanticCustomError(
        "field_invalid",
        "{field} = {value}: expected {expected}",
        {"field": field, "value": value, "expected": what},
    )


def iso(time: datetime) -> str:
    """A UTC time as the wire writes it: ``2024-05-01T12:00:00Z`` (microseconds when any)."""
    return _utc_iso(time) if time.tzinfo is UTC else _iso(time)


ISOS_REMEMBERED = 1024
"""UTC times last written that are remembered with their text: an epoch's decisions, and the
ticks of many markets, share theirs."""


@lru_cache(maxsize=ISOS_REMEMBERED)
def _utc_iso(time: datetime) -> str:
    """:func:`iso` of a UTC time, remembered (a time of another zone that equals it keeps its
    own offset, so only UTC ones are)."""
    return _iso(time)


def _iso(time: datetime) -> str:
    return time.isoformat().replace("+00:00", "Z")


def utc(seconds: float) -> datetime:
    """Unix seconds as a UTC datetime."""
    return datetime.fromtimestamp(seconds, tz=UTC)


def _parse_time(value: object) -> object:
    """Accept aware datetimes, ISO-8601 strings with an offset (those of :data:`TIME_PATTERN`,
    which the schemas state, and the others Python reads), and finite Unix seconds."""
    try:
        if isinstance(value, str):
            value = datetime.fromisoformat(value)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            value = datetime.fromtimestamp(value, UTC)
    except (ValueError, OverflowError, OSError):
        raise expected(TIME_EXPECTED) from None
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise expected(TIME_EXPECTED)
    return value


def _as_utc(value: datetime) -> datetime:
    """The time in UTC, once checked to lie in the accepted range."""
    try:
        value = value.astimezone(UTC)
    except OverflowError:  # a year-1 or year-9999 time with an offset
        raise expected(TIME_EXPECTED) from None
    if not EARLIEST_TIME <= value <= LATEST_TIME:
        raise expected(TIME_EXPECTED)
    return value


def is_market_key(value: str) -> bool:
    """Whether ``value`` has the four non-empty parts of a market key (its length aside)."""
    return _MARKET_KEY.fullmatch(value) is not None


def _market_key(value: str) -> str:
    if not is_market_key(value):
        raise expected("a market key 'cloud/region/zone/instance_type' of four parts, each "
                       + PART_EXPECTED)
    return value


_JOB_ID = re.compile(JOB_ID_PATTERN)
_MARKET_PATTERN = re.compile(MARKET_PATTERN_PATTERN)


def is_job_id(value: str) -> bool:
    """Whether ``value`` is a job id of the contract's alphabet (:data:`JOB_ID_PATTERN`)."""
    return _JOB_ID.fullmatch(value) is not None


def _job_id(value: str) -> str:
    if not is_job_id(value):
        raise expected(f"a job id of 1 to {MAX_JOB_ID_CHARS} characters: {ID_EXPECTED}")
    return value


_IDEMPOTENCY_KEY = re.compile(IDEMPOTENCY_KEY_PATTERN)


def is_idempotency_key(value: str) -> bool:
    """Whether ``value`` is an idempotency key of the contract's alphabet, or empty."""
    return _IDEMPOTENCY_KEY.fullmatch(value) is not None


def _idempotency_key(value: str) -> str:
    if not is_idempotency_key(value):
        raise expected(f"an idempotency key of at most {MAX_IDEMPOTENCY_KEY_CHARS} characters: "
                       f"{ID_EXPECTED}; or empty, to derive it")
    return value


def _market_pattern(value: str) -> str:
    if _MARKET_PATTERN.fullmatch(value) is None:
        raise expected("an fnmatch pattern of letters, digits and ._:@+=-/*?[]! only")
    return value


def _integral(value: Any) -> Any:
    """A float with an integral value (``1.0``) as the integer it is, as JSON Schema reads it."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


UtcTime = Annotated[
    AwareDatetime,
    BeforeValidator(_parse_time),
    AfterValidator(_as_utc),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "format": "date-time", "pattern": TIME_PATTERN,
                 "description": "ISO-8601 with an offset, from 2000-01-01T00:00:00Z to "
                 "2100-01-01T00:00:00Z"},
                {"type": "number", "description": "Unix seconds",
                 "minimum": EARLIEST_TIME.timestamp(), "maximum": LATEST_TIME.timestamp()},
            ],
            "description": "UTC time from 2000-01-01T00:00:00Z to 2100-01-01T00:00:00Z: "
            "ISO-8601 with an offset, or Unix seconds",
        },
        mode="validation",
    ),
]
MarketKey = Annotated[
    str,
    Field(max_length=MAX_KEY_CHARS),
    AfterValidator(_market_key),
    Field(
        description="Market key 'cloud/region/zone/instance_type'",
        json_schema_extra={"pattern": MARKET_KEY_PATTERN},
    ),
]
JobId = Annotated[
    str,
    AfterValidator(_job_id),
    Field(description="Job identifier", json_schema_extra={"pattern": JOB_ID_PATTERN}),
]
IdempotencyKey = Annotated[
    str,
    Field(max_length=MAX_IDEMPOTENCY_KEY_CHARS),
    AfterValidator(_idempotency_key),
    Field(description="Deduplication key, also the CloudEvents id; derived when empty as "
          "'{type}:{key}:{event_time}:{digest}' (docs/contract.md)",
          json_schema_extra={"pattern": IDEMPOTENCY_KEY_PATTERN}),
]
MarketPattern = Annotated[
    str,
    Field(max_length=MAX_KEY_CHARS),
    AfterValidator(_market_pattern),
    Field(description="fnmatch pattern on market keys, e.g. gcp/us-* or */a3-*",
          json_schema_extra={"pattern": MARKET_PATTERN_PATTERN}),
]
Text = Annotated[str, Field(max_length=500)]
Name = Annotated[str, Field(min_length=1, max_length=256)]
Int = Annotated[StrictInt, BeforeValidator(_integral)]
"""An integer; a float with an integral value (``1.0``) is taken as that integer."""
Price = Annotated[StrictFloat, Field(ge=0, le=MAX_PRICE)]
TickPrice = Annotated[StrictFloat, Field(ge=MIN_PRICE, le=MAX_PRICE)]
Probability = Annotated[StrictFloat, Field(ge=0, le=1)]
Work = Annotated[StrictFloat, Field(ge=0, le=MAX_WORKLOAD)]
PositiveWork = Annotated[StrictFloat, Field(gt=0, le=MAX_WORKLOAD)]
Usd = Annotated[StrictFloat, Field(ge=-MAX_USD, le=MAX_USD)]
Amount = Annotated[StrictFloat, Field(ge=-MAX_AMOUNT, le=MAX_AMOUNT)]
NonNegativeAmount = Annotated[StrictFloat, Field(ge=0, le=MAX_AMOUNT)]
Seconds = Annotated[StrictFloat, Field(ge=-MAX_SECONDS, le=MAX_SECONDS)]
SlotSeconds = Annotated[StrictFloat, Field(ge=MIN_SLOT_SECONDS, le=MAX_SLOT_SECONDS)]
Instances = Annotated[Int, Field(ge=0, le=MAX_INSTANCES)]
Available = Annotated[Int, Field(ge=0, le=MAX_AVAILABLE)]
Epoch = Annotated[Int, Field(ge=0, le=MAX_EPOCH)]
Count = Annotated[Int, Field(ge=0, le=MAX_COUNT)]
