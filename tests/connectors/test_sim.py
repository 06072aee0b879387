"""The simulated cloud, closed-loop in memory: the pipeline stages decide, the cloud runs the
decisions and reports back, and the outcomes are the in-process simulator's exactly."""

from __future__ import annotations

import dataclasses

import pytest

from connectors.base import FatalError, PermanentError
from connectors.sim import KnownJobs, SimConnector
from connectors.simcloud import SimulatedCloud
from connectors.store import Journal
from solver.policies import PolicySpec, make_policy
from solver.simulator import simulate
from streams.contract import (
    AvailabilityTick,
    Envelope,
    JobFinished,
    JobProgress,
    PriceTick,
    ProvisioningDecision,
    dump_event,
    parse_event,
)
from streams.pipeline.declaration import PipelineConfig
from streams.pipeline.trace_events import trace_events
from streams.runners.memory import MemoryPipeline
from tests.connectors.helpers import SLOT, Replay, decision, replay


@dataclasses.dataclass
class Loop:
    decisions: list[ProvisioningDecision]
    reported: list[Envelope]
    rejected: list[tuple[Envelope, str]]


async def closed_loop(run: Replay, policy: str, connector: SimConnector) -> Loop:
    """The replay through the pipeline, every decision through ``connector``, and every
    observation it reports published back to the topic the pipeline reads it from."""
    pipeline = MemoryPipeline(PipelineConfig(run.data.markets, SLOT, PolicySpec(policy)))
    topics = pipeline.topics
    loop = Loop([], [], [])

    def publish(event: Envelope) -> None:
        ticks = isinstance(event, PriceTick | AvailabilityTick)
        topic = topics.market_ticks if ticks else topics.job_events
        pipeline.send(topic, dump_event(event), event.key.encode())

    for event in trace_events(run.ticks, run.jobs):
        publish(event)
        while len(loop.decisions) < len(pipeline.decisions):
            made = pipeline.decisions[len(loop.decisions)]
            loop.decisions.append(made)
            for reported in (await connector.apply(made)).events:
                loop.reported.append(reported)
                publish(reported)
    loop.rejected = [(parse_event(d.original()), d.reason) for d in pipeline.dead_letters]
    return loop


@pytest.fixture(scope="module")
def run() -> Replay:
    return replay(seed=3, n_markets=3, days=6, n_jobs=16, workload_range=(4.0, 48.0),
                  tick_seconds=900.0)


@pytest.mark.parametrize("policy", ["greedy", "uniform-progress", "spot-only"])
async def test_closed_loop_outcomes_are_the_simulators(run, policy):
    cloud = SimulatedCloud(run.data)
    loop = await closed_loop(run, policy, SimConnector(cloud, KnownJobs(run.jobs)))
    expected = simulate(run.data, run.jobs, make_policy(policy))
    assert sorted(cloud.results(), key=lambda r: r.job_id) == sorted(
        expected.jobs, key=lambda r: r.job_id)
    finished = {e.job_id: e.event_time.timestamp() for e in loop.reported
                if isinstance(e, JobFinished)}
    assert finished == pytest.approx({r.job_id: r.completion for r in expected.jobs
                                      if r.completion is not None}, abs=1e-5)
    assert any(isinstance(e, JobProgress) for e in loop.reported)
    lost = [e for e in loop.reported if isinstance(e, AvailabilityTick)]
    assert (len(lost) > 0) == any(r.preemptions + r.refusals for r in expected.jobs)
    assert {e.reason for e in lost} <= {"preempted", "refused"}
    # The scheduler takes every job report; the market stage has passed each reported slot.
    assert all(isinstance(e, AvailabilityTick) and "late tick" in why for e, why in loop.rejected)


async def test_a_restarted_sim_resumes_from_its_journal_and_repeats_journalled_outcomes(
        run, tmp_path):
    path = tmp_path / "journal.sqlite3"
    decisions = (await closed_loop(run, "greedy", SimConnector(SimulatedCloud(run.data),
                                                               KnownJobs(run.jobs)))).decisions
    half = len(decisions) // 2
    first = SimConnector(SimulatedCloud(run.data), KnownJobs(run.jobs), Journal(path))
    outcomes = [await first.apply(d) for d in decisions[:half]]
    await first.close()
    cloud = SimulatedCloud(run.data)
    second = SimConnector(cloud, KnownJobs(run.jobs), Journal(path))
    assert await second.apply(decisions[half - 1]) == outcomes[-1]
    for d in decisions[half:]:
        await second.apply(d)
    await second.close()
    whole = SimulatedCloud(run.data)
    for job in run.jobs:
        whole.add_job(job)
    for d in decisions:
        whole.apply(d)
    assert sorted(cloud.results(), key=lambda r: r.job_id) == sorted(
        whole.results(), key=lambda r: r.job_id)


@pytest.fixture
def cloud(run) -> SimulatedCloud:
    cloud = SimulatedCloud(run.data)
    end = run.data.slot_start(run.data.n_slots)
    job = dataclasses.replace(run.jobs[0], id="job-1", workload=1000.0,
                              release=run.data.origin, soft_deadline=end, hard_deadline=end,
                              n_min=1, n_max=2, allowed_markets=None)
    cloud.add_job(job)
    return cloud


def epoch_of(run: Replay, slot: int) -> int:
    return round(run.data.slot_start(slot) / SLOT)


@pytest.mark.parametrize(("changes", "error", "message"), [
    ({"market": "aws/mars-1/mars-1a/p3.2xlarge"}, FatalError,
     "expected a market of the simulated cloud"),
    ({"on_demand": 3}, PermanentError, "3 instances; expected 0 or n_min=1..n_max=2"),
    ({"slot_seconds": 600.0}, FatalError, "slot_seconds=600: expected 3600"),
    ({"epoch": 10**6}, FatalError, "expected a time from"),
    ({"job_id": "nobody"}, PermanentError, "job_id='nobody': expected a job the cloud knows"),
])
def test_decisions_the_cloud_cannot_run_are_permanent_and_other_markets_fatal(
        run, cloud, changes, error, message):
    slots_per_hour = SLOT / changes.get("slot_seconds", SLOT)  # the same start either way
    base = {"epoch": round(epoch_of(run, 2) * slots_per_hour), "market": run.data.markets[0].key,
            "on_demand": 1}
    with pytest.raises(error, match=message.replace("(", r"\(")) as raised:
        cloud.apply(decision(**{**base, **changes}))
    assert (error is FatalError) == ("--trace FILE" in str(raised.value))


def test_a_decision_for_a_settled_slot_is_a_permanent_error_and_a_repeat_changes_nothing(
        run, cloud):
    key = run.data.markets[0].key
    now = decision(epoch=epoch_of(run, 3), market=key, on_demand=2)
    assert cloud.apply(now).launched == 2
    assert cloud.apply(now).launched == 0
    later = cloud.apply(decision(epoch=epoch_of(run, 4), market=key, on_demand=1))
    assert later.terminated == 1
    assert [type(e) for e in later.events] == [JobProgress]
    with pytest.raises(PermanentError, match="expected a slot not yet settled"):
        cloud.apply(decision(epoch=epoch_of(run, 3), market=key, on_demand=2, revision=1))


def test_a_release_at_the_markets_end_settles_the_last_slot(run, cloud):
    key, last = run.data.markets[0].key, run.data.n_slots - 1
    cloud.apply(decision(epoch=epoch_of(run, last), market=key, on_demand=1))
    end = epoch_of(run, last + 1)
    with pytest.raises(PermanentError, match="nothing runs after it"):
        cloud.apply(decision(epoch=end, market=key, on_demand=1))
    released = cloud.apply(decision(epoch=end, market=key, release="deadline_missed"))
    assert [type(e) for e in released.events] == [JobProgress]
    assert released.events[0].event_time.timestamp() == run.data.slot_start(last + 1)
