import json
import math
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from solver.job import Job
from streams.contract import (
    EVENT_TYPES,
    SCHEMA_VERSION,
    AvailabilityTick,
    DeadLetter,
    Envelope,
    EventError,
    JobFinished,
    JobProgress,
    JobSubmitted,
    MarketView,
    PriceTick,
    ProvisioningDecision,
    describe_validation_error,
    dump_event,
    parse_event,
)
from streams.contract.fields import TIME_PATTERN
from streams.pipeline.trace_events import submission
from tests.streams.strategies import BY_TYPE, events, job_submitted

MARKET = "aws/us-east-1/us-east-1a/p3.2xlarge"
T0 = datetime(2024, 5, 1, 12, tzinfo=UTC)

PRICE = {"type": "price_tick", "event_time": "2024-05-01T12:00:00Z", "market": MARKET,
         "spot_price": 0.91}
JOB = {"type": "job_submitted", "event_time": "2024-05-01T12:00:00Z", "job_id": "llama-ft",
       "workload": 48.0, "release": "2024-05-01T12:00:00Z",
       "soft_deadline": "2024-05-03T12:00:00Z", "hard_deadline": "2024-05-04T00:00:00Z",
       "n_min": 1, "n_max": 4}


def wire(base: dict, **changes) -> str:
    return json.dumps({**base, **changes})


def rejection(raw: str | bytes) -> str:
    with pytest.raises(EventError) as info:
        parse_event(raw)
    return str(info.value)


# --- round trips -------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(BY_TYPE))
@given(data=st.data())
def test_every_event_type_round_trips_through_json(kind, data):
    event = data.draw(BY_TYPE[kind])
    raw = dump_event(event)
    again = parse_event(raw)
    assert again == event
    assert type(again) is EVENT_TYPES[kind]
    assert dump_event(again) == raw


@given(events)
def test_dump_is_compact_sorted_json(event):
    raw = dump_event(event)
    data = json.loads(raw)
    assert list(data) == sorted(data)
    assert raw == json.dumps(data, sort_keys=True, separators=(",", ":"),
                             ensure_ascii=False).encode()
    assert data["schema_version"] == SCHEMA_VERSION and data["type"] in EVENT_TYPES


def test_equal_events_give_equal_bytes_however_their_times_were_written():
    as_iso = parse_event(wire(PRICE, event_time="2024-05-01T14:00:00+02:00"))
    as_unix = parse_event(wire(PRICE, event_time=T0.timestamp()))
    built = PriceTick(event_time=T0, market=MARKET, spot_price=0.91)
    assert as_iso == as_unix == built
    assert dump_event(as_iso) == dump_event(as_unix) == dump_event(built)
    assert as_iso.event_time.tzinfo is UTC


def test_every_event_class_is_registered_under_its_type_tag():
    assert set(EVENT_TYPES) == set(BY_TYPE)
    assert all(issubclass(cls, Envelope) for cls in EVENT_TYPES.values())


# --- keys ----------------------------------------------------------------------------------


def test_key_is_the_market_or_job_id_and_idempotency_key_is_deterministic():
    tick = parse_event(wire(PRICE))
    assert tick.key == MARKET
    assert tick.idempotency_key.startswith(f"price_tick:{MARKET}:2024-05-01T12:00:00Z:")
    assert parse_event(wire(PRICE)).idempotency_key == tick.idempotency_key
    assert parse_event(wire(PRICE, spot_price=0.92)).idempotency_key != tick.idempotency_key
    assert JobProgress(event_time=T0, job_id="j", work_done=1.0).key == "j"
    finished = JobFinished(event_time=T0, job_id="j", idempotency_key="given")
    assert finished.idempotency_key == "given"


def test_a_key_that_contradicts_the_event_is_rejected():
    message = rejection(wire(PRICE, key="aws/other/zone/type"))
    assert message == (f"PriceTick.key = 'aws/other/zone/type': expected {MARKET!r}, "
                       "the event's market")


def decision(**changes) -> ProvisioningDecision:
    fields = dict(event_time=T0, job_id="llama-ft", epoch=7, slot_start=T0, slot_seconds=3600.0,
                  market=MARKET, spot=3, on_demand=1, revision=2, policy="chc(w=6,v=2)",
                  action="run", expected_cost_usd=5.2, slack_seconds=7200.0,
                  market_view=MarketView(spot_price_now=0.9, spot_available_now=4,
                                         on_demand_price=3.06, price_forecast=0.95,
                                         capacity_probability=0.8),
                  reason="cheap spot")
    return ProvisioningDecision(**{**fields, **changes})


def test_decision_idempotency_key_is_job_epoch_revision():
    assert decision().idempotency_key == "llama-ft:7:2"
    assert decision(idempotency_key="llama-ft:7:2").idempotency_key == "llama-ft:7:2"
    with pytest.raises(ValidationError) as info:
        decision(idempotency_key="other")
    assert describe_validation_error(info.value) == (
        "ProvisioningDecision.idempotency_key = 'other': expected 'llama-ft:7:2'"
    )


# --- jobs ----------------------------------------------------------------------------------


def test_to_job_equals_the_job_built_directly():
    event = JobSubmitted(
        event_time=T0, job_id="llama-ft", workload=48.0, release=T0,
        soft_deadline=T0 + timedelta(hours=48), hard_deadline=T0 + timedelta(hours=60),
        n_min=2, n_max=8, alpha=0.9, beta=0.2, value=500.0, value_at_hard_deadline=100.0,
        miss_penalty=50.0, restart_overhead=72.0, allowed_markets=[MARKET], allow_spot=False,
    )
    t0 = T0.timestamp()
    assert Job(**event.job_fields()) == Job(
        id="llama-ft", workload=48.0, release=t0, soft_deadline=t0 + 48 * 3600,
        hard_deadline=t0 + 60 * 3600, n_min=2, n_max=8, alpha=0.9, beta=0.2, value=500.0,
        value_at_hard_deadline=100.0, miss_penalty=50.0, restart_overhead=72.0,
        allowed_markets=(MARKET,), allow_spot=False,
    )


def test_a_job_carries_its_checkpoint_and_constraints_and_reads_without_them():
    event = JobSubmitted(
        event_time=T0, job_id="llama-ft", workload=48.0, release=T0,
        soft_deadline=T0 + timedelta(hours=48), hard_deadline=T0 + timedelta(hours=60),
        checkpoint_gb=50.0, home_region="aws/us-east-1", max_hourly_usd=12.5,
        market_patterns=["aws/us-*", "*/p3.2xlarge"])
    job = Job(**event.job_fields())
    assert (job.checkpoint_gb, job.home_region, job.max_hourly_usd, job.market_patterns) == (
        50.0, "aws/us-east-1", 12.5, ("aws/us-*", "*/p3.2xlarge"))
    data = json.loads(dump_event(event))
    for name in ("checkpoint_gb", "home_region", "max_hourly_usd", "market_patterns"):
        del data[name]
    older = parse_event(json.dumps(data).encode())
    assert Job(**older.job_fields()) == Job(**{**event.job_fields(), "checkpoint_gb": 0.0,
                                               "home_region": None, "max_hourly_usd": None,
                                               "market_patterns": None})


@given(job_submitted())
def test_from_job_fields_inverts_job_fields(event):
    assert submission(Job(**event.job_fields()), event.event_time) == event


# --- rejections: each message names the field, the value and what was expected -----------


@pytest.mark.parametrize(("raw", "message"), [
    (wire(PRICE, spot_price=math.nan), "PriceTick.spot_price = nan: expected a finite number"),
    (wire(PRICE, spot_price=math.inf), "PriceTick.spot_price = inf: expected a finite number"),
    (wire(PRICE, spot_price=-0.5), "PriceTick.spot_price = -0.5: expected >= 1e-06"),
    (wire(PRICE, spot_price=0.0), "PriceTick.spot_price = 0.0: expected >= 1e-06"),
    (wire(PRICE, on_demand_price=0.0), "PriceTick.on_demand_price = 0.0: expected >= 1e-06"),
    (wire(PRICE, market="aws/us-east-1"),
     "PriceTick.market = 'aws/us-east-1': expected a market key "
     "'cloud/region/zone/instance_type' of four parts, each a letter or a digit"),
    (wire(PRICE, event_time="2024-05-01T12:00:00"),
     "PriceTick.event_time = '2024-05-01T12:00:00': expected a time from "
     "2000-01-01T00:00:00Z to 2100-01-01T00:00:00Z: ISO-8601 with an offset"),
    (wire(PRICE, event_time="yesterday"),
     "PriceTick.event_time = 'yesterday': expected a time from 2000-01-01T00:00:00Z"),
    (wire(PRICE, colour="red"),
     "PriceTick.colour = 'red': unknown field, expected one of event_time, idempotency_key"),
    (wire(PRICE, schema_version=3),
     "Event.schema_version = 3: expected 2 (the schema version this reader supports)"),
    (wire(PRICE, schema_version=1),
     "Event.schema_version = 1: expected 2 (the schema version this reader supports)"),
    (wire({"type": "provisioning_decision", "event_time": "2024-05-01T12:00:00Z",
           "job_id": "llama-ft", "reason": "released: finished"}, schema_version=1),
     "Event.schema_version = 1: expected 2 (the schema version this reader supports)"),
    (wire(PRICE, type="price_tik"),
     "Event.type = 'price_tik': expected one of 'price_tick', 'availability_tick'"),
    (wire(PRICE, type="job_finished"), "JobFinished.job_id is missing: expected a value"),
    (wire(JOB, soft_deadline="2024-05-01T11:00:00Z"),
     "JobSubmitted.soft_deadline = 2024-05-01T11:00:00Z: expected > release "
     "(2024-05-01T12:00:00Z)"),
    (wire(JOB, hard_deadline="2024-05-02T00:00:00Z"),
     "JobSubmitted.hard_deadline = 2024-05-02T00:00:00Z: expected >= soft_deadline "
     "(2024-05-03T12:00:00Z)"),
    (wire(JOB, n_min=4, n_max=2), "JobSubmitted.n_max = 2: expected >= n_min (4)"),
    (wire(JOB, n_min=0), "JobSubmitted.n_min = 0: expected >= 1"),
    (wire(JOB, home_region="us-east-1"), "JobSubmitted.home_region = 'us-east-1': expected "),
    (wire(JOB, checkpoint_gb=-1.0), "JobSubmitted.checkpoint_gb = -1.0: expected >= 0"),
    (wire(JOB, max_hourly_usd=0.0), "JobSubmitted.max_hourly_usd = 0.0: expected > 0"),
    (wire(JOB, market_patterns=[]), "JobSubmitted.market_patterns = []: expected at least"),
    (wire(JOB, workload=0), "JobSubmitted.workload = 0: expected > 0"),
    (wire(JOB, beta=-1.0),
     "JobSubmitted.beta = -1.0: expected alpha * n_min + beta >= 1e-06 (alpha=1.0, n_min=1)"),
    (wire(JOB, value=1.0, value_at_hard_deadline=2.0),
     "JobSubmitted.value_at_hard_deadline = 2.0: expected <= value (1.0)"),
    (wire(JOB, allowed_markets=["a/b/c/d", "bad"]),
     "JobSubmitted.allowed_markets[1] = 'bad': expected a market key"),
    (wire(JOB, n_max="4"), "JobSubmitted.n_max = '4': expected a valid integer"),
    (wire(JOB, allow_spot="yes"), "JobSubmitted.allow_spot = 'yes': expected a valid boolean"),
    (wire({"type": "availability_tick", "event_time": 1e9, "market": MARKET, "available": 1},
          reason="stolen"),
     "AvailabilityTick.reason = 'stolen': expected 'obtained', 'refused', 'preempted' or "
     "'probe'"),
    (wire({"type": "job_progress", "event_time": 1e9, "job_id": "j", "work_done": 1.0},
          remaining_work=-1.0), "JobProgress.remaining_work = -1.0: expected > 0"),
    (wire({"type": "dead_letter", "event_time": 1e9, "raw": "not base64!",
           "raw_encoding": "base64", "source_topic": "t", "reason": "r", "error_type": "E"}),
     "DeadLetter.raw = 'not base64!': expected base64 text"),
])
def test_rejections_name_field_value_and_expectation(raw, message):
    assert rejection(raw).startswith(message)


def test_every_violation_is_reported_on_one_line():
    message = rejection(wire(PRICE, spot_price=-1.0, market="x", colour="red"))
    assert "\n" not in message
    assert message.count("; ") == 2
    assert "PriceTick.spot_price = -1.0" in message and "PriceTick.market = 'x'" in message


@pytest.mark.parametrize(("raw", "message"), [
    ('{"type": "price_tick",', "event is not valid JSON at line 1 col 23"),
    ('{"type": "price_tick"\n "market": 1}', "event is not valid JSON at line 2 col 2"),
    ("", "event is not valid JSON at line 1 col 1"),
    (b"\xff{}", "event is not valid UTF-8 at byte 0"),
    ("[1, 2]", "event = [1, 2]: expected a JSON object"),
    ('{"type": "job_finished", "type": "price_tick"}', "event field 'type' appears twice"),
])
def test_undecodable_bytes_are_rejected_with_their_position(raw, message):
    assert rejection(raw).startswith(message)


def test_event_error_is_a_value_error_chained_to_the_cause():
    with pytest.raises(ValueError) as info:
        parse_event(wire(PRICE, spot_price=-1.0))
    assert isinstance(info.value, EventError)
    assert isinstance(info.value.__cause__, ValidationError)


def test_models_reject_bad_values_at_construction():
    with pytest.raises(ValidationError) as info:
        PriceTick(event_time=datetime(2024, 5, 1), market=MARKET, spot_price=1.0)
    assert describe_validation_error(info.value).startswith(
        "PriceTick.event_time = 2024-05-01T00:00:00: expected a time from"
    )
    with pytest.raises(ValidationError) as info:
        AvailabilityTick(event_time=T0, market=MARKET, available=1, schema_version=1)
    assert "AvailabilityTick.schema_version = 1: expected 2" in describe_validation_error(
        info.value
    )


def test_events_are_frozen():
    tick = PriceTick(event_time=T0, market=MARKET, spot_price=1.0)
    with pytest.raises(ValidationError):
        tick.spot_price = 2.0


def test_other_time_zones_are_converted_to_utc():
    tick = PriceTick(event_time=datetime(2024, 5, 1, 14, tzinfo=timezone(timedelta(hours=2))),
                     market=MARKET, spot_price=1.0)
    assert tick.event_time == T0 and tick.event_time.tzinfo is UTC


# --- dead letters --------------------------------------------------------------------------


@pytest.mark.parametrize(("raw", "encoding"), [(b'{"type": 1', "text"), (b"\xff\x00", "base64")])
def test_dead_letter_keeps_the_original_bytes(raw, encoding):
    error = EventError("event is not valid JSON at line 1 col 11: Expecting ',' delimiter")
    letter = DeadLetter.from_raw(raw, error, source_topic="prices", event_time=T0,
                                 partition=3, offset=42)
    assert letter.raw_encoding == encoding and letter.original() == raw
    assert letter.key == "prices" and letter.error_type == "EventError"
    assert letter.reason == str(error)
    assert parse_event(dump_event(letter)) == letter


# --- plausibility: every number finite and bounded, every time in range ------------------


@pytest.mark.parametrize(("raw", "message"), [
    (wire(PRICE, spot_price=1e308), "PriceTick.spot_price = 1e+308: expected <= 10,000"),
    ('{"type": "price_tick", "event_time": 1e9, "market": "a/b/c/d", "spot_price": -Infinity}',
     "PriceTick.spot_price = -inf: expected a finite number"),
    (wire(PRICE, spot_price=10**400), "PriceTick.spot_price = 1000000000"),
    (wire(PRICE, on_demand_price=20_000.0), "PriceTick.on_demand_price = 20000.0: expected <= "
                                            "10,000"),
    (wire(PRICE, event_time="0001-01-01T00:00:00Z"),
     "PriceTick.event_time = '0001-01-01T00:00:00Z': expected a time from "
     "2000-01-01T00:00:00Z to 2100-01-01T00:00:00Z"),
    (wire(PRICE, event_time="9999-12-31T00:00:00Z"),
     "PriceTick.event_time = '9999-12-31T00:00:00Z': expected a time from"),
    (wire(PRICE, event_time="9999-12-31T23:00:00-05:00"), "PriceTick.event_time = "),
    (wire(PRICE, event_time=-1e12), "PriceTick.event_time = -1000000000000.0: expected a time"),
    (wire({"type": "availability_tick", "event_time": 1e9, "market": MARKET}, available=10**30),
     "AvailabilityTick.available = 1000000000000000000000000000000: expected <= 1,000,000"),
    (wire(JOB, workload=1e308), "JobSubmitted.workload = 1e+308: expected <= 10,000,000"),
    (wire(JOB, n_max=10**6), "JobSubmitted.n_max = 1000000: expected <= 10,000"),
    (wire(JOB, alpha=-1.0), "JobSubmitted.alpha = -1.0: expected >= 0"),
    (wire(JOB, alpha=1e-300), "JobSubmitted.beta = 0.0: expected alpha * n_min + beta >= 1e-06"),
    (wire(JOB, restart_overhead=1e9), "JobSubmitted.restart_overhead = 1000000000.0: expected "
                                      "<= 86,400"),
    (wire(JOB, value=1e15), "JobSubmitted.value = 1000000000000000.0: expected <= "
                            "1,000,000,000"),
    (wire(JOB, hard_deadline="2100-01-02T00:00:00Z"), "JobSubmitted.hard_deadline = "),
    (wire({"type": "job_progress", "event_time": 1e9, "job_id": "j"}, work_done=1e308),
     "JobProgress.work_done = 1e+308: expected <= 10,000,000"),
    (wire(PRICE, market="a/b/c/" + "d" * 300), "PriceTick.market = 'a/b/c/ddd"),
    ("[" * 100_000 + "]" * 100_000,
     "event nests arrays or objects deeper than 6 levels: expected at most 6"),
    (wire(PRICE, extra={"a": [[[[[[1]]]]]]}),
     "event nests arrays or objects deeper than 6 levels"),
    (wire(PRICE, reason="x" * 2_000_000), "event is 2,000,"),
    ('{"spot_price": ' + "9" * 5000 + "}", "event holds a number that cannot be read"),
])
def test_implausible_values_are_rejected_naming_the_field(raw, message):
    assert rejection(raw).startswith(message)


def test_bounds_are_documented_in_the_json_schemas():
    from streams.contract.schema import json_schemas

    schemas = json_schemas()
    price = schemas["price_tick"]["properties"]["spot_price"]
    assert (price["minimum"], price["maximum"]) == (1e-6, 10_000.0)
    workload = schemas["job_submitted"]["properties"]["workload"]
    assert workload["maximum"] == 1e7 and workload["exclusiveMinimum"] == 0
    time = schemas["price_tick"]["properties"]["event_time"]
    text, number = time["anyOf"]
    assert "2000-01-01T00:00:00Z to 2100-01-01T00:00:00Z" in text["description"]
    assert text["pattern"] == TIME_PATTERN
    assert (number["minimum"], number["maximum"]) == (946_684_800, 4_102_444_800)
    assert "alpha * n_min + beta >= 1e-06" in schemas["job_submitted"]["description"]


def test_a_dead_letter_keeps_the_key_and_the_head_of_a_huge_message():
    from streams.contract import DEAD_LETTER_RAW_BYTES, EARLIEST_TIME, LATEST_TIME

    raw = b"\xff" + b"x" * (2 * DEAD_LETTER_RAW_BYTES)
    letter = DeadLetter.from_raw(raw, EventError("too long"), source_topic="ticks",
                                 event_time=-5.0, partition=1, offset=7, key=b"m\xfey")
    assert letter.raw_truncated and letter.raw_size == len(raw)
    assert letter.original() == raw[:DEAD_LETTER_RAW_BYTES]
    assert letter.source_key_encoding == "base64" and letter.original_key() == b"m\xfey"
    assert letter.event_time == EARLIEST_TIME
    assert len(dump_event(letter)) < 1_000_000  # fits Kafka's default message size
    assert parse_event(dump_event(letter)) == letter
    later = DeadLetter.from_raw(b"{}", ValueError("x"), source_topic="t", event_time=1e12)
    assert later.event_time == LATEST_TIME and not later.raw_truncated
    assert later.raw_size == 2 and later.source_key is None
