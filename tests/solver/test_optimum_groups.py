"""The hindsight optimum split into jobs that compete for spot capacity and jobs that do not."""

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from solver.optimize import solve_offline
from solver.optimize.competition import competing_groups
from solver.policies import make_policy
from solver.simulator import simulate
from tests.properties import examples
from tests.solver.brute_force import enumerate_best, plan_count
from tests.solver.helpers import HOUR, crowded, flat_data, job


def ids(groups):
    return [[j.id for j in g] for g in groups]


def test_jobs_compete_only_where_their_spot_could_exceed_a_market_slot():
    data = flat_data([[1.0] * 4, [1.0] * 4], [[2, 2, 1, 0], [0, 0, 0, 0]])
    a = job("a", workload=1.0, soft=2 * HOUR)
    b = job("b", workload=1.0, soft=2 * HOUR)
    late = job("late", workload=1.0, release=2 * HOUR, soft=4 * HOUR)
    assert ids(competing_groups([a, b, late], data)) == [["a"], ["b"], ["late"]]
    # a third job in slots 0-1 makes the capacity of 2 bind for every one of them
    c = job("c", workload=1.0, soft=2 * HOUR)
    assert ids(competing_groups([a, late, b, c], data)) == [["a", "b", "c"], ["late"]]
    # with it kept off spot or off market 0, the others fit in the capacity
    off_spot = job("c", workload=1.0, soft=2 * HOUR, allow_spot=False)
    assert ids(competing_groups([a, off_spot, b], data)) == [["a"], ["c"], ["b"]]
    only_1 = job("c", workload=1.0, soft=2 * HOUR, allowed_markets=(data.markets[1].key,))
    assert ids(competing_groups([a, only_1, b], data)) == [["a"], ["c"], ["b"]]
    # no spot at all (market 1): nothing to compete for
    b2 = job("b", workload=1.0, release=3 * HOUR, soft=4 * HOUR)
    assert ids(competing_groups([late, b2], data)) == [["late"], ["b"]]
    # a demand over one instance counts up to what the slot has
    wide = job("w", workload=1.0, soft=2 * HOUR, n_max=4, n_min=4)
    assert ids(competing_groups([wide], data)) == [["w"]]
    assert ids(competing_groups([wide, a], data)) == [["w", "a"]]


@st.composite
def non_competing_cases(draw):
    """Fixed-count jobs on one market whose capacity holds all of them at once."""
    n_slots = 3
    n_jobs = draw(st.integers(2, 3))
    price = draw(st.lists(st.sampled_from([0.4, 1.3, 2.2]), min_size=n_slots, max_size=n_slots))
    avail = draw(st.lists(st.sampled_from([0, n_jobs]), min_size=n_slots, max_size=n_slots))
    data = flat_data([price], [avail])
    jobs = [job(f"j{k}", workload=draw(st.sampled_from([0.5, 1.0, 2.0])),
                release=draw(st.sampled_from([0.0, HOUR])), soft=n_slots * HOUR,
                restart_overhead=draw(st.sampled_from([0.0, 600.0])),
                value=draw(st.sampled_from([3.0, 12.0])),
                miss_penalty=draw(st.sampled_from([0.0, 4.0])))
            for k in range(n_jobs)]
    assume(plan_count(data, jobs) <= 3000)
    return data, jobs


@settings(max_examples=examples(10), deadline=None,
          suppress_health_check=[HealthCheck.filter_too_much])
@given(non_competing_cases())
def test_jobs_that_do_not_compete_get_the_dynamic_program_and_the_joint_programs_utility(case):
    data, jobs = case
    auto = make_policy("optimum", data=data, jobs=jobs)
    joint = make_policy("optimum", data=data, jobs=jobs, method="program")
    assert auto.plan.method == "dp" and auto.plan.optimal and auto.plan.gap == 0.0
    assert joint.plan.optimal
    utility = simulate(data, jobs, auto).total_utility
    assert utility == pytest.approx(simulate(data, jobs, joint).total_utility, abs=1e-6)
    assert utility == pytest.approx(enumerate_best(data, jobs).total_utility, abs=1e-6)


def test_competing_jobs_past_the_limit_get_the_best_plan_found_and_its_proven_gap():
    data, jobs = crowded()
    best = enumerate_best(data, jobs).total_utility
    stopped = make_policy("optimum:time_limit=0", data=data, jobs=jobs)
    assert stopped.plan.method == "sequential"
    assert not stopped.plan.optimal
    utility = simulate(data, jobs, stopped).total_utility
    assert utility == pytest.approx(stopped.plan.expected_utility, abs=1e-9)
    assert utility < best - 1.0  # first took market 0's cheap spot second needed
    assert utility + stopped.plan.gap >= best - 1e-6
    searched = make_policy("optimum:time_limit=5", data=data, jobs=jobs)
    assert searched.plan.optimal and searched.plan.gap == 0.0
    assert simulate(data, jobs, searched).total_utility == pytest.approx(best, abs=1e-6)


def test_the_optimum_of_competing_jobs_is_the_same_plan_twice():
    data, jobs = crowded()
    jobs = [*jobs, job("third", workload=1.0, release=HOUR, soft=3 * HOUR, value=8.0)]
    for limit in (0.0, 0.5):
        first = solve_offline(data, jobs, time_limit=limit)
        again = solve_offline(data, jobs, time_limit=limit)
        assert (first.slots, first.expected_utility, first.gap) == \
            (again.slots, again.expected_utility, again.gap)


def test_a_negative_time_limit_is_refused_naming_it():
    data, jobs = crowded()
    with pytest.raises(ValueError, match=r"time_limit=-1.0: expected deterministic seconds"):
        make_policy("optimum:time_limit=-1", data=data, jobs=jobs)
    with pytest.raises(ValueError, match="time_limit='soon': expected a number"):
        make_policy("optimum:time_limit=soon", data=data, jobs=jobs)
