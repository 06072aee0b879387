"""The events of contract v2: every message on spotsched's Kafka topics.

An event is one JSON object. The envelope fields (:class:`Envelope`) sit beside the event's
own fields, and ``type`` says which event class it is::

    {"event_time": "2024-05-01T12:00:00Z", "idempotency_key": "...",
     "key": "aws/us-east-1/us-east-1a/p3.2xlarge", "market": "aws/us-east-1/us-east-1a/p3.2xlarge",
     "on_demand_price": null, "schema_version": 2, "spot_price": 0.91, "type": "price_tick"}

``key`` is derived from the event (the market key for market ticks, boundaries and forecasts,
the job id for job events and decisions, the epoch for epoch markers, the source topic for dead
letters) and is the Kafka message key. Times are UTC; the wire carries ISO-8601 (Unix seconds
are accepted on input) at microsecond resolution. Prices are USD per instance-hour. Each class
states, in its JSON Schema's description, the rules a schema cannot express (docs/contract.md
has them all, with the idempotency-key rule).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, ClassVar, Final, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    model_validator,
)

from streams.contract.fields import (
    EARLIEST_TIME,
    LATEST_TIME,
    MAX_CHECKPOINT_GB,
    MAX_INSTANCES,
    MAX_ITEMS,
    MAX_KEY_CHARS,
    MAX_MARKET_PATTERNS,
    MAX_OVERHEAD_SECONDS,
    MAX_SECONDS,
    MAX_THROUGHPUT,
    MAX_USD,
    MIN_THROUGHPUT,
    PLACE_PATTERN,
    REGION_PATTERN,
    Amount,
    Available,
    Count,
    Epoch,
    IdempotencyKey,
    Instances,
    Int,
    JobId,
    MarketKey,
    MarketPattern,
    Name,
    NonNegativeAmount,
    PositiveWork,
    Price,
    Probability,
    Seconds,
    SlotSeconds,
    Text,
    TickPrice,
    Usd,
    UtcTime,
    Work,
    field_error,
    iso,
)
from streams.contract.outlook import Outlook
from streams.contract.printable import printable

SCHEMA_VERSION: Final = 2
"""The schema version this code writes and reads."""
DEAD_LETTER_RAW_BYTES = 1 << 19
"""Original bytes a dead letter keeps (its base64 stays under Kafka's default message size)."""
DEAD_LETTER_KEY_BYTES = 1024
"""Original key bytes a dead letter keeps."""

ENVELOPE_FIELDS = frozenset({"schema_version", "type", "event_time", "key", "idempotency_key"})
ENVELOPE_RULES = (
    "key, when given, equals the event's key field, and so must the Kafka message key",
    "every time is a real calendar time from 2000-01-01T00:00:00Z to 2100-01-01T00:00:00Z "
    "once converted to UTC",
    "a message is at most 1 MiB of UTF-8 JSON, nests at most 6 levels and repeats no field",
)


def canonical_json(data: object) -> bytes:
    """Compact UTF-8 JSON with sorted keys: what idempotency digests and the wire are made of."""
    return json.dumps(
        data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode()


def _schema_extra(schema: dict[str, Any], cls: type[Envelope]) -> None:
    """On the wire ``type`` is required (the classes default it), and the description ends
    with the rules this schema cannot say."""
    schema["required"] = sorted({*schema.get("required", []), "type"})
    rules = (*ENVELOPE_RULES, *cls.RULES)
    schema["description"] = (schema.get("description", "").strip()
                             + "\n\nRules beyond this schema: "
                             + "; ".join(f"({n}) {rule}" for n, rule in enumerate(rules, 1))
                             + ".")
    schema.update(cls.SCHEMA)


class Envelope(BaseModel):
    """Fields every event carries. Subclasses fix ``type`` and name their key field."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, allow_inf_nan=False, json_schema_extra=_schema_extra
    )

    key_field: ClassVar[str]
    RULES: ClassVar[tuple[str, ...]] = ()
    """Rules of the class beyond what its JSON Schema says."""
    SCHEMA: ClassVar[dict[str, Any]] = {}
    """JSON Schema keywords stating what the field types alone do not."""
    ONE_PER_KEY_AND_TIME: ClassVar[bool] = False
    """There is one event of the class per key and event time, so its idempotency key needs
    no digest of its content."""

    schema_version: Literal[2] = SCHEMA_VERSION
    """``2.0`` reads as 2, as JSON Schema has it."""
    type: str
    event_time: UtcTime = Field(description="When the event happened (event time, UTC)")
    key: str = Field("", max_length=MAX_KEY_CHARS,
                     description="Kafka message key; derived from the event when empty")
    idempotency_key: IdempotencyKey = ""

    @model_validator(mode="after")
    def _derive_keys(self) -> Self:
        key = str(getattr(self, self.key_field))
        if self.key != key:
            if self.key:
                raise field_error("key", self.key, f"{key!r}, the event's {self.key_field}")
            object.__setattr__(self, "key", key)
        if not self.idempotency_key:
            object.__setattr__(self, "idempotency_key", self.default_idempotency_key())
        return self

    def default_idempotency_key(self) -> str:
        """``type:key:event_time:digest``: the digest is the first 16 hex digits of the SHA-256
        of the canonical JSON of the event's own fields (all but the envelope's);
        ``type:key:event_time`` for a class with one event per key and time."""
        if self.ONE_PER_KEY_AND_TIME:
            return f"{self.type}:{self.key}:{iso(self.event_time)}"
        own = self.model_dump(mode="json", exclude=set(ENVELOPE_FIELDS))
        digest = hashlib.sha256(canonical_json(own)).hexdigest()[:16]
        return f"{self.type}:{self.key}:{iso(self.event_time)}:{digest}"


class PriceTick(Envelope):
    """A market's spot price from ``event_time`` on (and its on-demand price, if known)."""

    key_field: ClassVar[str] = "market"

    type: Literal["price_tick"] = "price_tick"
    market: MarketKey
    spot_price: TickPrice = Field(description="USD per instance-hour")
    on_demand_price: TickPrice | None = Field(None, description="USD per instance-hour")


AvailabilityReason = Literal["obtained", "refused", "preempted", "probe"]
MoveLocality = Literal["same-region", "cross-region", "cross-continent", "cross-cloud"]
"""How far a checkpoint moves (:data:`solver.migration.MOVING`)."""


class AvailabilityTick(Envelope):
    """How many spot instances of a market can be held from ``event_time`` on."""

    key_field: ClassVar[str] = "market"

    type: Literal["availability_tick"] = "availability_tick"
    market: MarketKey
    available: Available
    reason: AvailabilityReason | None = None


JOB_FIELDS = ("id", "workload", "release", "soft_deadline", "hard_deadline", "n_min", "n_max",
              "alpha", "beta", "value", "value_at_hard_deadline", "miss_penalty",
              "restart_overhead", "allowed_markets", "allow_spot", "checkpoint_gb",
              "home_region", "max_hourly_usd", "market_patterns")
"""A job's fields as the solver's ``Job`` names them (times in Unix seconds)."""


class JobSubmitted(Envelope):
    """A new job: every field of the solver's job, with times as UTC times. The constraints
    and the checkpoint (``checkpoint_gb``, ``home_region``, ``max_hourly_usd``,
    ``market_patterns``) are optional: a message without them reads as a job without them."""

    key_field: ClassVar[str] = "job_id"
    RULES: ClassVar[tuple[str, ...]] = (
        "release < soft_deadline <= hard_deadline",
        "n_min <= n_max",
        f"alpha * n_min + beta >= {MIN_THROUGHPUT:g}",
        "value_at_hard_deadline <= value",
        "every market pattern matches a market of the scheduler's catalogue",
    )

    type: Literal["job_submitted"] = "job_submitted"
    job_id: JobId
    workload: PositiveWork = Field(description="Work units, e.g. reference GPU-hours")
    release: UtcTime
    soft_deadline: UtcTime
    hard_deadline: UtcTime
    n_min: Annotated[Int, Field(ge=1, le=MAX_INSTANCES)] = 1
    n_max: Annotated[Int, Field(ge=1, le=MAX_INSTANCES)] = 1
    alpha: Annotated[StrictFloat, Field(ge=0, le=MAX_THROUGHPUT)] = Field(
        1.0, description="Throughput per instance (work units per hour)")
    beta: Annotated[StrictFloat, Field(ge=-MAX_THROUGHPUT, le=MAX_THROUGHPUT)] = Field(
        0.0, description="Throughput offset (work units per hour)")
    value: Usd = Field(0.0, description="USD value of finishing by the soft deadline")
    value_at_hard_deadline: Usd = Field(0.0, description="USD value at the hard deadline")
    miss_penalty: Annotated[StrictFloat, Field(ge=0, le=MAX_USD)] = Field(
        0.0, description="USD lost when the hard deadline is missed")
    restart_overhead: Annotated[StrictFloat, Field(ge=0, le=MAX_OVERHEAD_SECONDS)] = Field(
        0.0, description="Seconds lost per (re)configuration")
    allowed_markets: Annotated[
        tuple[MarketKey, ...], Field(min_length=1, max_length=MAX_ITEMS)] | None = None
    allow_spot: StrictBool = True
    checkpoint_gb: Annotated[StrictFloat, Field(ge=0, le=MAX_CHECKPOINT_GB)] = Field(
        0.0, description="GB of the job's checkpoint, moved when the job changes market")
    home_region: Annotated[str, Field(max_length=256, pattern=REGION_PATTERN)] | None = Field(
        None, description="'cloud/region' where the job's data and first checkpoint live")
    max_hourly_usd: Annotated[StrictFloat, Field(gt=0, le=MAX_USD)] | None = Field(
        None, description="Cap on the hourly bill of any allocation, USD per hour")
    market_patterns: Annotated[
        tuple[MarketPattern, ...], Field(min_length=1, max_length=MAX_MARKET_PATTERNS)
    ] | None = Field(
        None, description="fnmatch patterns on market keys the job may use (e.g. gcp/us-*)")

    @model_validator(mode="after")
    def _check_job(self) -> Self:
        if self.soft_deadline <= self.release:
            raise field_error(
                "soft_deadline", self.soft_deadline, f"> release ({iso(self.release)})")
        if self.hard_deadline < self.soft_deadline:
            raise field_error(
                "hard_deadline", self.hard_deadline,
                f">= soft_deadline ({iso(self.soft_deadline)})")
        if self.n_max < self.n_min:
            raise field_error("n_max", self.n_max, f">= n_min ({self.n_min})")
        if self.alpha * self.n_min + self.beta < MIN_THROUGHPUT:
            raise field_error(
                "beta", self.beta,
                f"alpha * n_min + beta >= {MIN_THROUGHPUT:g} (alpha={self.alpha}, "
                f"n_min={self.n_min})")
        if self.value_at_hard_deadline > self.value:
            raise field_error(
                "value_at_hard_deadline", self.value_at_hard_deadline, f"<= value ({self.value})")
        return self

    def job_fields(self) -> dict[str, Any]:
        """The job's fields as the solver's ``Job`` takes them (:data:`JOB_FIELDS`), with
        times in Unix seconds."""
        fields = self.model_dump(include=set(JOB_FIELDS) - {"id"})
        for name in ("release", "soft_deadline", "hard_deadline"):
            fields[name] = fields[name].timestamp()
        return {"id": self.job_id, **fields}

    @classmethod
    def from_job_fields(cls, fields: dict[str, Any], event_time: datetime | float
                        ) -> JobSubmitted:
        """The event announcing a job given by its :data:`JOB_FIELDS` (times rounded to
        microseconds)."""
        own = {name: fields[name] for name in JOB_FIELDS if name != "id"}
        return cls.model_validate({"event_time": event_time, "job_id": fields["id"], **own})


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


JobEvent = JobSubmitted | JobProgress | JobCancelled | JobFinished
"""What the owners of jobs and the connectors publish on the job-events topic."""

Action = Literal["run", "idle", "release"]
"""``run``: the instances of the decision; ``idle``: none, the job stays; ``release``: none,
the job has left the scheduler (``release_cause`` says why)."""
ReleaseCause = Literal["finished", "cancelled", "deadline_missed", "failed"]
"""Why a job left: finished by its hard deadline, cancelled by its owner, the hard deadline
passed before it finished (it may have finished after it), or failed (it could not be
decided; ``reason`` says why)."""

_IF_ACTION = {"if": {"required": ["action"], "properties": {"action": {"const": "release"}}}}
_NONE = {"spot": {"const": 0}, "on_demand": {"const": 0}}


class MarketView(BaseModel):
    """What the policy saw of the decision's market at the boundary, the forecast of that
    market for the decided slot that it planned on, and the move of the job's checkpoint the
    decision makes (``move_locality`` null: none)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    spot_price_now: Price = Field(description="Spot price in force at the boundary, USD/h")
    spot_available_now: Available = Field(description="Spot instances obtainable at the boundary")
    on_demand_price: Price = Field(description="On-demand price of the market, USD/h")
    price_forecast: Amount | None = Field(
        None, description="Median forecast of the slot's mean spot price, USD/h (null: unknown)")
    capacity_probability: Probability | None = Field(
        None, description="Forecast probability of spot capacity for the whole slot (null: "
        "unknown)")
    spot_denied: StrictBool | None = Field(
        None, description="True when the market denied spot (refused or lost it) since it last "
        "held spot through a whole slot (null: unknown)")
    move_from: Annotated[str, Field(max_length=256, pattern=PLACE_PATTERN)] | None = Field(
        None, description="Where the checkpoint moves from, 'cloud/region[/zone]' (null: no "
        "move)")
    move_locality: MoveLocality | None = Field(
        None, description="How far the checkpoint moves (null: no move)")
    move_egress_usd: NonNegativeAmount | None = Field(
        None, description="Egress billed for the move, USD, in expected_cost_usd")
    move_transfer_seconds: Annotated[StrictFloat, Field(ge=0, le=MAX_SECONDS)] | None = Field(
        None, description="Transfer time the move adds to the restart overhead, seconds")


class ProvisioningDecision(Envelope):
    """What a job runs in one slot, and why: the policy, what it saw and the forecast it used,
    the cost it expects and the slack left."""

    key_field: ClassVar[str] = "job_id"
    RULES: ClassVar[tuple[str, ...]] = (
        "idempotency_key is always '{job_id}:{epoch}:{revision}'",
    )
    SCHEMA: ClassVar[dict[str, Any]] = {"allOf": [
        {**_IF_ACTION, "then": {"required": ["release_cause"], "properties": {
            "release_cause": {"type": "string"}, **_NONE}},
         "else": {"properties": {"release_cause": {"const": None}}}},
        {"if": {"required": ["action"], "properties": {"action": {"const": "idle"}}},
         "then": {"properties": _NONE}},
        {"if": {"required": ["action"], "properties": {"action": {"const": "run"}}},
         "then": {"anyOf": [{"required": ["spot"], "properties": {"spot": {"minimum": 1}}},
                            {"required": ["on_demand"],
                             "properties": {"on_demand": {"minimum": 1}}}]}},
    ]}

    type: Literal["provisioning_decision"] = "provisioning_decision"
    job_id: JobId
    epoch: Epoch = Field(description="Slot index of the decision")
    slot_start: UtcTime
    slot_seconds: SlotSeconds
    market: MarketKey
    spot: Instances = 0
    on_demand: Instances = 0
    revision: Annotated[Int, Field(ge=0, le=1_000_000)] = Field(
        0, description="Bumped when a decision for the same slot is revised")
    action: Action = Field(description="run (spot + on_demand >= 1), idle (0) or release (0)")
    release_cause: ReleaseCause | None = Field(
        None, description="Why the job left; set exactly when action is release")
    policy: Name
    planner: Name | None = Field(
        None, description="The planner that decided: program, window or rule for a policy made "
        "of planners, else the policy's name (null on release, and in messages older than the "
        "field)")
    expected_cost_usd: NonNegativeAmount = Field(
        description="Cost the policy expects for the slot")
    slack_seconds: Seconds = Field(description="Time to spare before the hard deadline")
    market_view: MarketView | None = Field(
        None, description="What the policy saw of the market and the forecast it used (null "
        "on release)")
    reason: Text = Field("", description="For people: what the decision does, or why the job "
                         "failed")

    @model_validator(mode="after")
    def _check(self) -> Self:
        total = self.spot + self.on_demand
        if (self.action == "release") != (self.release_cause is not None):
            raise field_error("release_cause", self.release_cause,
                              "a cause exactly when action is 'release'")
        if (self.action == "run") != (total > 0):
            raise field_error("action", self.action,
                              f"{'run' if total else 'idle or release'} for spot="
                              f"{self.spot} on_demand={self.on_demand}")
        key = self.default_idempotency_key()
        if self.idempotency_key not in ("", key):
            raise field_error("idempotency_key", self.idempotency_key, repr(key))
        return self

    def default_idempotency_key(self) -> str:
        """``job_id:epoch:revision``: a connector applies each decision once."""
        return f"{self.job_id}:{self.epoch}:{self.revision}"


class MarketBoundary(Envelope):
    """Internal: a market passed a slot boundary (``event_time``): the closed slot's values
    (absent when ticks did not cover it) and the values in force at the boundary."""

    key_field: ClassVar[str] = "market"
    ONE_PER_KEY_AND_TIME: ClassVar[bool] = True

    type: Literal["market_boundary"] = "market_boundary"
    market: MarketKey
    slot_seconds: SlotSeconds
    price: Price | None = Field(None, description="Time-weighted mean over the slot")
    availability: Available | None = Field(None, description="Smallest count during the slot")
    price_now: Price
    availability_now: Available


class PublishedForecast(Envelope):
    """A market's forecast made at boundary ``event_time`` from the slots before it: the
    outlook every scheduler plans on, a summary of it and the forecaster's running errors.

    The market stage publishes it on the forecasts topic and, through the coordinator, on
    every job-events partition before the epoch marker of the same boundary."""

    key_field: ClassVar[str] = "market"
    ONE_PER_KEY_AND_TIME: ClassVar[bool] = True

    type: Literal["market_forecast"] = "market_forecast"
    market: MarketKey
    slot_seconds: SlotSeconds
    price: tuple[Amount | None, ...] = Field(
        max_length=MAX_ITEMS, description="Median slot-mean spot USD/h, from the slot starting "
        "at event_time on")
    availability: tuple[Probability | None, ...] = Field(
        max_length=MAX_ITEMS, description="Probability of spot capacity in each of those slots")
    price_error: NonNegativeAmount | None = Field(None, description="Running price MAPE, percent")
    availability_error: NonNegativeAmount | None = Field(None, description="Running Brier score")
    outlook: Outlook | None = Field(
        None, description="The whole outlook (null: the forecast is its summary alone)")


class EpochClosed(Envelope):
    """Internal: every market passed boundary ``event_time``; carries, in catalogue order, the
    closed slot's values (absent at the first epoch) and the values in force at the boundary.

    The coordinator writes it into every job-events partition, right after the forecasts of
    the same boundary."""

    key_field: ClassVar[str] = "epoch"
    ONE_PER_KEY_AND_TIME: ClassVar[bool] = True
    RULES: ClassVar[tuple[str, ...]] = (
        "price, availability, price_now and availability_now hold one value per market",
    )

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
                raise field_error(name, list(values), f"{n} values, one per market")
        return self


Encoding = Literal["text", "base64"]


def _as_text(data: bytes) -> tuple[str, Encoding]:
    try:
        return data.decode("utf-8"), "text"
    except UnicodeDecodeError:
        return base64.b64encode(data).decode("ascii"), "base64"


def _decoded(text: str, encoding: Encoding) -> bytes:
    return base64.b64decode(text) if encoding == "base64" else text.encode("utf-8")


class DeadLetter(Envelope):
    """A message that could not be processed, kept with where it came from and why.

    ``raw`` holds the original value, as text when it is UTF-8 and base64 otherwise, ``null``
    when the message had none (a tombstone; ``""`` is an empty value); of a value longer than
    :data:`DEAD_LETTER_RAW_BYTES` only the first that many bytes (``raw_truncated``; the whole
    message stays at ``source_topic``, ``partition``, ``offset``). ``source_key`` is the
    original key the same way (``null``: no key).
    """

    key_field: ClassVar[str] = "source_topic"
    RULES: ClassVar[tuple[str, ...]] = (
        "raw and source_key are valid base64 where their encoding says base64",
    )

    type: Literal["dead_letter"] = "dead_letter"
    raw: str | None = Field(description="The original value, as text or base64; null for none")
    raw_encoding: Encoding = "text"
    raw_size: Count | None = Field(None, description="Length of the original value, bytes")
    raw_truncated: StrictBool = Field(
        False, description="raw keeps only the first bytes of a longer value")
    source_topic: Name
    source_key: str | None = Field(
        None, max_length=2048, description="The original key, as text or base64; null for none")
    source_key_encoding: Encoding = "text"
    source_key_truncated: StrictBool = Field(
        False, description=f"source_key keeps only the first {DEAD_LETTER_KEY_BYTES} bytes")
    partition: Annotated[Int, Field(ge=0, le=2**31 - 1)] | None = None
    offset: Count | None = None
    reason: Text
    error_type: Name

    @model_validator(mode="after")
    def _check_base64(self) -> Self:
        for field in ("raw", "source_key"):
            text = getattr(self, field)
            if text is not None and getattr(self, f"{field}_encoding") == "base64":
                try:
                    base64.b64decode(text, validate=True)
                except binascii.Error as exc:
                    raise field_error(field, text, f"base64 text ({field}_encoding is "
                                      "'base64')") from exc
        return self

    @classmethod
    def from_raw(
        cls,
        raw: bytes | None,
        error: Exception,
        *,
        source_topic: str,
        event_time: datetime | float,
        partition: int | None = None,
        offset: int | None = None,
        key: bytes | None = None,
    ) -> DeadLetter:
        """Wrap an unprocessable message (its value and key, either possibly absent).

        ``event_time`` (usually the message's Kafka timestamp, which any producer may set) is
        moved into the accepted range, so wrapping never fails; the reason is the error's
        message with what is not printable escaped.
        """
        value = None if raw is None else _as_text(raw[:DEAD_LETTER_RAW_BYTES])
        kept_key = None if key is None else _as_text(key[:DEAD_LETTER_KEY_BYTES])
        return cls.model_validate({
            "event_time": _clamped_time(event_time),
            "raw": None if value is None else value[0],
            "raw_encoding": "text" if value is None else value[1],
            "raw_size": None if raw is None else len(raw),
            "raw_truncated": raw is not None and len(raw) > DEAD_LETTER_RAW_BYTES,
            "source_topic": source_topic[:256] or "?",
            "source_key": None if kept_key is None else kept_key[0],
            "source_key_encoding": "text" if kept_key is None else kept_key[1],
            "source_key_truncated": key is not None and len(key) > DEAD_LETTER_KEY_BYTES,
            "partition": partition,
            "offset": offset,
            "reason": printable(str(error))[:500],
            "error_type": type(error).__name__[:256],
        })

    def original(self) -> bytes | None:
        """The original value (its first bytes when ``raw_truncated``; ``None``: none)."""
        return None if self.raw is None else _decoded(self.raw, self.raw_encoding)

    def original_key(self) -> bytes | None:
        """The original key (``None``: none)."""
        return (None if self.source_key is None
                else _decoded(self.source_key, self.source_key_encoding))


def _clamped_time(time: datetime | float) -> datetime:
    """``time`` (a datetime or Unix seconds) moved into the accepted event-time range."""
    if not isinstance(time, datetime):
        seconds = time if isinstance(time, int | float) and time == time else 0.0
        bounded = min(max(seconds, EARLIEST_TIME.timestamp()), LATEST_TIME.timestamp())
        return EARLIEST_TIME + timedelta(seconds=bounded - EARLIEST_TIME.timestamp())
    if time.tzinfo is None:
        time = time.replace(tzinfo=UTC)
    return min(max(time, EARLIEST_TIME), LATEST_TIME)


EventModel = (
    PriceTick
    | AvailabilityTick
    | JobSubmitted
    | JobProgress
    | JobCancelled
    | JobFinished
    | ProvisioningDecision
    | DeadLetter
    | MarketBoundary
    | PublishedForecast
    | EpochClosed
)
"""The event classes."""

Event = Annotated[EventModel, Field(discriminator="type")]
"""Any event; ``type`` selects the class."""

EVENT_TYPES: dict[str, type[EventModel]] = {
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
        PublishedForecast,
        EpochClosed,
    )
}
"""Event classes by their ``type`` tag."""


def key_mismatch(event: Envelope, key: bytes | None) -> str | None:
    """Why a Kafka message key does not fit ``event`` (``None`` when it is the event's key):
    a job's events, a market's ticks must all land in the partition their key picks."""
    if key == event.key.encode():
        return None
    shown = "no key" if key is None else f"key={key.decode('utf-8', 'backslashreplace')!r}"
    return f"{shown}: expected the message key {event.key!r}, the event's {event.key_field}"
