"""The stages on their own: event-time rules, bounded work per tick, failed jobs, and the
order independence of the coordinator and the scheduler."""

import dataclasses
import itertools
import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver.decision import SlotDecision
from solver.forecast import market_factory
from solver.policies import make_policy
from streams.contract import (
    AvailabilityTick,
    EpochClosed,
    JobCancelled,
    JobProgress,
    MarketBoundary,
    PriceTick,
    ProvisioningDecision,
    PublishedForecast,
    dump_event,
)
from streams.pipeline.coordinator import EpochCoordinator
from streams.pipeline.driver import Driver
from streams.pipeline.market_stage import MAX_BOUNDARIES_PER_TICK, MarketStage
from streams.pipeline.scheduler import PartitionScheduler
from streams.pipeline.stage import Fault, Message, RejectedEvent, Rejection, Relayed, first_boundary
from streams.pipeline.trace_events import submission, trace_events
from tests.properties import examples
from tests.scenarios import synthetic

SLOT = 3600.0
DAY = 86_400.0


@pytest.fixture(scope="module")
def market():
    return synthetic(11, n_markets=2, days=3, n_jobs=6, slot=SLOT, workload_range=(4.0, 12.0))


@pytest.fixture(scope="module")
def epochs(market):
    """Every epoch marker of the market, in order."""
    ticks, data, _ = market
    stage, coordinator = MarketStage(data.markets, SLOT), EpochCoordinator(data.markets, SLOT)
    return [epoch for tick in trace_events(ticks, [])
            for report in stage.handle(tick) if isinstance(report, MarketBoundary)
            for epoch in coordinator.handle(report)]


def message(event, offset=0) -> Message:
    return Message("t", dump_event(event), event.key.encode(), 0, offset)


def decisions_of(outputs) -> list[tuple]:
    return [(d.epoch, d.job_id, d.market, d.spot, d.on_demand, d.reason)
            for d in outputs if isinstance(d, ProvisioningDecision)]


def feed(scheduler, events) -> list:
    out = []
    for n, event in enumerate(events):
        out += scheduler.handle(event, message(event, n))
    return out


# --- the scheduler: job events take effect by event time ---------------------------------


def job_events(market):
    """Submissions 90 min before release, a cancellation and a re-estimate mid-slot."""
    jobs = market[2]
    events = [submission(job, job.release - 5400) for job in jobs]
    first, second = jobs[0], jobs[1]
    events.append(JobCancelled(event_time=first.release + 5.5 * 3600, job_id=first.id))
    events.append(JobProgress(event_time=second.release + 2.5 * 3600, job_id=second.id,
                              work_done=0.5, remaining_work=second.workload * 2))
    return sorted(events, key=lambda e: e.event_time)


def in_event_time_order(events, epochs):
    """Job events and markers merged by time; an event at a boundary precedes its marker."""
    keyed = [(e.event_time.timestamp(), 0, n, e) for n, e in enumerate(events)]
    keyed += [(m.event_time.timestamp(), 1, n, m) for n, m in enumerate(epochs)]
    return [e for *_, e in sorted(keyed, key=lambda k: k[:3])]


@settings(max_examples=examples(25), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_job_events_take_effect_by_event_time_whatever_their_arrival(market, epochs, data):
    events = job_events(market)
    policy = lambda: make_policy("greedy")  # noqa: E731
    expected = decisions_of(feed(PartitionScheduler(market[1].markets, SLOT, policy),
                                 in_event_time_order(events, epochs)))
    # Each job event arrives at any point before the marker of its epoch (job events keep
    # their own order): as early as the producer may send it, however far behind the markers.
    boundaries = [m.event_time.timestamp() for m in epochs]
    arrival, placed = 0, {}
    for event in events:
        due = boundaries.index(first_boundary(event.event_time.timestamp(), SLOT))
        arrival = data.draw(st.integers(arrival, due))
        placed.setdefault(arrival, []).append(event)
    shuffled = [e for n, marker in enumerate(epochs) for e in [*placed.get(n, []), marker]]
    assert decisions_of(feed(PartitionScheduler(market[1].markets, SLOT, policy),
                             shuffled)) == expected


def test_a_cancellation_takes_effect_at_the_first_boundary_after_it(market, epochs):
    _, data, jobs = market
    job = jobs[0]
    start = first_boundary(job.release, SLOT)
    cancel = JobCancelled(event_time=start + 1.5 * SLOT, job_id=job.id)
    scheduler = PartitionScheduler(data.markets, SLOT, lambda: make_policy("on-demand"))
    out = feed(scheduler, [submission(job, job.release)])
    for marker in epochs:
        if marker.event_time.timestamp() == start:
            out += scheduler.handle(cancel, message(cancel))  # arrives far ahead of its epoch
        out += scheduler.handle(marker)
    mine = [d for d in decisions_of(out) if d[1] == job.id]
    released = [d for d in mine if d[5] == "released: cancelled"]
    assert [d[0] for d in released] == [round((start + 2 * SLOT) / SLOT)]
    assert all(d[4] > 0 for d in mine if d[0] < released[0][0])


def test_a_job_too_late_for_its_first_epoch_is_rejected_however_far_the_epochs_are(market, epochs):
    _, data, jobs = market
    submitted_at = epochs[3].event_time.timestamp() - 600  # epoch 3 is the first after it
    late = dataclasses.replace(jobs[0], id="late", release=submitted_at - 3600,
                               soft_deadline=submitted_at, hard_deadline=submitted_at + 300)
    event = submission(late, submitted_at)
    for seen in (0, 2):  # a scheduler that has seen no epoch, or two before the submission
        scheduler = PartitionScheduler(data.markets, SLOT, lambda: make_policy("greedy"))
        feed(scheduler, epochs[:seen])
        with pytest.raises(RejectedEvent, match=r"hard_deadline=.*expected a time after"):
            scheduler.handle(event)


def test_events_before_their_jobs_submission_are_rejected(market):
    _, data, jobs = market
    scheduler = PartitionScheduler(data.markets, SLOT, lambda: make_policy("greedy"))
    job = jobs[0]
    scheduler.handle(submission(job, job.release))
    with pytest.raises(RejectedEvent, match="at or after the job's submission"):
        scheduler.handle(JobCancelled(event_time=job.release - 60, job_id=job.id))


# --- the scheduler: a job that cannot be decided fails alone ------------------------------


class FailsOn:
    """Greedy, but raises whenever ``bad`` is among the jobs it is asked about."""

    name = "greedy"

    def __init__(self, bad: str) -> None:
        self.bad = bad
        self.policy = make_policy("greedy")

    def decide(self, obs):
        if any(view.id == self.bad for view in obs.jobs):
            raise ZeroDivisionError("cannot plan it")
        return self.policy.decide(obs)


def test_a_job_the_policy_fails_on_is_failed_and_the_others_decided_as_without_it(
        market, epochs):
    _, data, jobs = market
    bad = jobs[2]
    events = [submission(j, j.release) for j in jobs]
    without = feed(PartitionScheduler(data.markets, SLOT, lambda: make_policy("greedy")),
                   in_event_time_order([e for e in events if e.job_id != bad.id], epochs))
    out = feed(PartitionScheduler(data.markets, SLOT, lambda: FailsOn(bad.id)),
               in_event_time_order(events, epochs))
    assert [d for d in decisions_of(out) if d[1] != bad.id] == decisions_of(without)
    (failed,) = [d for d in decisions_of(out) if d[1] == bad.id]
    assert failed[3:5] == (0, 0) and failed[5].startswith(
        "released: failed: policy 'greedy' failed on it: ZeroDivisionError: cannot plan it")
    (rejected,) = [r for r in out if isinstance(r, Rejection)]
    assert rejected.message.value == dump_event(events[2])
    assert f"job {bad.id!r} failed at epoch {failed[0]}" in str(rejected.error)
    (fault,) = [o for o in out if isinstance(o, Fault)]  # raised on every job together, once
    assert fault.stage == "scheduler" and isinstance(fault.error, ZeroDivisionError)


def test_a_job_whose_decision_cannot_be_built_is_failed(market, epochs, monkeypatch):
    _, data, jobs = market
    real = SlotDecision.explain

    def explain(decided, job_id):
        if job_id == jobs[1].id:
            return dataclasses.replace(real(decided, job_id), slack_seconds=-math.inf)
        return real(decided, job_id)

    monkeypatch.setattr(SlotDecision, "explain", explain)
    scheduler = PartitionScheduler(data.markets, SLOT, lambda: make_policy("greedy"))
    out = feed(scheduler, in_event_time_order(
        [submission(j, j.release) for j in jobs], epochs))
    mine = [d for d in decisions_of(out) if d[1] == jobs[1].id]
    assert len(mine) == 1 and mine[0][5].startswith(
        "released: failed: its decision could not be built: ValidationError")
    assert scheduler.engine.job_state(jobs[1].id).failure is not None
    others = {d[1] for d in decisions_of(out)} - {jobs[1].id}
    assert others == {j.id for j in jobs} - {jobs[1].id}


# --- the market stage: no tick freezes a market or loops over empty slots -----------------


def ticks_of(key: str, start: float, count: int, step: float = 600.0):
    for n in range(count):
        t = start + n * step
        yield PriceTick(event_time=t, market=key, spot_price=1.0 + n % 3)
        yield AvailabilityTick(event_time=t, market=key, available=2)


def run_stage(stage, ticks):
    out = []
    for n, tick in enumerate(ticks):
        try:
            out += stage.handle(tick, message(tick, n))
        except RejectedEvent as exc:
            out.append(Rejection(message(tick, n), exc))
    return out


def boundaries(outputs) -> list:
    return [dump_event(b) for b in outputs if isinstance(b, MarketBoundary)]


@pytest.mark.parametrize("poison_first", [False, True])
def test_a_far_future_tick_never_freezes_its_market(market, poison_first):
    _, data, _ = market
    key, t0 = data.markets[0].key, data.origin
    good = list(ticks_of(key, t0, 60))
    far = PriceTick(event_time=t0 + 365 * DAY, market=key, spot_price=9.0)
    poisoned = [far, *good] if poison_first else [*good[:30], far, *good[30:]]
    expected = boundaries(run_stage(MarketStage(data.markets, SLOT), good))
    out = run_stage(MarketStage(data.markets, SLOT), poisoned)
    assert boundaries(out) == expected and len(expected) >= 9
    (rejected,) = [r for r in out if isinstance(r, Rejection)]
    assert rejected.message.value == dump_event(far)


def test_a_tick_may_not_pass_more_boundaries_than_the_bound(market):
    _, data, _ = market
    key, t0 = data.markets[0].key, data.origin
    stage = MarketStage(data.markets, 60.0, max_future_skew=400 * DAY)
    run_stage(stage, ticks_of(key, t0, 3, step=61.0))
    with pytest.raises(RejectedEvent, match=f"at most {MAX_BOUNDARIES_PER_TICK:,}"):
        stage.handle(PriceTick(event_time=t0 + 365 * DAY, market=key, spot_price=1.0))
    after = stage.handle(PriceTick(event_time=t0 + 3 * 61.0, market=key, spot_price=1.0))
    assert [b.event_time.timestamp() for b in after if isinstance(b, MarketBoundary)] == [
        first_boundary(t0 + 3 * 61.0, 60.0) - 60.0]


def test_ticks_ahead_of_the_stage_by_more_than_the_skew_are_rejected(market):
    _, data, _ = market
    first, second = (m.key for m in data.markets)
    stage = MarketStage(data.markets, SLOT, max_future_skew=DAY)
    run_stage(stage, ticks_of(first, data.origin, 20))
    assert stage.event_time is not None
    with pytest.raises(RejectedEvent, match="more than max_future_skew=86400 s ahead"):
        stage.handle(PriceTick(event_time=stage.event_time + DAY + 1, market=second,
                               spot_price=1.0))
    assert stage.handle(PriceTick(event_time=stage.event_time + DAY - 1, market=second,
                                  spot_price=1.0)) == []


def test_a_forecaster_that_raises_is_restarted_and_the_boundary_stands(market):
    _, data, _ = market

    class Broken:
        """Forecasts like the real one, and fails to learn."""

        def __init__(self, season, horizon):
            self.real = market_factory()(season, horizon)

        def learn_one(self, price, availability):
            raise FloatingPointError("diverged")

        def outlook(self, horizon):
            return self.real.outlook(horizon)

    stage = MarketStage(data.markets, SLOT, forecaster=Broken)
    out = run_stage(stage, ticks_of(data.markets[0].key, data.origin, 20))
    faults = [o for o in out if isinstance(o, Fault)]
    forecasts = [o for o in out if isinstance(o, PublishedForecast)]
    # A fresh forecaster forecasts at its first boundary and fails at the next: the
    # boundaries alternate between a forecast and a fault, and every boundary stands.
    assert len(boundaries(out)) == 4 and len(faults) == len(forecasts) == 2
    assert all(isinstance(f.error, FloatingPointError) and f.stage == "market" for f in faults)


# --- the coordinator: the order of reports does not matter --------------------------------


def test_epochs_do_not_depend_on_how_markets_interleave(market, epochs):
    ticks, data, _ = market
    stage = MarketStage(data.markets, SLOT)
    reports = [r for r in itertools.chain.from_iterable(
        stage.handle(t) for t in trace_events(ticks, [])) if isinstance(r, MarketBoundary)]
    first, second = ([r for r in reports if r.market == m.key] for m in data.markets)
    one_then_other = first + second  # a market-ticks partition far behind the other
    coordinator = EpochCoordinator(data.markets, SLOT)
    closed = [e for r in one_then_other for e in coordinator.handle(r)]
    assert [dump_event(e) for e in closed] == [dump_event(e) for e in epochs]


def test_a_market_that_missed_the_slot_counts_as_without_capacity(market):
    _, data, _ = market
    a, b = (m.key for m in data.markets)
    coordinator = EpochCoordinator(data.markets, SLOT)
    t = first_boundary(data.origin, SLOT)

    def report(key, at, price):
        return MarketBoundary(event_time=at, market=key, slot_seconds=SLOT, price=price,
                              availability=None if price is None else 3, price_now=2.0,
                              availability_now=4)

    for key in (a, b):
        coordinator.handle(report(key, t, None))
    coordinator.handle(report(a, t + SLOT, 1.5))
    (epoch,) = coordinator.handle(report(b, t + SLOT, None))
    assert isinstance(epoch, EpochClosed)
    assert epoch.price == (1.5, 2.0) and epoch.availability == (3, 0)


@pytest.mark.parametrize(("changes", "message"), [
    ({"slot_seconds": 600.0}, "slot_seconds=600: expected 3600"),
    ({"event_time": 1_736_121_601.0}, "expected a slot boundary"),
    ({"market": "aws/x/y/z"}, "expected a market of the catalogue"),
])
def test_reports_the_coordinator_cannot_use_are_rejected_and_change_nothing(market, changes,
                                                                            message):
    _, data, _ = market
    coordinator = EpochCoordinator(data.markets, SLOT)
    base = {"event_time": 1_736_121_600.0, "market": data.markets[0].key, "slot_seconds": SLOT,
            "price_now": 1.0, "availability_now": 1}
    with pytest.raises(RejectedEvent, match=message):
        coordinator.handle(MarketBoundary(**{**base, **changes}))
    assert coordinator._open == {} and coordinator.last_boundary is None


def test_the_coordinator_relays_forecasts_as_they_came_and_schedulers_read_them(market):
    ticks, data, _ = market
    stage = MarketStage(data.markets, SLOT)
    reports = [r for t in trace_events(ticks, []) for r in stage.handle(t)
               if isinstance(r, PublishedForecast | MarketBoundary)]
    forecasts = [r for r in reports if isinstance(r, PublishedForecast)]
    unreadable = json.loads(dump_event(forecasts[0]))
    unreadable["outlook"]["price"] = "no quantiles"
    wire = {id(forecasts[0]): json.dumps(unreadable).encode()}
    coordinator, relayed = Driver(EpochCoordinator(data.markets, SLOT)), []
    for offset, report in enumerate(reports):
        handling = coordinator.process(Message("b", wire.get(id(report), dump_event(report)),
                                               report.key.encode(), 0, offset))
        assert not handling.rejections
        relayed += [out for out in handling.outputs if isinstance(out, Relayed)]
    closed = coordinator.stage.last_boundary
    order = [m.key for m in data.markets]
    assert [r.value for r in relayed] == [
        wire.get(id(f), dump_event(f)) for f in sorted(
            forecasts, key=lambda f: (f.event_time, order.index(f.market)))
        if f.event_time.timestamp() <= closed]
    scheduler = Driver(PartitionScheduler(data.markets, SLOT, lambda: make_policy("greedy")))
    (rejected,) = scheduler.process(Message("j", relayed[0].value, b"", 0, 0)).rejections
    assert "outlook" in str(rejected.error)
    assert not scheduler.process(Message("j", relayed[1].value, relayed[1].event.key.encode(),
                                         0, 1)).rejections
