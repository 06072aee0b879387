"""The versioned event contract: every message on spotsched's Kafka topics.

An event is one flat JSON object. The envelope fields (:class:`Envelope`) sit beside the
event's own fields, and ``type`` says which event class it is::

    {"event_time": "2024-05-01T12:00:00Z", "idempotency_key": "...",
     "key": "aws/us-east-1/us-east-1a/p3.2xlarge", "market": "aws/us-east-1/us-east-1a/p3.2xlarge",
     "on_demand_price": null, "schema_version": 1, "spot_price": 0.91, "type": "price_tick"}

``key`` (the Kafka message key) is derived from the event: the market key for market ticks, the
job id for job events and decisions, the source topic for dead letters. ``idempotency_key`` is
derived from the content unless given; a provisioning decision's is always
``"{job_id}:{epoch}:{revision}"``. Times are UTC; the wire carries ISO-8601 (Unix seconds are
accepted on input) at microsecond resolution. Prices are USD per instance-hour.

Every number is finite and bounded, every time lies between :data:`EARLIEST_TIME` and
:data:`LATEST_TIME`, and a message is at most :data:`MAX_EVENT_BYTES` long and nests at most
:data:`MAX_NESTING` levels: whatever passes :func:`parse_event` is plausible enough for every
stage to compute with (docs/operations.md lists the bounds).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    ValidationError,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from solver.job import Job

SCHEMA_VERSION = 1
"""The schema version this code writes and the only one it reads."""

MARKET_KEY_PATTERN = r"^[^/]+/[^/]+/[^/]+/[^/]+$"

# Plausibility bounds: values outside them are rejected with a field error.
EARLIEST_TIME = datetime(2000, 1, 1, tzinfo=UTC)
"""The earliest event time, release, deadline or slot start accepted."""
LATEST_TIME = datetime(2100, 1, 1, tzinfo=UTC)
"""The latest event time, release, deadline or slot start accepted."""
MAX_EVENT_BYTES = 1 << 20
"""Longest message accepted, in bytes (Kafka's default largest message)."""
MAX_NESTING = 4
"""Deepest nesting of arrays and objects in a message (events are flat: 2 at most)."""
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
"""Largest epoch (slot index since the Unix epoch; 2100 is epoch 4.1e9 at one-second slots)."""
MAX_SECONDS = 1e18
"""Largest magnitude of a duration such as a decision's slack."""
MAX_AMOUNT = 1e12
"""Largest magnitude of a derived amount: expected cost, forecast value, forecast error."""
MAX_ITEMS = 1_000
"""Most items in a list: markets of an epoch or a job, forecast horizon."""
DEAD_LETTER_RAW_BYTES = 1 << 19
"""Original bytes a dead letter keeps (its base64 stays under Kafka's default message size)."""

_TIME_EXPECTED = "a timezone-aware ISO-8601 time (e.g. '2024-05-01T12:00:00Z') or Unix seconds"
_RANGE_EXPECTED = (f"a time from {EARLIEST_TIME:%Y-%m-%dT%H:%M:%SZ} "
                   f"to {LATEST_TIME:%Y-%m-%dT%H:%M:%SZ}")
_ENVELOPE_FIELDS = frozenset({"schema_version", "type", "event_time", "key", "idempotency_key"})


class EventError(ValueError):
    """An event that cannot be decoded: bad bytes, bad JSON or a schema violation."""


def _expected(text: str) -> PydanticCustomError:
    """A field error whose message is ``expected <text>``."""
    return PydanticCustomError("expected", "expected {expected}", {"expected": text})


def _field_error(field: str, value: object, expected: str) -> PydanticCustomError:
    """A cross-field error reported against ``field`` (model validators have no location)."""
    return PydanticCustomError(
        "field_invalid",
        "{field} = {value}: expected {expected}",
        {"field": field, "value": value, "expected": expected},
    )


def _supported_version(value: object) -> object:
    if isinstance(value, bool) or value != SCHEMA_VERSION:
        raise _expected(
            f"{SCHEMA_VERSION} (this reader supports schema version {SCHEMA_VERSION} only)"
        )
    return value


def _parse_time(value: object) -> object:
    """Accept aware datetimes, ISO-8601 strings with an offset, and finite Unix seconds."""
    try:
        if isinstance(value, str):
            value = datetime.fromisoformat(value)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            value = datetime.fromtimestamp(value, UTC)
    except (ValueError, OverflowError, OSError):
        raise _expected(_TIME_EXPECTED) from None
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise _expected(_TIME_EXPECTED)
    return value


def _as_utc(value: datetime) -> datetime:
    """The time in UTC, once checked to lie in the accepted range."""
    try:
        value = value.astimezone(UTC)
    except OverflowError:  # a year-1 or year-9999 time with an offset
        raise _expected(_RANGE_EXPECTED) from None
    if not EARLIEST_TIME <= value <= LATEST_TIME:
        raise _expected(_RANGE_EXPECTED)
    return value


def _market_key(value: str) -> str:
    if re.fullmatch(MARKET_KEY_PATTERN, value) is None:
        raise _expected("a market key 'cloud/region/zone/instance_type' of four non-empty parts")
    return value


UtcTime = Annotated[
    AwareDatetime,
    BeforeValidator(_parse_time),
    AfterValidator(_as_utc),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "format": "date-time",
                 "description": f"ISO-8601 with an offset, "
                 f"{_RANGE_EXPECTED.removeprefix('a time ')}"},
                {"type": "number", "description": "Unix seconds",
                 "minimum": EARLIEST_TIME.timestamp(), "maximum": LATEST_TIME.timestamp()},
            ],
            "description": f"UTC time: ISO-8601 with an offset, or Unix seconds; "
            f"{_RANGE_EXPECTED.removeprefix('a time ')}",
        },
        mode="validation",
    ),
]
MarketKey = Annotated[
    str,
    Field(max_length=256),
    AfterValidator(_market_key),
    Field(
        description="Market key 'cloud/region/zone/instance_type'",
        json_schema_extra={"pattern": MARKET_KEY_PATTERN},
    ),
]
JobId = Annotated[str, Field(min_length=1, max_length=256, description="Job identifier")]
Text = Annotated[str, Field(max_length=500)]
Name = Annotated[str, Field(min_length=1, max_length=256)]
Price = Annotated[StrictFloat, Field(ge=0, le=MAX_PRICE)]
TickPrice = Annotated[StrictFloat, Field(ge=MIN_PRICE, le=MAX_PRICE)]
Work = Annotated[StrictFloat, Field(ge=0, le=MAX_WORKLOAD)]
PositiveWork = Annotated[StrictFloat, Field(gt=0, le=MAX_WORKLOAD)]
Usd = Annotated[StrictFloat, Field(ge=-MAX_USD, le=MAX_USD)]
Amount = Annotated[StrictFloat, Field(ge=-MAX_AMOUNT, le=MAX_AMOUNT)]
NonNegativeAmount = Annotated[StrictFloat, Field(ge=0, le=MAX_AMOUNT)]
SlotSeconds = Annotated[StrictFloat, Field(ge=MIN_SLOT_SECONDS, le=MAX_SLOT_SECONDS)]
Instances = Annotated[StrictInt, Field(ge=0, le=MAX_INSTANCES)]
Available = Annotated[StrictInt, Field(ge=0, le=MAX_AVAILABLE)]
Epoch = Annotated[StrictInt, Field(ge=0, le=MAX_EPOCH)]
Count = Annotated[StrictInt, Field(ge=0, le=2**63 - 1)]


def _require_type(schema: dict[str, Any]) -> None:
    """On the wire ``type`` is required even though the classes default it."""
    schema["required"] = sorted({*schema.get("required", []), "type"})


def _canonical_json(data: object) -> bytes:
    return json.dumps(
        data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode()


def _iso(time: datetime) -> str:
    return time.isoformat().replace("+00:00", "Z")


class Envelope(BaseModel):
    """Fields every event carries. Subclasses fix ``type`` and name their key field."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, allow_inf_nan=False, json_schema_extra=_require_type
    )

    key_field: ClassVar[str]

    schema_version: Annotated[Literal[1], BeforeValidator(_supported_version)] = SCHEMA_VERSION
    type: str
    event_time: UtcTime = Field(description="When the event happened (event time, UTC)")
    key: str = Field("", max_length=256,
                     description="Kafka message key; derived from the event when empty")
    idempotency_key: str = Field(
        "", max_length=1024, description="Deduplication key; derived from the content when empty"
    )

    @model_validator(mode="after")
    def _derive_keys(self) -> Self:
        key = str(getattr(self, self.key_field))
        if self.key and self.key != key:
            raise _field_error("key", self.key, f"{key!r}, the event's {self.key_field}")
        object.__setattr__(self, "key", key)
        if not self.idempotency_key:
            object.__setattr__(self, "idempotency_key", self.default_idempotency_key())
        return self

    def default_idempotency_key(self) -> str:
        """``type:key:event_time:hash`` where the hash covers the event's own fields."""
        own = self.model_dump(mode="json", exclude=set(_ENVELOPE_FIELDS))
        digest = hashlib.sha256(_canonical_json(own)).hexdigest()[:16]
        return f"{self.type}:{self.key}:{_iso(self.event_time)}:{digest}"


class PriceTick(Envelope):
    """A market's spot price from ``event_time`` on (and its on-demand price, if known)."""

    key_field: ClassVar[str] = "market"

    type: Literal["price_tick"] = "price_tick"
    market: MarketKey
    spot_price: TickPrice = Field(description="USD per instance-hour")
    on_demand_price: TickPrice | None = Field(None, description="USD per instance-hour")


AvailabilityReason = Literal["obtained", "refused", "preempted", "probe"]


class AvailabilityTick(Envelope):
    """How many spot instances of a market can be held from ``event_time`` on."""

    key_field: ClassVar[str] = "market"

    type: Literal["availability_tick"] = "availability_tick"
    market: MarketKey
    available: Available
    reason: AvailabilityReason | None = None


class JobSubmitted(Envelope):
    """A new job; every field of :class:`solver.job.Job`, with times as UTC datetimes."""

    key_field: ClassVar[str] = "job_id"

    type: Literal["job_submitted"] = "job_submitted"
    job_id: JobId
    workload: PositiveWork = Field(description="Work units, e.g. reference GPU-hours")
    release: UtcTime
    soft_deadline: UtcTime
    hard_deadline: UtcTime
    n_min: Annotated[StrictInt, Field(ge=1, le=MAX_INSTANCES)] = 1
    n_max: Annotated[StrictInt, Field(ge=1, le=MAX_INSTANCES)] = 1
    alpha: Annotated[StrictFloat, Field(ge=0, le=MAX_THROUGHPUT)] = Field(
        1.0, description="Throughput per instance (work units per hour)")
    beta: Annotated[StrictFloat, Field(ge=-MAX_THROUGHPUT, le=MAX_THROUGHPUT)] = Field(
        0.0, description="Throughput offset (work units per hour); throughput at n_min "
        f"alpha * n_min + beta must be at least {MIN_THROUGHPUT:g}")
    value: Usd = Field(0.0, description="USD value of finishing by the soft deadline")
    value_at_hard_deadline: Usd = Field(0.0, description="USD value at the hard deadline")
    miss_penalty: Annotated[StrictFloat, Field(ge=0, le=MAX_USD)] = Field(
        0.0, description="USD lost when the hard deadline is missed")
    restart_overhead: Annotated[StrictFloat, Field(ge=0, le=MAX_OVERHEAD_SECONDS)] = Field(
        0.0, description="Seconds lost per (re)configuration")
    allowed_markets: Annotated[
        tuple[MarketKey, ...], Field(min_length=1, max_length=MAX_ITEMS)] | None = None
    allow_spot: StrictBool = True

    @model_validator(mode="after")
    def _check_job(self) -> Self:
        if self.soft_deadline <= self.release:
            raise _field_error(
                "soft_deadline", self.soft_deadline, f"> release ({_iso(self.release)})"
            )
        if self.hard_deadline < self.soft_deadline:
            raise _field_error(
                "hard_deadline",
                self.hard_deadline,
                f">= soft_deadline ({_iso(self.soft_deadline)})",
            )
        if self.n_max < self.n_min:
            raise _field_error("n_max", self.n_max, f">= n_min ({self.n_min})")
        if self.alpha * self.n_min + self.beta < MIN_THROUGHPUT:
            raise _field_error(
                "beta",
                self.beta,
                f"alpha * n_min + beta >= {MIN_THROUGHPUT:g} (alpha={self.alpha}, "
                f"n_min={self.n_min})",
            )
        if self.value_at_hard_deadline > self.value:
            raise _field_error(
                "value_at_hard_deadline", self.value_at_hard_deadline, f"<= value ({self.value})"
            )
        return self

    def to_job(self) -> Job:
        """The solver's job, with times in Unix seconds."""
        return Job(
            id=self.job_id,
            workload=self.workload,
            release=self.release.timestamp(),
            soft_deadline=self.soft_deadline.timestamp(),
            hard_deadline=self.hard_deadline.timestamp(),
            n_min=self.n_min,
            n_max=self.n_max,
            alpha=self.alpha,
            beta=self.beta,
            value=self.value,
            value_at_hard_deadline=self.value_at_hard_deadline,
            miss_penalty=self.miss_penalty,
            restart_overhead=self.restart_overhead,
            allowed_markets=self.allowed_markets,
            allow_spot=self.allow_spot,
        )

    @classmethod
    def from_job(cls, job: Job, event_time: datetime | float) -> JobSubmitted:
        """The event announcing ``job`` (times rounded to microseconds)."""
        return cls.model_validate(
            {
                "event_time": event_time,
                "job_id": job.id,
                "workload": job.workload,
                "release": job.release,
                "soft_deadline": job.soft_deadline,
                "hard_deadline": job.hard_deadline,
                "n_min": job.n_min,
                "n_max": job.n_max,
                "alpha": job.alpha,
                "beta": job.beta,
                "value": job.value,
                "value_at_hard_deadline": job.value_at_hard_deadline,
                "miss_penalty": job.miss_penalty,
                "restart_overhead": job.restart_overhead,
                "allowed_markets": job.allowed_markets,
                "allow_spot": job.allow_spot,
            }
        )


class JobProgress(Envelope):
    """Cumulative work done by a job, optionally with a re-estimate of the work remaining."""

    key_field: ClassVar[str] = "job_id"

    type: Literal["job_progress"] = "job_progress"
    job_id: JobId
    work_done: Work = Field(description="Cumulative work units done")
    remaining_work: PositiveWork | None = Field(None, description="Re-estimated work units left")


class JobCancelled(Envelope):
    """A job withdrawn by its owner."""

    key_field: ClassVar[str] = "job_id"

    type: Literal["job_cancelled"] = "job_cancelled"
    job_id: JobId
    reason: Text | None = None


class JobFinished(Envelope):
    """A job reported complete by a connector or cloud."""

    key_field: ClassVar[str] = "job_id"

    type: Literal["job_finished"] = "job_finished"
    job_id: JobId


class ProvisioningDecision(Envelope):
    """What a job runs in one slot, and why: the policy, the forecast and slack it saw."""

    key_field: ClassVar[str] = "job_id"

    type: Literal["provisioning_decision"] = "provisioning_decision"
    job_id: JobId
    epoch: Epoch = Field(description="Slot index of the decision")
    slot_start: UtcTime
    slot_seconds: SlotSeconds
    market: MarketKey
    spot: Instances = 0
    on_demand: Instances = 0
    revision: Annotated[StrictInt, Field(ge=0, le=1_000_000)] = Field(
        0, description="Bumped when a decision for the same slot is revised")
    policy: Name
    expected_cost_usd: NonNegativeAmount = Field(
        description="Cost the policy expects for the slot")
    slack_seconds: Annotated[StrictFloat, Field(ge=-MAX_SECONDS, le=MAX_SECONDS)] = Field(
        description="Time to spare before the hard deadline")
    forecast: (
        Annotated[
            dict[Annotated[str, Field(min_length=1, max_length=64)], Amount],
            Field(max_length=16),
        ]
        | None
    ) = Field(None, description="Forecasts seen, e.g. expected spot price, availability odds")
    reason: Text = ""

    @model_validator(mode="after")
    def _check_idempotency_key(self) -> Self:
        expected = self.default_idempotency_key()
        if self.idempotency_key not in ("", expected):
            raise _field_error("idempotency_key", self.idempotency_key, repr(expected))
        return self

    def default_idempotency_key(self) -> str:
        """``job_id:epoch:revision``: a connector applies each decision once."""
        return f"{self.job_id}:{self.epoch}:{self.revision}"


class MarketBoundary(Envelope):
    """Internal: a market passed a slot boundary (``event_time``): the closed slot's values
    (absent when ticks did not cover it) and the values in force at the boundary."""

    key_field: ClassVar[str] = "market"

    type: Literal["market_boundary"] = "market_boundary"
    market: MarketKey
    slot_seconds: SlotSeconds
    price: Price | None = Field(None, description="Time-weighted mean over the slot")
    availability: Available | None = Field(None, description="Smallest count during the slot")
    price_now: Price
    availability_now: Available


class MarketForecast(Envelope):
    """A market's forecast made at boundary ``event_time`` for the next slots, with the
    forecaster's running errors (``null`` where nothing is known yet)."""

    key_field: ClassVar[str] = "market"

    type: Literal["market_forecast"] = "market_forecast"
    market: MarketKey
    slot_seconds: SlotSeconds
    price: tuple[Price | None, ...] = Field(
        max_length=MAX_ITEMS, description="Slot-mean spot USD/h ahead")
    availability: tuple[Annotated[StrictFloat, Field(ge=0, le=1)] | None, ...] = Field(
        max_length=MAX_ITEMS, description="Probability of spot capacity in each slot ahead")
    price_error: NonNegativeAmount | None = Field(None, description="Running price MAPE, percent")
    availability_error: NonNegativeAmount | None = Field(None, description="Running Brier score")


class EpochClosed(Envelope):
    """Internal: every market passed boundary ``event_time``; carries, in catalogue order, the
    closed slot's values (absent at the first epoch) and the values in force at the boundary."""

    key_field: ClassVar[str] = "epoch"

    type: Literal["epoch_closed"] = "epoch_closed"
    epoch: Epoch = Field(description="Index of the slot that starts at this boundary")
    slot_seconds: SlotSeconds
    markets: Annotated[tuple[MarketKey, ...], Field(min_length=1, max_length=MAX_ITEMS)]
    price: tuple[Price, ...] | None = Field(None, max_length=MAX_ITEMS)
    availability: tuple[Available, ...] | None = Field(None, max_length=MAX_ITEMS)
    price_now: tuple[Price, ...] = Field(max_length=MAX_ITEMS)
    availability_now: tuple[Available, ...] = Field(max_length=MAX_ITEMS)

    @model_validator(mode="after")
    def _same_lengths(self) -> Self:
        n = len(self.markets)
        for name in ("price", "availability", "price_now", "availability_now"):
            values = getattr(self, name)
            if values is not None and len(values) != n:
                raise _field_error(name, list(values), f"{n} values, one per market")
        return self


class DeadLetter(Envelope):
    """A message that could not be processed, kept with where it came from and why.

    ``raw`` holds the original bytes, as text when they are UTF-8 and base64 otherwise; of a
    message longer than :data:`DEAD_LETTER_RAW_BYTES` only the first that many bytes
    (``raw_truncated``; the whole message stays at ``source_topic``, ``partition``,
    ``offset``).
    """

    key_field: ClassVar[str] = "source_topic"

    type: Literal["dead_letter"] = "dead_letter"
    raw: str = Field(description="The original message, as text or base64")
    raw_encoding: Literal["text", "base64"] = "text"
    raw_size: Count | None = Field(None, description="Length of the original message, bytes")
    raw_truncated: StrictBool = Field(
        False, description="raw keeps only the first bytes of a longer message")
    source_topic: Name
    source_key: str | None = Field(
        None, max_length=1024,
        description="The original message key (UTF-8; other bytes as \\xNN escapes)")
    partition: Annotated[StrictInt, Field(ge=0, le=2**31 - 1)] | None = None
    offset: Count | None = None
    reason: Text
    error_type: Name

    @model_validator(mode="after")
    def _check_raw(self) -> Self:
        if self.raw_encoding == "base64":
            try:
                base64.b64decode(self.raw, validate=True)
            except binascii.Error as exc:
                raise _field_error(
                    "raw", self.raw, "base64 text (raw_encoding is 'base64')"
                ) from exc
        return self

    @classmethod
    def from_raw(
        cls,
        raw: bytes,
        error: Exception,
        *,
        source_topic: str,
        event_time: datetime | float,
        partition: int | None = None,
        offset: int | None = None,
        key: bytes | None = None,
    ) -> DeadLetter:
        """Wrap an unprocessable message: as text when it is UTF-8, otherwise base64.

        ``event_time`` (usually the message's Kafka timestamp, which any producer may set) is
        moved into the accepted range, so wrapping never fails.
        """
        kept = raw[:DEAD_LETTER_RAW_BYTES]
        try:
            text, encoding = kept.decode("utf-8"), "text"
        except UnicodeDecodeError:
            text, encoding = base64.b64encode(kept).decode("ascii"), "base64"
        return cls.model_validate(
            {
                "event_time": _clamped_time(event_time),
                "raw": text,
                "raw_encoding": encoding,
                "raw_size": len(raw),
                "raw_truncated": len(kept) < len(raw),
                "source_topic": source_topic[:256] or "?",
                "source_key": None if key is None
                else key[:256].decode("utf-8", "backslashreplace")[:1024],
                "partition": partition,
                "offset": offset,
                "reason": str(error)[:500],
                "error_type": type(error).__name__[:256],
            }
        )

    def original(self) -> bytes:
        """The original message bytes (their first bytes when ``raw_truncated``)."""
        if self.raw_encoding == "base64":
            return base64.b64decode(self.raw)
        return self.raw.encode("utf-8")


def _clamped_time(time: datetime | float) -> datetime:
    """``time`` (a datetime or Unix seconds) moved into the accepted event-time range."""
    if not isinstance(time, datetime):
        seconds = time if isinstance(time, int | float) and time == time else 0.0
        bounded = min(max(seconds, EARLIEST_TIME.timestamp()), LATEST_TIME.timestamp())
        return EARLIEST_TIME + timedelta(seconds=bounded - EARLIEST_TIME.timestamp())
    if time.tzinfo is None:
        time = time.replace(tzinfo=UTC)
    return min(max(time, EARLIEST_TIME), LATEST_TIME)


Event = Annotated[
    PriceTick
    | AvailabilityTick
    | JobSubmitted
    | JobProgress
    | JobCancelled
    | JobFinished
    | ProvisioningDecision
    | DeadLetter
    | MarketBoundary
    | MarketForecast
    | EpochClosed,
    Field(discriminator="type"),
]
"""Any event; ``type`` selects the class."""

EVENT_TYPES: dict[str, type[Envelope]] = {
    cls.model_fields["type"].default: cls
    for cls in (
        PriceTick,
        AvailabilityTick,
        JobSubmitted,
        JobProgress,
        JobCancelled,
        JobFinished,
        ProvisioningDecision,
        DeadLetter,
        MarketBoundary,
        MarketForecast,
        EpochClosed,
    )
}
"""Event classes by their ``type`` tag."""


class _Header(BaseModel):
    """The fields read before choosing the event class; errors are titled ``Event``."""

    model_config = ConfigDict(title="Event", extra="ignore")

    schema_version: Annotated[Literal[1], BeforeValidator(_supported_version)] = SCHEMA_VERSION
    type: str

    @field_validator("type", mode="before")
    @classmethod
    def _known_type(cls, value: object) -> object:
        if not isinstance(value, str) or value not in EVENT_TYPES:
            raise _expected("one of " + ", ".join(map(repr, EVENT_TYPES)))
        return value


def dump_event(event: Envelope) -> bytes:
    """Compact UTF-8 JSON with sorted keys: equal events give equal bytes."""
    return _canonical_json(event.model_dump(mode="json"))


def parse_event(raw: bytes | str) -> Event:
    """Decode one event from the wire; raise :class:`EventError` saying what is wrong."""
    data = _load_object(raw)
    try:
        header = _Header.model_validate(data)
        return EVENT_TYPES[header.type].model_validate(data)  # type: ignore[return-value]
    except ValidationError as exc:
        raise EventError(describe_validation_error(exc)) from exc


_TOO_DEEP = (f"event nests arrays or objects deeper than {MAX_NESTING} levels: expected a "
             "flat JSON object")


def _load_object(raw: bytes | str) -> dict[str, Any]:
    size = len(raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else bytes(raw))
    if size > MAX_EVENT_BYTES:
        raise EventError(f"event is {size:,} bytes: expected at most {MAX_EVENT_BYTES:,}")
    if isinstance(raw, bytes | bytearray | memoryview):
        try:
            raw = bytes(raw).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise EventError(
                f"event is not valid UTF-8 at byte {exc.start}: expected UTF-8 JSON"
            ) from exc
    try:
        data = json.loads(raw, object_pairs_hook=_unique_keys)
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
    if _depth(data) > MAX_NESTING:
        raise EventError(_TOO_DEEP)
    return data


def _depth(data: object) -> int:
    """Nesting depth of decoded JSON (a scalar is 0), walked without recursion."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        value, level = stack.pop()
        children = (value.values() if isinstance(value, dict)
                    else value if isinstance(value, list) else None)
        if children is None:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_NESTING:
            return deepest
        stack.extend((child, level + 1) for child in children)
    return deepest


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for name, value in pairs:
        if name in data:
            raise EventError(f"event field {name!r} appears twice: expected unique field names")
        data[name] = value
    return data


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
    text = _iso(value) if isinstance(value, datetime) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
