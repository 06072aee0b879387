"""Fuzzing the whole pipeline in memory: whatever reaches any topic, no exception escapes a
stage, every message is accepted or dead-lettered, memory stays bounded, and poison mixed
into a replay leaves the decisions of the good events exactly as they are without it."""

from __future__ import annotations

import bisect
import json
import math
import tracemalloc
from datetime import UTC, datetime, timedelta
from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver.policies import PolicySpec
from streams.contract import (
    MAX_PRICE,
    DeadLetter,
    JobSubmitted,
    dump_event,
    parse_event,
)
from streams.contract.fields import (
    MAX_AVAILABLE,
    MAX_INSTANCES,
    MAX_OVERHEAD_SECONDS,
    MAX_USD,
    MAX_WORKLOAD,
    MIN_PRICE,
    MIN_THROUGHPUT,
)
from streams.pipeline.decisions import decision_rows
from streams.pipeline.declaration import PipelineConfig
from streams.pipeline.driver import is_stage_error
from streams.pipeline.stage import first_boundary
from streams.pipeline.trace_events import trace_events
from streams.runners.memory import MemoryPipeline
from streams.settings import Topics
from tests.properties import examples
from tests.scenarios import synthetic

SLOT = 3600.0
TOPICS = Topics()
TICKS, JOBS, BOUNDARIES = TOPICS.market_ticks, TOPICS.job_events, TOPICS.market_boundaries
PARTITIONS = {"job_partitions": 2, "market_partitions": 2}


def greedy(data) -> PipelineConfig:
    return PipelineConfig(data.markets, SLOT, PolicySpec("greedy"))


@cache
def replay():
    """A 2-market, 3-day synthetic replay (a tick every 15 minutes): its messages and the
    decisions they give."""
    ticks, data, jobs = synthetic(21, n_markets=2, days=3, n_jobs=10, tick_seconds=900,
                                  slot=SLOT, workload_range=(6.0, 20.0))
    messages = [(JOBS if e.type == "job_submitted" else TICKS, e.key.encode(), dump_event(e))
                for e in trace_events(ticks, jobs)]
    pipeline = run(data, messages)
    assert not pipeline.dead_letters and len(decision_rows(pipeline.decisions)) > 50
    return data, messages, pipeline.decisions


def run(data, messages) -> MemoryPipeline:
    pipeline = MemoryPipeline(greedy(data), **PARTITIONS)
    for topic, key, value in messages:
        pipeline.send(topic, value, key)
    return pipeline


def stage_errors(pipeline: MemoryPipeline) -> list[str]:
    """Dead letters and faults of exceptions a stage raised unexpectedly."""
    return ([f"{d.error_type}: {d.reason}" for d in pipeline.dead_letters
             if d.error_type not in ("EventError", "RejectedEvent")]
            + [repr(f) for f in pipeline.faults if is_stage_error(f.error)])


# --- poison: messages every stage must reject ---------------------------------------------

BAD_NUMBERS = [math.nan, math.inf, -math.inf, 1e308, -1e308, 10**400, -(10**30)]
BAD_YEARS = st.one_of(st.integers(1, 1999), st.integers(2101, 9999))


def bad_times() -> st.SearchStrategy[str]:
    return st.builds(lambda year, day: (datetime(year, 1, 1, tzinfo=UTC)
                                        + timedelta(days=day)).isoformat(),
                     BAD_YEARS, st.integers(0, 360))


def templates(data) -> list[tuple[str, dict]]:
    """A valid message of every input type (catalogue markets, known slots)."""
    market, t = data.markets[0].key, data.origin + 7200
    return [
        (TICKS, {"type": "price_tick", "event_time": t, "market": market, "spot_price": 1.0,
                 "on_demand_price": 3.0}),
        (TICKS, {"type": "availability_tick", "event_time": t, "market": market,
                 "available": 3}),
        (JOBS, {"type": "job_submitted", "event_time": t, "job_id": "poison", "workload": 2.0,
                "release": t, "soft_deadline": t + 7200, "hard_deadline": t + 9000, "n_min": 1,
                "n_max": 2, "alpha": 1.0, "beta": 0.0, "value": 10.0,
                "value_at_hard_deadline": 1.0, "miss_penalty": 1.0, "restart_overhead": 60.0}),
        (JOBS, {"type": "job_progress", "event_time": t, "job_id": "poison", "work_done": 1.0,
                "remaining_work": 1.0}),
        (BOUNDARIES, {"type": "market_boundary", "event_time": t, "market": market,
                      "slot_seconds": SLOT, "price": 1.0, "availability": 1, "price_now": 1.0,
                      "availability_now": 1}),
        (JOBS, {"type": "epoch_closed", "event_time": t, "epoch": round(t / SLOT),
                "slot_seconds": SLOT, "markets": [m.key for m in data.markets],
                "price_now": [1.0, 1.0], "availability_now": [1, 1]}),
    ]


@st.composite
def corrupted(draw, data) -> tuple[str, bytes, bytes]:
    """A valid template with one number or time made implausible (or of the wrong type)."""
    topic, template = draw(st.sampled_from(templates(data)))
    field = draw(st.sampled_from(sorted(
        k for k, v in template.items() if isinstance(v, int | float | list) and k != "markets")))
    bad = draw(st.sampled_from(BAD_NUMBERS) | bad_times()
               | st.sampled_from(["x" * 300, True, [1], {"a": 1}]))
    if isinstance(template[field], list):
        bad = [bad, bad]
    message = {**template, field: bad}
    key = str(message.get("market") or message.get("job_id") or "k").encode()
    return topic, key, json.dumps(message, allow_nan=True, default=str).encode()


def implausible(data) -> dict[str, list[dict]]:
    """By event type: changes that make a valid event one the pipeline cannot take."""
    mars, day = "aws/mars-1/mars-1a/p3.2xlarge", 86_400.0
    start = data.origin
    far_past = {"release": start - 31 * day, "soft_deadline": start - 30 * day,
                "hard_deadline": start - 30 * day, "event_time": start - 31 * day + 600}
    tick = [{"market": mars}, {"event_time": start + 400 * day},
            {"event_time": start - 40 * day}]
    return {
        "price_tick": tick,
        "availability_tick": tick,
        "job_submitted": [{"allowed_markets": [mars]}, far_past,
                          {"event_time": start + 7200, "hard_deadline": start + 7200}],
        "job_progress": [{"job_id": "nobody"}],
        "market_boundary": [{"market": mars}, {"slot_seconds": 600.0},
                            {"event_time": start + 7201}],
        "epoch_closed": [{"markets": [mars, mars]}, {"slot_seconds": 600.0},
                         {"epoch": 1_000_000}],
    }


@st.composite
def implausible_event(draw, data) -> tuple[str, bytes, bytes]:
    """Well-formed events that cannot be taken: unknown markets and jobs, ticks more than the
    skew from the replay, jobs too late, reports and markers of other catalogues or grids."""
    topic, template = draw(st.sampled_from(templates(data)))
    message = {**template, **draw(st.sampled_from(implausible(data)[template["type"]]))}
    key = str(message.get("market") or message.get("job_id") or "k").encode()
    return topic, key, json.dumps(message).encode()


def json_values() -> st.SearchStrategy:
    scalars = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True)
               | st.text(max_size=20))
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                        | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=20)


DEEP = b"[" * 100_000 + b"]" * 100_000
DEEP_OBJECT = b'{"a":' * 100_000 + b"1" + b"}" * 100_000
DEEP_TICK = b'{"type":"price_tick","a":' + DEEP_OBJECT + b"}"  # looks like a tick at first
HUGE = b'{"type": "price_tick", "market": "' + b"x" * 2_000_000 + b'"}'
HUGE_TEXT = json.dumps({"type": "job_cancelled", "event_time": 1.8e9, "job_id": "j",
                        "reason": "r" * 1_500_000}).encode()


def poison(data) -> st.SearchStrategy[tuple[str, bytes, bytes]]:
    topics = st.sampled_from([TICKS, JOBS, BOUNDARIES])
    raw = st.one_of(
        st.binary(max_size=300),
        json_values().map(lambda v: json.dumps(v, allow_nan=True).encode()),
        st.sampled_from([DEEP, DEEP_OBJECT, HUGE, HUGE_TEXT, b"", b"null", b"\xff\xfe{}"]),
    )
    return st.one_of(
        st.tuples(topics, st.binary(max_size=8), raw),
        corrupted(data),
        implausible_event(data),
    )


@pytest.mark.slow  # a whole replay through the pipeline per example
@settings(max_examples=examples(100), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_poison_is_dead_lettered_and_the_decisions_stay_exactly_the_same(draw):
    data, messages, expected = replay()
    bad = draw.draw(st.lists(st.tuples(st.integers(0, len(messages)), poison(data)),
                             min_size=1, max_size=12))
    mixed = list(messages)
    for position, message in sorted(bad, key=lambda b: -b[0]):
        mixed.insert(position, message)
    pipeline = run(data, mixed)
    assert [dump_event(d) for d in pipeline.decisions] == [dump_event(d) for d in expected]
    assert stage_errors(pipeline) == []
    assert len(pipeline.dead_letters) == len(bad)
    originals = [d.original() for d in pipeline.dead_letters]
    for _, (_, _, value) in bad:  # each poison message has its dead letter
        assert any(value.startswith(o) and (o or not value) for o in originals), value[:80]


# --- schema-valid extremes: every numeric field at its bounds -----------------------------


@st.composite
def extreme_events(draw, data) -> tuple[str, bytes, bytes]:
    """Valid events of the replay's markets and new jobs, with numbers at their bounds."""
    market = draw(st.sampled_from([m.key for m in data.markets]))
    start, end = data.origin, data.origin + data.n_slots * SLOT
    t = draw(st.floats(start, end))
    tiny = st.sampled_from([MIN_PRICE, 2 * MIN_PRICE])
    kind = draw(st.sampled_from(["price", "availability", "job", "progress"]))
    if kind == "price":
        event = {"type": "price_tick", "event_time": t, "market": market,
                 "spot_price": draw(st.sampled_from([MAX_PRICE]) | tiny),
                 "on_demand_price": draw(st.sampled_from([MAX_PRICE, MIN_PRICE]))}
    elif kind == "availability":
        event = {"type": "availability_tick", "event_time": t, "market": market,
                 "available": draw(st.sampled_from([0, MAX_AVAILABLE]))}
    else:
        job_id = f"extreme-{draw(st.integers(0, 3))}"
        n_max = draw(st.sampled_from([1, MAX_INSTANCES]))
        soft = t + draw(st.sampled_from([1e-3, 86_400.0]))
        event = {"type": "job_submitted", "event_time": t, "job_id": job_id,
                 "workload": draw(st.sampled_from([MAX_WORKLOAD, 5e-324])),
                 "release": t, "soft_deadline": soft,
                 "hard_deadline": soft + draw(st.sampled_from([2 * SLOT, 40 * 86_400.0])),
                 "n_min": draw(st.sampled_from([1, n_max])), "n_max": n_max,
                 "alpha": draw(st.sampled_from([0.0, 1e6])),
                 "beta": draw(st.sampled_from([MIN_THROUGHPUT, 1e6])),
                 "value": MAX_USD, "value_at_hard_deadline": -MAX_USD, "miss_penalty": MAX_USD,
                 "restart_overhead": draw(st.sampled_from([0.0, MAX_OVERHEAD_SECONDS])),
                 "allow_spot": draw(st.booleans())}
        if kind == "progress":
            event = {"type": "job_progress", "event_time": t + SLOT, "job_id": job_id,
                     "work_done": draw(st.sampled_from([0.0, MAX_WORKLOAD])),
                     "remaining_work": draw(st.sampled_from([MAX_WORKLOAD, 5e-324]))}
    key = event.get("market") or event["job_id"]
    return (TICKS if "market" in event else JOBS), key.encode(), json.dumps(event).encode()


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_schema_valid_extremes_are_taken_or_dead_lettered_and_no_stage_raises(draw):
    data, messages, _ = replay()
    extremes = draw.draw(st.lists(st.tuples(st.integers(0, len(messages)),
                                            extreme_events(data)), min_size=1, max_size=10))
    # Ticks go anywhere; job events where a producer publishing in event-time order puts
    # them, so that each job can still be decided.
    times = [parse_event(value).event_time.timestamp() for _, _, value in messages]
    mixed = list(messages)
    for position, message in sorted(
            ((p if m[0] == TICKS else bisect.bisect_right(
                times, parse_event(m[2]).event_time.timestamp()), m) for p, m in extremes),
            key=lambda b: -b[0]):
        mixed.insert(position, message)
    pipeline = run(data, mixed)
    assert stage_errors(pipeline) == []
    assert all(math.isfinite(d.slack_seconds) and math.isfinite(d.expected_cost_usd)
               for d in pipeline.decisions)
    # Each extreme job that could start before the last epoch was decided or dead-lettered.
    last_epoch = max(d.epoch for d in pipeline.decisions) * SLOT
    heard = {d.job_id for d in pipeline.decisions} | {
        json.loads(d.raw)["job_id"] for d in pipeline.dead_letters if "job_submitted" in d.raw}
    for _, _, value in mixed:
        event = parse_event(value)
        if isinstance(event, JobSubmitted) and first_boundary(
                event.release.timestamp(), SLOT) < min(last_epoch,
                                                       event.hard_deadline.timestamp()):
            assert event.job_id in heard, event


# --- memory stays bounded ------------------------------------------------------------------


@pytest.mark.slow  # a replay under tracemalloc
def test_a_flood_of_poison_keeps_memory_bounded():
    data, messages, expected = replay()
    tracemalloc.start()
    try:
        pipeline = MemoryPipeline(greedy(data),
                                  **PARTITIONS)
        for n, (topic, key, value) in enumerate(messages):
            pipeline.send(topic, value, key)
            if n % 50 == 0:
                for topic_ in (TICKS, JOBS, BOUNDARIES):
                    pipeline.send(topic_, DEEP if n % 100 else HUGE, b"k")
            if len(pipeline.dead_letters) > 100:  # a consumer of the dead letters drains them
                pipeline.dead_letters.clear()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    print(f"tracemalloc peak, {3 * len(messages) // 50} poison messages: {peak / 2**20:.0f} MiB")
    assert peak < 150 * 2**20
    assert [dump_event(d) for d in pipeline.decisions] == [dump_event(d) for d in expected]


@pytest.mark.parametrize("value", [DEEP, DEEP_OBJECT, DEEP_TICK, HUGE,
                                   b"[" * 10_000 + b"]" * 10_000])
def test_every_stage_dead_letters_what_it_cannot_decode(value):
    data, _, _ = replay()
    pipeline = run(data, [(topic, b"k", value) for topic in (TICKS, JOBS, BOUNDARIES)])
    assert sorted(d.source_topic for d in pipeline.dead_letters) == sorted(
        [TICKS, JOBS, BOUNDARIES])
    assert all(isinstance(d, DeadLetter) and d.error_type == "EventError"
               for d in pipeline.dead_letters)
