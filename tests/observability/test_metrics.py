"""The worker's metrics: pure figures, and the registry fed by the in-memory pipeline."""

from __future__ import annotations

import doctest
import itertools
import math

import pytest
from prometheus_client import CollectorRegistry

import streams.metrics
from solver.engine import JobState
from solver.job import Allocation, Job
from solver.market import build_market_data
from solver.observation import JobView
from solver.policies import PolicySpec
from solver.synthetic import SyntheticMarketSpec, synthetic_ticks
from solver.workload import WorkloadSpec, generate_jobs
from streams.contract import EventError, JobCancelled, JobSubmitted, dump_event
from streams.metrics import (
    PipelineMetrics,
    deadline_risk,
    epoch_lag,
    job_figures,
    projected_completion,
    reason_kind,
)
from streams.pipeline.declaration import PipelineConfig
from streams.pipeline.driver import Batch, Handling
from streams.pipeline.stage import Message, RejectedEvent, Rejection
from streams.pipeline.trace_events import trace_events
from streams.runners.memory import MemoryPipeline
from tests.scenarios import synthetic
from tests.streams.logged import logged

H = 3600.0


def ticking_event(event: object) -> bool:
    return not isinstance(event, JobSubmitted | JobCancelled)


def make_job(**fields) -> Job:
    base = {"id": "j", "workload": 10.0, "release": 0.0, "soft_deadline": 10 * H,
            "hard_deadline": 20 * H, "n_min": 1, "n_max": 2}
    return Job(**{**base, **fields})


def test_the_docstring_examples_hold():
    assert doctest.testmod(streams.metrics).failed == 0


@pytest.mark.parametrize(("now", "on_demand", "expected"), [
    (0.0, 0, 0.25),          # 5 h needed of 20 h left, on spot or idle
    (0.0, 1, 0.0),           # one on-demand instance alone finishes (10 h <= 20 h)
    (12 * H, 1, 5 / 8),      # one on-demand needs 10 h of 8 h left: spot still needed
    (15 * H, 2, 1.0),        # 5 h needed, 5 h left: nothing to spare
    (19 * H, 0, 1.0),        # cannot finish even on on-demand at n_max
    (25 * H, 2, 1.0),        # past the hard deadline
])
def test_deadline_risk(now, on_demand, expected):
    assert deadline_risk(make_job(), 10.0, now, on_demand) == pytest.approx(expected)


def test_deadline_risk_counts_the_restart_overhead():
    job = make_job(restart_overhead=H)
    assert deadline_risk(job, 10.0, 0.0, 0) == pytest.approx(6 / 20)
    assert deadline_risk(job, 10.0, 14 * H, 0) == 1.0


def test_projected_completion_runs_on_or_waits_for_the_next_boundary():
    job = make_job(restart_overhead=600.0)
    assert projected_completion(job, 4.0, 100.0, 2, 600.0, H) == pytest.approx(
        100.0 + 600.0 + 2 * H)
    assert projected_completion(job, 4.0, 100.0, 1, 0.0, H) == pytest.approx(100.0 + 4 * H)
    assert projected_completion(job, 4.0, 100.0, 0, 0.0, H) == pytest.approx(
        100.0 + H + 600.0 + 2 * H)


def test_job_figures_pay_the_overhead_only_when_the_allocation_changes():
    job = make_job(restart_overhead=900.0)
    view = JobView(job, remaining=4.0, pending_overhead=300.0, current=Allocation(0, 1, 0),
                   cost=12.5)
    same = job_figures(view, Allocation(0, 1, 0), 2 * H, H)
    moved = job_figures(view, Allocation(1, 1, 0), 2 * H, H)
    assert same.projected_completion == pytest.approx(2 * H + 300.0 + 4 * H)
    assert moved.projected_completion == pytest.approx(2 * H + 900.0 + 4 * H)
    assert same.cost_usd == 12.5 and same.remaining_work == 4.0
    assert same.deadline_risk == pytest.approx((900.0 + 2 * H) / (18 * H))
    assert same.slack_seconds == job.slack(2 * H, 4.0) == pytest.approx(
        20 * H - 2 * H - 900.0 - 2 * H)


def test_job_outcomes():
    job = make_job()
    assert JobState(job, 1.0, finished=True, cancelled=True).outcome == "cancelled"
    assert JobState(job, 0.0, completion=19 * H, finished=True).outcome == "finished"
    assert JobState(job, 0.0, completion=21 * H, finished=True).outcome == "deadline_missed"
    assert JobState(job, 3.0, finished=True).outcome == "deadline_missed"
    assert JobState(job, 3.0, finished=True, failure="no plan").outcome == "failed"


def test_reason_kinds_and_epoch_lag():
    assert reason_kind(EventError("not JSON")) == "invalid"
    assert reason_kind(RejectedEvent("late tick")) == "rejected"
    assert reason_kind(ZeroDivisionError("a stage bug")) == "error"
    assert epoch_lag(7300.0, 3600.0) == 3700.0
    assert epoch_lag(3000.0, 3600.0) == 0.0


@pytest.fixture(scope="module")
def market():
    ticks, data, _ = synthetic(4, 2, 3, 0, slot=H)
    return ticks, data


def test_the_registry_follows_the_pipeline(market):
    """The in-memory pipeline observed by the metrics; every figure read back from the
    registry."""
    ticks, data = market
    start, end = data.origin, data.slot_start(data.n_slots)
    jobs = [
        make_job(id="doomed", workload=500.0, release=start, soft_deadline=end + 10 * H,
                 hard_deadline=end + 20 * H),
        make_job(id="quick", workload=3.0, release=start, soft_deadline=start + 10 * H,
                 hard_deadline=start + 20 * H),
        make_job(id="dropped", workload=30.0, release=start, soft_deadline=end,
                 hard_deadline=end),
    ]
    registry = CollectorRegistry()
    keys = [m.key for m in data.markets]
    clock = itertools.count(1000.0)
    metrics = PipelineMetrics(registry, markets=keys, topics=("ticks",), slot_seconds=H,
                              started=123.0, clock=lambda: next(clock))

    def value(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, labels)

    assert math.isnan(value("spotsched_market_spot_price_usd_per_hour", market=keys[0]))
    assert value("spotsched_last_epoch_closed_timestamp_seconds") == 123.0
    assert value("spotsched_last_decision_timestamp_seconds") == 123.0
    assert value("spotsched_dead_letters_total", topic="ticks", reason_kind="invalid") == 0.0
    pipeline = MemoryPipeline(
        PipelineConfig(data.markets, H, PolicySpec("greedy"), timed=metrics.timed),
        observers=[metrics])
    cancel = JobCancelled(event_time=start + 11 * H, job_id="dropped")
    events = sorted([*trace_events(ticks, jobs), cancel],
                    key=lambda e: (e.event_time, not isinstance(e, JobSubmitted)))
    for event in events:
        topic = pipeline.topics.market_ticks if ticking_event(event) else pipeline.topics.job_events
        pipeline.send(topic, dump_event(event), event.key.encode())
        decided = pipeline.decisions[-3:]
        for d in decided:
            slack = value("spotsched_job_slack_seconds", job_id=d.job_id)
            assert slack is None or slack == pytest.approx(d.slack_seconds)
    doomed = [d for d in pipeline.decisions if d.job_id == "doomed"][-1]
    assert value("spotsched_job_deadline_risk_ratio", job_id="doomed") == 1.0
    assert value("spotsched_job_slack_seconds", job_id="doomed") == doomed.slack_seconds < 0
    assert 0 < value("spotsched_job_remaining_work_units", job_id="doomed") < 500.0
    assert value("spotsched_job_cost_usd", job_id="doomed") > 0
    assert value("spotsched_job_projected_completion_timestamp_seconds",
                 job_id="doomed") > jobs[0].hard_deadline
    for gone in ("quick", "dropped"):
        assert value("spotsched_job_deadline_risk_ratio", job_id=gone) is None
    epochs = sum(1 for d in pipeline.decisions if d.job_id == "doomed")
    assert value("spotsched_jobs_active") == 1.0 == value("spotsched_jobs_to_decide")
    assert value("spotsched_jobs_ended_total", outcome="finished") == 1.0
    assert value("spotsched_jobs_ended_total", outcome="cancelled") == 1.0
    assert value("spotsched_jobs_ended_total", outcome="deadline_missed") == 0.0
    assert value("spotsched_solve_seconds_count") >= epochs
    assert value("spotsched_decisions_emitted_total") == len(pipeline.decisions)
    assert value("spotsched_events_consumed_total", topic=pipeline.topics.market_ticks) > epochs
    assert value("spotsched_last_decision_timestamp_seconds") > value(
        "spotsched_last_epoch_closed_timestamp_seconds") > 1000.0
    newest_tick = max(e.event_time.timestamp() for e in events if ticking_event(e))
    last_epoch = max(d.epoch for d in pipeline.decisions) * H
    assert value("spotsched_epoch_lag_seconds") == newest_tick - last_epoch > 0
    assert value("spotsched_slot_seconds") == H
    last = pipeline.forecasts[-1]
    assert value("spotsched_market_spot_price_usd_per_hour", market=keys[0]) in \
        ticks[0].prices.tolist()
    assert value("spotsched_market_spot_available_instances", market=keys[0]) >= 0
    assert value("spotsched_market_price_forecast_error_ratio", market=last.market) == \
        last.price_error / 100 < 1
    assert value("spotsched_market_availability_forecast_brier_score", market=last.market) == \
        last.availability_error


def test_dead_letters_count_by_topic_and_kind():
    registry = CollectorRegistry()
    metrics = PipelineMetrics(registry, markets=[], topics=("a", "b"), slot_seconds=H,
                              started=0.0)

    def reject(topic: str, error: Exception) -> None:
        message = Message(topic, b"x", b"k", 0, 0)
        batch = Batch("scheduler", topic)
        batch.add(message, Handling(rejections=[Rejection(message, error)]))
        metrics.observe(batch)

    reject("a", EventError("bad"))
    reject("a", RejectedEvent("late"))
    reject("a", RejectedEvent("late"))
    reject("b", KeyError("bug"))
    counts = {(s.labels["topic"], s.labels["reason_kind"]): s.value
              for family in registry.collect() if family.name == "spotsched_dead_letters"
              for s in family.samples if s.name.endswith("_total")}
    assert counts == {("a", "invalid"): 1.0, ("a", "rejected"): 2.0, ("a", "error"): 0.0,
                      ("b", "invalid"): 0.0, ("b", "rejected"): 0.0, ("b", "error"): 1.0}
    assert registry.get_sample_value("spotsched_stage_errors_total",
                                     {"stage": "scheduler", "error_type": "KeyError"}) == 1.0


def test_a_timed_policy_decides_like_the_policy_it_times(market):
    """The worker times every policy; hooks such as policy selection's settlement reach the
    policy through the timing."""
    ticks, data = market
    jobs = generate_jobs(data, 6, WorkloadSpec(seed=2))
    spec = PolicySpec.of("policy-selection", seed=1)
    metrics = PipelineMetrics(CollectorRegistry(), markets=[m.key for m in data.markets],
                              topics=(), slot_seconds=H, started=0.0)
    decided = []
    for timed in (lambda policy: policy, metrics.timed):
        pipeline = MemoryPipeline(PipelineConfig(data.markets, H, spec, timed=timed))
        for event in trace_events(ticks, jobs):
            topics = pipeline.topics
            topic = topics.job_events if isinstance(event, JobSubmitted) else topics.market_ticks
            pipeline.send(topic, dump_event(event), event.key.encode())
        decided.append([dump_event(d) for d in pipeline.decisions])
    assert decided[0] == decided[1]
    assert not any(d.release_cause == "failed" for d in pipeline.decisions)


def test_decisions_that_move_a_checkpoint_say_so_and_are_counted():
    ticks = synthetic_ticks(SyntheticMarketSpec(seed=1, n_markets=3, days=3))
    data = build_market_data(ticks, H)
    start = data.origin
    job = make_job(id="mover", workload=30.0, release=start, soft_deadline=start + 60 * H,
                   hard_deadline=start + 60 * H, n_max=1, checkpoint_gb=200.0,
                   home_region="aws/us-east-1")
    registry = CollectorRegistry()
    metrics = PipelineMetrics(registry, markets=[m.key for m in data.markets],
                              topics=("ticks",), slot_seconds=H, started=0.0)
    pipeline = MemoryPipeline(PipelineConfig(data.markets, H, PolicySpec("spot-only")),
                              observers=[metrics])
    for event in trace_events(ticks, [job]):
        ticking = not isinstance(event, JobSubmitted)
        topic = pipeline.topics.market_ticks if ticking else pipeline.topics.job_events
        pipeline.send(topic, dump_event(event), event.key.encode())
    moves = [d for d in pipeline.decisions
             if d.market_view is not None and d.market_view.move_locality is not None]
    assert moves, "the job should have moved between the three zones"
    for d in moves:
        view = d.market_view
        assert view.move_from is not None and d.action == "run"
        assert view.move_egress_usd == pytest.approx(
            200.0 * (0.0 if view.move_locality == "same-region" else 0.02))
        assert d.expected_cost_usd >= view.move_egress_usd
    counted = sum(registry.get_sample_value("spotsched_migrations_total", {"locality": loc})
                  for loc in ("same-region", "cross-region", "cross-continent", "cross-cloud"))
    assert counted == len(moves)
    assert registry.get_sample_value("spotsched_egress_usd_total") == pytest.approx(
        sum(d.market_view.move_egress_usd for d in moves))


def test_a_batch_leaves_the_figures_its_messages_leave_one_at_a_time(market):
    ticks, data = market
    jobs = generate_jobs(data, 4, WorkloadSpec(seed=1))
    pipeline = MemoryPipeline(PipelineConfig(data.markets, H, PolicySpec("greedy")))
    handled = logged(pipeline)
    for event in sorted(trace_events(ticks, jobs),
                        key=lambda e: (e.event_time, not isinstance(e, JobSubmitted))):
        topic = (pipeline.topics.job_events if isinstance(event, JobSubmitted)
                 else pipeline.topics.market_ticks)
        pipeline.send(topic, dump_event(event), event.key.encode())

    def figures(size: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        registry = CollectorRegistry()
        clock = itertools.count(1000.0)
        metrics = PipelineMetrics(registry, markets=[m.key for m in data.markets],
                                  topics=(pipeline.topics.market_ticks,), slot_seconds=H,
                                  started=0.0, clock=lambda: next(clock))
        for stage, run in itertools.groupby(handled, key=lambda taken: taken.stage):
            messages = [(message, handling) for _, _, message, handling in run]
            for at in range(0, len(messages), size):
                batch = Batch(stage, messages[at][0].topic)
                for message, handling in messages[at:at + size]:
                    batch.add(message, handling)
                metrics.observe(batch)
        return {(s.name, tuple(sorted(s.labels.items()))): s.value
                for family in registry.collect() for s in family.samples
                if not s.name.endswith("_created")}

    one_at_a_time = figures(1)
    assert one_at_a_time[("spotsched_decisions_emitted_total", ())] == len(pipeline.decisions) > 0
    assert figures(500) == one_at_a_time
