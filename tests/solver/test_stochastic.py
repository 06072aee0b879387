"""The stochastic dynamic program against a brute-force expectation of its own model."""

import functools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.forecast.hazards import AGE_EDGES, HazardTable, age_bucket
from solver.optimize.stochastic import (
    IDLE,
    ON_DEMAND,
    SPOT,
    SingleJob,
    SpotModel,
    solve,
    state_index,
)
from tests.properties import examples

SLOT_HOURS = 0.5


def brute_force(job: SingleJob, on, price, t, mode, capacity, age, slack, owed):
    """Expected cost minus value from boundary ``t``, by recursion over every action and every
    capacity outcome, written from the model's rules (module doc of the program), with exact
    run ages; ``inf`` when no action keeps the hard deadline."""

    def reward(at):  # the value function: full to the soft deadline, then linear
        at = min(at, job.deadline)
        if at <= job.soft:
            return job.value
        share = (at - job.soft) / (job.deadline - job.soft)
        return job.value + share * (job.value_at_hard_deadline - job.value)

    @functools.cache
    def value(t, mode, capacity, age, slack, owed):
        work = job.deadline - t - slack
        best = math.inf
        for action in (IDLE, SPOT, ON_DEMAND):
            if action == SPOT and not capacity:
                continue
            if action == IDLE:
                after, kept, paid_now = slack - 1, IDLE, 0.0
                if after < job.overhead - 1e-9:
                    continue
                cost = 0.0
            elif action == ON_DEMAND:
                paid_now = 0.0 if mode == ON_DEMAND else job.overhead
                cost = job.instances * job.on_demand_price * SLOT_HOURS
                if work + paid_now <= 1 + 1e-9:
                    best = min(best, cost - reward(t + paid_now + work))
                    continue
                after, kept = slack - paid_now, ON_DEMAND
                if after < -1e-9:
                    continue
            else:
                due = owed if mode == SPOT else job.overhead
                cost = job.instances * price[t] * SLOT_HOURS
                if slack - 1 < job.overhead - 1e-9:
                    continue
                if work + due <= 1 + 1e-9:
                    best = min(best, cost - reward(t + due + work))
                    continue
                after = slack - min(due, 1.0)
                if after < job.overhead - 1e-9:
                    continue
                kept = SPOT
            total = 0.0
            p_on = on[t, capacity, age_bucket(age)]
            for nxt, p in ((1, p_on), (0, 1 - p_on)):
                if p == 0:
                    continue
                next_age = age + 1 if nxt == capacity else 1
                next_mode = kept if (kept != SPOT or nxt) else IDLE
                next_owed = 0.0
                if kept == SPOT and nxt:
                    due = owed if mode == SPOT else job.overhead
                    next_owed = max(due - 1.0, 0.0)
                total += p * value(t + 1, next_mode, nxt, next_age, after, next_owed)
            best = min(best, cost + total)
        return best

    return value(t, mode, capacity, age, slack, owed)


def tables(draw_hazard):
    """Hazards that change with the first two age buckets only (older runs share one), so
    exact ages and the program's age buckets agree."""
    hazard = np.empty((2, len(AGE_EDGES), 1))
    for state in (0, 1):
        young, second, old = draw_hazard(), draw_hazard(), draw_hazard()
        hazard[state, 0, 0], hazard[state, 1, 0], hazard[state, 2:, 0] = young, second, old
    return HazardTable(hazard, 1, 0)


@settings(max_examples=examples(40), deadline=None)
@given(
    slots=st.integers(2, 6),
    overhead=st.sampled_from([0.0, 1.0, 2.0]),
    seed=st.integers(0, 10_000),
)
def test_the_program_equals_the_brute_force_expectation(slots, overhead, seed):
    rng = np.random.default_rng(seed)
    table = tables(lambda: float(rng.choice([0.0, 0.2, 0.5, 0.9])))
    on = table.on_probability(1, slots)
    price = rng.uniform(0.3, 2.0, slots)
    job = SingleJob(deadline=float(slots), soft=float(slots), overhead=overhead, instances=2,
                    on_demand_price=3.0, slot_hours=SLOT_HOURS, value=40.0,
                    value_at_hard_deadline=40.0, miss_penalty=100.0)
    solution = solve(job, SpotModel(on, price), max_slack=slots)
    checked = 0
    for slack in range(slots):
        for mode, capacity, age in ((IDLE, 0, 1), (IDLE, 1, 1), (IDLE, 1, 2), (ON_DEMAND, 0, 2),
                                    (ON_DEMAND, 1, 3), (SPOT, 1, 1), (SPOT, 1, 4)):
            expected = brute_force(job, on, price, 0, mode, capacity, age, float(slack), 0.0)
            if not math.isfinite(expected):
                continue
            got = solution.values[0, state_index(mode, bool(capacity)), age_bucket(age), slack]
            assert got == pytest.approx(expected, rel=1e-5, abs=1e-4)
            q = solution.action_values(0, mode, bool(capacity), age_bucket(age), float(slack))
            assert float(min(q)) == pytest.approx(expected, rel=1e-5, abs=1e-4)
            checked += 1
    assert checked > 0


def test_owed_spot_overhead_is_part_of_the_state():
    # Whole-slot overheads keep the slack on the grid, where the program is exact.
    table = tables(lambda: 0.3)
    job = SingleJob(deadline=8.0, soft=8.0, overhead=3.0, instances=1, on_demand_price=3.0,
                    slot_hours=SLOT_HOURS, value=20.0, value_at_hard_deadline=20.0,
                    miss_penalty=50.0)
    on, price = table.on_probability(1, 8), np.full(8, 0.9)
    solution = solve(job, SpotModel(on, price), max_slack=6)
    for owed in (2.0, 1.0):
        got = solution.action_values(0, SPOT, True, 0, 5.0, owed=owed)
        expected = brute_force(job, on, price, 0, SPOT, 1, 1, 5.0, owed)
        assert float(min(got)) == pytest.approx(expected, rel=1e-5, abs=1e-4)


def test_without_any_slack_to_lose_only_on_demand_is_allowed():
    table = tables(lambda: 0.5)
    job = SingleJob(deadline=4.0, soft=4.0, overhead=1.0, instances=1, on_demand_price=3.0,
                    slot_hours=SLOT_HOURS, value=20.0, value_at_hard_deadline=20.0,
                    miss_penalty=50.0)
    solution = solve(job, SpotModel(table.on_probability(1, 4), np.full(4, 0.5)), 3)
    q = solution.action_values(0, ON_DEMAND, True, 0, 0.5)
    assert not math.isfinite(q[IDLE]) and not math.isfinite(q[SPOT]) and math.isfinite(q[2])
    assert not np.isfinite(solution.action_values(0, IDLE, False, 0, 0.2)).any()  # μ is gone


@pytest.mark.parametrize("slack", [0.5, 1.5, 2.5, 3.5, 4.25])
def test_at_a_fractional_slack_the_program_is_exact_without_overheads(slack):
    # The last slot of work is billed in full: the cost-to-go is a staircase in the work left.
    # The grid ends at the slack solved for, and idling or running keeps the job on it.
    table = tables(lambda: 0.2)
    job = SingleJob(deadline=6.0, soft=4.0, overhead=0.0, instances=1, on_demand_price=3.0,
                    slot_hours=SLOT_HOURS, value=40.0, value_at_hard_deadline=20.0,
                    miss_penalty=100.0)
    on, price = table.on_probability(1, 6), np.full(6, 0.8)
    solution = solve(job, SpotModel(on, price), max_slack=slack)
    for mode, capacity in ((IDLE, 1), (SPOT, 1), (IDLE, 0), (ON_DEMAND, 0)):
        got = float(min(solution.action_values(0, mode, bool(capacity), 0, slack)))
        expected = brute_force(job, on, price, 0, mode, capacity, 1, slack, 0.0)
        assert got == pytest.approx(expected, rel=1e-5, abs=1e-4), (mode, capacity)
