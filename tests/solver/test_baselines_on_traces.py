"""Baselines on the Can't Be Late availability traces (slots = the traces' 195 s ticks)."""

import math
import random

import pytest

from solver.job import Job
from solver.market import tick_slots
from solver.policies.baselines import Greedy, OnDemandOnly, UniformProgress
from solver.simulator import simulate
from tests.traces_dir import needs_traces, traces_dir

pytestmark = [pytest.mark.traces, needs_traces]

TICK = 195.0
WINDOW = 1145  # 62 hours of ticks


def windows():
    from solver.traces import load_trace

    folder = traces_dir() / "skypilot-spot-traces/availability/1-node/aws-02-15-2023"
    starts = sorted(random.Random(0).sample(range(0, 20158 - WINDOW + 1), 4))
    for path in sorted(folder.glob("*.json")):
        data = tick_slots(load_trace(path), TICK)
        for start in starts:
            yield path.stem, data.window(start, WINDOW)


def job(data, task_h, slack_h, overhead_h):
    deadline = data.origin + (task_h + slack_h) * 3600
    return Job(id="j", workload=task_h, release=data.origin, soft_deadline=deadline,
               hard_deadline=deadline, restart_overhead=overhead_h * 3600, value=1000.0,
               miss_penalty=1000.0)


@pytest.mark.slow  # 192 simulations over every zone's trace
@pytest.mark.parametrize("overhead_h", [0.02, 0.2])
def test_uniform_progress_meets_the_deadline_whenever_slack_exceeds_the_overhead(overhead_h):
    slacks = (overhead_h + 2 * TICK / 3600, 1.0, 4.0, 12.0)
    outcomes = [
        simulate(data, [job(data, 48.0, slack, overhead_h)], policy).jobs[0]
        for _, data in windows()
        for slack in slacks
        for policy in (UniformProgress(), Greedy())
    ]
    assert len(outcomes) == 6 * 4 * len(slacks) * 2
    assert all(r.hard_deadline_met for r in outcomes)
    # Spot was really used: the traces' availability is not all-or-nothing.
    assert sum(r.spot_instance_hours for r in outcomes) > 0.3 * 48 * len(outcomes)


def test_on_demand_only_pays_every_tick_it_runs_as_the_reference_simulator_does():
    _, data = next(windows())
    result = simulate(data, [job(data, 48.0, 4.0, 0.02)], OnDemandOnly()).jobs[0]
    ticks = math.ceil((48 * 3600 + 72) / TICK)
    assert result.cost == pytest.approx(ticks * TICK / 3600 * 3.06)
    assert round(result.cost, 2) == 147.02
