"""Identifiers cannot address others: job ids, market keys and idempotency keys keep to one
alphabet without wildcards, backslashes or control characters; a job's market patterns are
few; what a message says is escaped before it is printed."""

from __future__ import annotations

import json

import pytest

from solver.market import build_market_data
from solver.policies import make_policy
from solver.synthetic import SyntheticMarketSpec, synthetic_ticks
from streams.contract import DeadLetter, EventError, JobSubmitted, parse_event
from streams.contract.fields import MAX_MARKET_PATTERNS
from streams.contract.printable import printable
from streams.pipeline.driver import Driver, dead_letter
from streams.pipeline.scheduler import PartitionScheduler
from streams.pipeline.stage import Message

MARKET = "aws/us-east-1/us-east-1a/p3.2xlarge"
JOB = {"type": "job_submitted", "event_time": "2024-05-01T12:00:00Z", "job_id": "llama-ft",
       "workload": 48.0, "release": "2024-05-01T12:00:00Z",
       "soft_deadline": "2024-05-03T12:00:00Z", "hard_deadline": "2024-05-04T00:00:00Z"}
DECISION = {"type": "provisioning_decision", "event_time": "2024-05-01T12:00:00Z",
            "job_id": "llama-ft", "epoch": 476000, "slot_start": "2024-05-01T12:00:00Z",
            "slot_seconds": 3600.0, "market": MARKET, "on_demand": 1, "action": "run",
            "policy": "greedy", "expected_cost_usd": 3.06, "slack_seconds": 0.0}
TICK = {"type": "price_tick", "event_time": "2024-05-01T12:00:00Z", "market": MARKET,
        "key": MARKET, "idempotency_key": "t-1", "schema_version": 2, "spot_price": 0.91}
ID_EXPECTED = ("a letter or a digit, then letters, digits and ._:@+=-/ only (no spaces, "
               "wildcards, backslashes or control characters)")
UNSAFE_IDS = ["*", "?", "\\", "job-*", "job?", "a\\b", "", " job", "job 1", "job\n1",
              "\x1b[31mred", "a\x00b", "a\u202eb", "-job", "j" * 129]


def rejection(raw: str | bytes) -> str:
    with pytest.raises(EventError) as info:
        parse_event(raw)
    return str(info.value)


@pytest.mark.parametrize("job_id", UNSAFE_IDS)
@pytest.mark.parametrize("event", [JOB, DECISION,
                                   {"type": "job_cancelled", "event_time": 1e9},
                                   {"type": "job_finished", "event_time": 1e9},
                                   {"type": "job_progress", "event_time": 1e9, "work_done": 1.0}])
def test_a_job_id_outside_the_alphabet_is_refused_naming_field_value_and_alphabet(event,
                                                                                  job_id):
    message = rejection(json.dumps({**event, "job_id": job_id}))
    name = {"job_submitted": "JobSubmitted", "provisioning_decision": "ProvisioningDecision",
            "job_cancelled": "JobCancelled", "job_finished": "JobFinished",
            "job_progress": "JobProgress"}[event["type"]]
    shown = repr(job_id) if len(repr(job_id)) <= 80 else repr(job_id)[:77] + "..."
    assert message.startswith(f"{name}.job_id = {shown}: expected a job id of 1 to 128 "
                              f"characters: {ID_EXPECTED}")
    assert message.isprintable()


@pytest.mark.parametrize("job_id", ["llama-ft", "job-0002", "w03-us-east-1a", "team/a:run.7",
                                    "x@y+z=1", "j" * 128])
def test_job_ids_of_the_alphabet_are_read(job_id):
    assert parse_event(json.dumps({**JOB, "job_id": job_id})).key == job_id


@pytest.mark.parametrize("market", ["aws/us-east-1/*/p3.2xlarge", "aws/us-east-1/?/p3",
                                    "aws/us-east-1/us-east-1a/p3\\x", "aws/us-east-1/a b/p3",
                                    "aws/us-east-1/us-east-1a/p3\n", "aws/-r/z/t"])
def test_a_market_key_outside_the_alphabet_is_refused_by_both_readers(market):
    tick = {**TICK, "market": market, "key": market}
    for raw in (json.dumps(tick, separators=(",", ":")).encode(), json.dumps(tick)):
        assert rejection(raw).startswith(f"PriceTick.market = {market!r}: expected a market "
                                         "key 'cloud/region/zone/instance_type' of four parts")


@pytest.mark.parametrize("market", [MARKET, "gcp/us-east4/all/g2-standard-96",
                                    "gcp/us-central1/us-central1-a/a3-highgpu-8g",
                                    "aws/us-east-1/all/p5.48xlarge"])
def test_market_keys_of_the_traces_are_read_by_both_readers(market):
    tick = {**TICK, "market": market, "key": market}
    for raw in (json.dumps(tick, separators=(",", ":")).encode(), json.dumps(tick)):
        assert parse_event(raw).key == market


@pytest.mark.parametrize("key", ["k\n1", "*", "k 1", "\x1b[0m"])
def test_an_idempotency_key_outside_the_alphabet_is_refused_by_both_readers(key):
    tick = {**TICK, "idempotency_key": key}
    for raw in (json.dumps(tick, separators=(",", ":"), ensure_ascii=False).encode(),
                json.dumps(tick)):
        assert rejection(raw).startswith(f"PriceTick.idempotency_key = {key!r}: expected an "
                                         "idempotency key of at most 1024 characters")


def test_the_market_patterns_of_a_job_are_capped_and_keep_to_the_alphabet():
    assert MAX_MARKET_PATTERNS == 32
    many = ["*a" * 89 + str(k) for k in range(1_000)]  # 181 KB of patterns
    assert len(json.dumps({**JOB, "market_patterns": many})) > 181_000
    assert rejection(json.dumps({**JOB, "market_patterns": many})).startswith(
        "JobSubmitted.market_patterns = ['*a*a*a")
    assert rejection(json.dumps({**JOB, "market_patterns": many})).endswith(
        ": expected at most 32 item(s)")
    job = parse_event(json.dumps({**JOB, "market_patterns": many[:32]}))
    assert isinstance(job, JobSubmitted) and job.market_patterns == tuple(many[:32])
    assert rejection(json.dumps({**JOB, "market_patterns": ["gcp/\x1b[2J*"]})).startswith(
        "JobSubmitted.market_patterns[0] = 'gcp/\\x1b[2J*': expected an fnmatch pattern")


def test_printable_escapes_what_a_terminal_would_act_on_and_keeps_the_rest():
    assert printable("job-1 é ok") == "job-1 é ok"
    assert printable("a\nb\r\tc\x00d\x1b[31me\u202ef\u2028g\x7f") == \
        "a\\nb\\r\\tc\\x00d\\x1b[31me\\u202ef\\u2028g\\x7f"


def test_a_dead_letters_reason_is_escaped():
    letter = DeadLetter.from_raw(b"{}", ValueError("bad\nINFO forged line\x1b[2J"),
                                 source_topic="t", event_time=1e9)
    assert letter.reason == "bad\\nINFO forged line\\x1b[2J"


@pytest.mark.parametrize("job_id", ["*", "?", "\\", "job\n\x1b[2J"])
def test_a_job_submitted_with_an_unsafe_id_is_dead_lettered_by_the_scheduler(job_id):
    data = build_market_data(synthetic_ticks(SyntheticMarketSpec(seed=1, n_markets=1,
                                                                 days=1)), 3600.0)
    driver = Driver(PartitionScheduler(data.markets, 3600.0, lambda: make_policy("greedy")))
    raw = json.dumps({**JOB, "job_id": job_id}).encode()
    handling = driver.process(Message("job-events", raw, job_id.encode(), 0, 7, 1.7e9))
    [rejection] = handling.rejections
    letter = dead_letter(rejection)
    assert letter.original() == raw and letter.offset == 7
    assert letter.reason.startswith(f"JobSubmitted.job_id = {job_id!r}: expected a job id")
    assert letter.reason.isprintable()
