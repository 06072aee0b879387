import re
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from solver.policies import POLICY_NAMES, PolicySpec, make_policy
from solver.simulator import simulate
from streams.contract import (
    AvailabilityTick,
    JobCancelled,
    MarketBoundary,
    PriceTick,
    PublishedForecast,
    dump_event,
)
from streams.contract.fields import iso
from streams.kafka.partitions import partition_for
from streams.pipeline.coordinator import EpochCoordinator
from streams.pipeline.decisions import decision_rows
from streams.pipeline.declaration import PipelineConfig
from streams.pipeline.market_stage import MarketStage
from streams.pipeline.scheduler import PartitionScheduler
from streams.pipeline.stage import RejectedEvent, epoch_index
from streams.pipeline.trace_events import submission, trace_events
from streams.runners.memory import MemoryPipeline, run_in_memory
from tests.scenarios import synthetic

SLOT = 3600.0


def simulated_rows(data, jobs, policy):
    result = simulate(data, jobs, make_policy(policy))
    return sorted(
        (epoch_index(data.slot_start(t), SLOT), job_id, data.markets[a.market].key,
         a.spot, a.on_demand)
        for t, job_id, a in result.decisions
    )


@pytest.fixture(scope="module")
def market():
    """Three markets for six days, a tick every 15 minutes, and 24 jobs."""
    return synthetic(3, n_markets=3, days=6, n_jobs=24, tick_seconds=900, slot=SLOT)


BARE = ["on-demand", "spot-only", "greedy", "uniform-progress", "eager-failover"]


@pytest.mark.parametrize("policy", BARE)
def test_streaming_stages_decide_exactly_like_the_simulator(market, policy):
    ticks, data, jobs = market
    streamed = run_in_memory(trace_events(ticks, jobs), data.markets, SLOT, policy)
    assert decision_rows(streamed) == simulated_rows(data, jobs, policy)


def test_partitions_plan_independently_like_separate_simulations(market):
    ticks, data, jobs = market
    streamed = run_in_memory(trace_events(ticks, jobs), data.markets, SLOT, "greedy",
                             partitions=3)
    expected = sorted(
        row
        for p in range(3)
        for row in simulated_rows(data, [j for j in jobs if partition_for(j.id, 3) == p],
                                  "greedy")
    )
    assert decision_rows(streamed) == expected


def test_every_job_gets_a_release_decision_when_it_leaves(market):
    ticks, data, jobs = market
    streamed = run_in_memory(trace_events(ticks, jobs), data.markets, SLOT, "greedy")
    released = {d.job_id for d in streamed if d.action == "release"}
    assert released == {j.id for j in jobs}
    keys = [d.idempotency_key for d in streamed]
    assert len(keys) == len(set(keys))


@pytest.fixture
def running(market):
    """A scheduler past the market's first epochs."""
    ticks, data, _ = market
    scheduler = PartitionScheduler(data.markets, SLOT, lambda: make_policy("greedy"))
    coordinator, markets = EpochCoordinator(data.markets, SLOT), MarketStage(data.markets, SLOT)
    for event in trace_events(ticks, []):
        for boundary in markets.handle(event):
            if isinstance(boundary, MarketBoundary):
                for epoch in coordinator.handle(boundary):
                    scheduler.handle(epoch)
        if scheduler.last_epoch is not None and scheduler.last_epoch > epoch_index(
                data.origin, SLOT) + 5:
            return scheduler
    raise AssertionError("the market has fewer than six epochs")


def _late_tick(data, jobs, scheduler):
    """A market's tick older than the one that passed its first boundary."""
    stage, key, t0 = MarketStage(data.markets, SLOT), data.markets[0].key, data.origin
    stage.handle(PriceTick(event_time=t0, market=key, spot_price=1.0))
    stage.handle(AvailabilityTick(event_time=t0, market=key, available=1))
    assert stage.handle(PriceTick(event_time=t0 + SLOT + 1, market=key, spot_price=1.0))
    return (stage, AvailabilityTick(event_time=t0 + 10, market=key, available=1),
            rf"late tick: tick time={t0 + 10!r} is before the market's last tick "
            rf"time={t0 + SLOT + 1!r}")


def _unknown_market(data, jobs, scheduler):
    return (MarketStage(data.markets, SLOT),
            PriceTick(event_time=data.origin, market="aws/x/y/z", spot_price=1.0),
            r"market='aws/x/y/z': expected a market of the catalogue")


def _due_before_its_first_epoch(data, jobs, scheduler):
    at = re.escape(datetime.fromtimestamp(data.origin, UTC).isoformat())
    late = replace(jobs[0], release=data.origin - 3600, soft_deadline=data.origin,
                   hard_deadline=data.origin)
    return (scheduler, submission(late, data.origin),
            rf"hard_deadline={at}: expected a time after {at}, the first epoch at or after the "
            r"submission \(a job due at or before it has no slot")


def _cancelled_unknown_job(data, jobs, scheduler):
    return (scheduler, JobCancelled(event_time=data.origin, job_id="nope"),
            r"job_id='nope': expected a submitted job")


def _patterns_matching_no_market(data, jobs, scheduler):
    return (scheduler, submission(replace(jobs[0], market_patterns=("azure/*",)), data.origin),
            rf"job '{jobs[0].id}' market_patterns: 'azure/\*' matches none of the markets")


@pytest.mark.parametrize("case", [_late_tick, _unknown_market, _due_before_its_first_epoch,
                                  _cancelled_unknown_job, _patterns_matching_no_market],
                         ids=lambda case: case.__name__.lstrip("_"))
def test_what_cannot_take_effect_is_rejected_naming_the_field_and_its_value(
        market, running, case):
    _, data, jobs = market
    stage, event, reason = case(data, jobs, running)
    with pytest.raises(RejectedEvent, match=reason):
        stage.handle(event)


def test_market_stage_forecasts_every_covered_slot(market):
    ticks, data, _ = market
    stage = MarketStage(data.markets, SLOT, horizon=6)
    forecasts = [out for event in trace_events(ticks, []) for out in stage.handle(event)
                 if isinstance(out, PublishedForecast)]
    per_market = {m.key: [f for f in forecasts if f.market == m.key] for m in data.markets}
    assert all(len(f) >= data.n_slots for f in per_market.values())
    last = forecasts[-1]
    assert len(last.price) == 6 and all(p is not None and p > 0 for p in last.price)
    assert all(a is not None and 0 <= a <= 1 for a in last.availability)
    assert last.price_error is not None and last.price_error < 20


ONLINE_SPECS = [
    "prediction-free:sigma=0.5",
    "chc:window_hours=12,commitment=2",
    "risk-aware:confidence=0.8,resolve_hours=3",
    "policy-selection:rate=2,learner=exp3,seed=4",
]


@pytest.mark.parametrize("policy", ONLINE_SPECS)
def test_online_policies_with_parameters_decide_in_memory_like_the_simulator(market, policy):
    ticks, data, jobs = market
    streamed = run_in_memory(trace_events(ticks, jobs), data.markets, SLOT, policy)
    assert decision_rows(streamed) == simulated_rows(data, jobs, policy)


def test_every_registered_online_policy_is_covered_by_the_equivalence_tests():
    named = {PolicySpec.parse(p).name for p in ONLINE_SPECS} | set(BARE)
    assert set(POLICY_NAMES) - named == {"optimum"}  # offline: it reads the future


def test_every_message_written_carries_its_cloud_event_headers(market):
    ticks, data, jobs = market
    pipeline = MemoryPipeline(PipelineConfig(data.markets, SLOT, PolicySpec("greedy")))
    for event in trace_events(ticks, jobs[:4]):
        topics = pipeline.topics
        topic = topics.job_events if event.type == "job_submitted" else topics.market_ticks
        pipeline.send(topic, dump_event(event), event.key.encode())
    assert pipeline.decisions and pipeline.forecasts
    for topic, written in pipeline.written.items():
        for event, headers in zip(written, pipeline.headers[topic], strict=True):
            h = {name: value.decode() for name, value in headers}
            assert h == {"ce_specversion": "1.0", "ce_id": event.idempotency_key,
                         "ce_type": f"spotsched.{event.type}", "ce_subject": event.key,
                         "ce_time": h["ce_time"], "ce_source": h["ce_source"],
                         "content-type": "application/json"}
            assert h["ce_time"] == iso(event.event_time)
            assert h["ce_source"].startswith("/spotsched/")
