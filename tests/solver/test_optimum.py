import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from solver.job import Allocation
from solver.market import Market, MarketData
from solver.migration import DEFAULT_MIGRATION
from solver.optimize import SolverLimits, exact_dp_applies, solve_offline, solve_single_job
from solver.policies import make_policy
from solver.simulator import simulate
from tests.properties import examples
from tests.solver.brute_force import enumerate_best, plan_count
from tests.solver.helpers import HOUR, flat_data, job

SMALL = settings(max_examples=examples(10), deadline=None,
                 suppress_health_check=[HealthCheck.filter_too_much])


@st.composite
def market(draw, max_markets=2, slots=(3, 4)):
    n_markets = draw(st.integers(1, max_markets))
    n_slots = draw(st.integers(*slots))
    shape = (n_markets, n_slots)
    price = draw(st.lists(st.sampled_from([0.4, 0.9, 1.3, 2.2]), min_size=n_markets * n_slots,
                          max_size=n_markets * n_slots))
    avail = draw(st.lists(st.integers(0, 2), min_size=n_markets * n_slots,
                          max_size=n_markets * n_slots))
    slot = draw(st.sampled_from([HOUR, 195.0]))
    return flat_data(np.reshape(price, shape), np.reshape(avail, shape), slot=slot)


@st.composite
def single_job_cases(draw):
    data = draw(market())
    slot = data.slot_seconds
    n = draw(st.integers(1, 2))
    hard = data.n_slots * slot - draw(st.sampled_from([0.0, slot / 3]))
    soft = hard - draw(st.sampled_from([0.0, slot]))
    j = job(workload=round(draw(st.floats(0.1, 0.9)) * (hard / HOUR) * n, 3), soft=soft,
            hard=hard, n_min=n, n_max=n,
            restart_overhead=draw(st.sampled_from([0.0, 72.0, 720.0, 1800.0, 4000.0])),
            value=draw(st.sampled_from([0.0, 6.0, 20.0])), value_at_hard_deadline=0.0,
            miss_penalty=draw(st.sampled_from([0.0, 5.0])))
    assume(plan_count(data, [j]) <= 2500)
    return data, j


@SMALL
@given(single_job_cases())
def test_the_dynamic_program_equals_enumeration_through_the_simulator(case):
    data, j = case
    plan = solve_single_job(data, j)
    replay = simulate(data, [j], make_policy("optimum", data=data, jobs=[j]))
    assert plan.method == "dp"
    assert replay.total_utility == pytest.approx(plan.expected_utility, abs=1e-9)
    assert replay.total_utility == pytest.approx(enumerate_best(data, [j]).total_utility,
                                                 abs=1e-9)


@st.composite
def two_job_cases(draw):
    data = draw(market(slots=(3, 3)))
    data = flat_data(data.price, data.availability)  # hour slots
    jobs = []
    for k in range(2):
        n_max = draw(st.integers(1, 2))
        release = draw(st.sampled_from([0.0, HOUR]))
        hard = draw(st.integers(int(release // HOUR) + 1, 3)) * HOUR
        jobs.append(job(f"j{k}", workload=round(draw(st.floats(0.3, 2.5)), 2), release=release,
                        soft=hard, n_min=draw(st.integers(1, n_max)), n_max=n_max,
                        beta=draw(st.sampled_from([0.0, -0.1])),
                        restart_overhead=draw(st.sampled_from([0.0, 600.0, 4000.0])),
                        value=draw(st.sampled_from([3.0, 12.0])),
                        miss_penalty=draw(st.sampled_from([0.0, 4.0]))))
    assume(plan_count(data, jobs) <= 3000)
    return data, jobs


@pytest.mark.slow  # a program solved and every two-job plan enumerated, per example
@SMALL
@given(two_job_cases(), st.sampled_from(["highs", "cp-sat"]))
def test_the_integer_program_equals_enumeration_through_the_simulator(case, backend):
    data, jobs = case
    policy = make_policy("optimum", data=data, jobs=jobs, method="program", backend=backend)
    replay = simulate(data, jobs, policy)
    assert policy.plan.method == backend and policy.plan.optimal
    assert replay.total_utility == pytest.approx(enumerate_best(data, jobs).total_utility,
                                                 abs=1e-6)


def test_overhead_spanning_several_ticks_is_carried_and_billed_as_the_simulator_does():
    # Can't Be Late shape: 195 s ticks, 720 s overhead, spot flickering off in tick 5.
    avail = [[1] * 5 + [0] + [1] * 14]
    price = [[0.9 + 0.01 * t for t in range(20)]]
    data = flat_data(price, avail, on_demand=3.06, slot=195.0)
    j = job(workload=0.5, soft=20 * 195.0, restart_overhead=720.0, miss_penalty=1e3)
    plan = solve_single_job(data, j)
    replay = simulate(data, [j], make_policy("optimum", data=data, jobs=[j]))
    r = replay.jobs[0]
    assert r.hard_deadline_met
    assert -plan.expected_utility == pytest.approx(r.cost, abs=1e-12)
    # 0.5 h of work and at least one 720 s overhead need ceil((1800 + 720) / 195) = 13 ticks.
    assert len(plan.slots) >= 13


def test_the_exact_program_applies_to_one_job_at_a_fixed_count_only():
    data = flat_data([[1.0] * 4], [[1] * 4])
    assert exact_dp_applies([job(soft=4 * HOUR)], data)
    assert not exact_dp_applies([job(soft=4 * HOUR, n_max=2)], data)
    assert not exact_dp_applies([job("a", soft=4 * HOUR), job("b", soft=4 * HOUR)], data)
    with pytest.raises(ValueError, match="n_min == n_max"):
        solve_single_job(data, job(soft=4 * HOUR, n_max=2))
    with pytest.raises(ValueError, match=r"method='dp' with jobs \['a', 'b'\] competing"):
        solve_offline(data, [job("a", soft=4 * HOUR), job("b", soft=4 * HOUR)], method="dp")
    with pytest.raises(ValueError, match="method='best'"):
        solve_offline(data, [job(soft=4 * HOUR)], method="best")


def test_same_inputs_give_the_same_plan():
    rng = np.random.default_rng(3)
    data = flat_data(rng.uniform(0.3, 2.0, (2, 8)).round(2), rng.integers(0, 3, (2, 8)))
    jobs = [job("a", workload=3.0, soft=6 * HOUR, hard=8 * HOUR, n_max=2, value=20.0,
                restart_overhead=600.0),
            job("b", workload=2.0, release=HOUR, soft=8 * HOUR, value=10.0)]
    limits = SolverLimits(node_limit=500)
    for backend in ("highs", "cp-sat"):
        first = solve_offline(data, jobs, method="program", backend=backend, limits=limits)
        again = solve_offline(data, jobs, method="program", backend=backend, limits=limits)
        assert first.slots == again.slots and first.expected_utility == again.expected_utility
    single = [job(workload=2.0, soft=8 * HOUR, restart_overhead=600.0, value=9.0)]
    assert solve_offline(data, single).slots == solve_offline(data, single).slots


def test_the_optimum_replays_its_plan_and_checks_the_grid():
    data = flat_data([[1.0, 0.5, 2.0]], [[1, 1, 1]])
    j = job(workload=1.0, soft=3 * HOUR, value=5.0)
    policy = make_policy("optimum", data=data, jobs=[j])
    assert policy.plan.slots == {1: {"j": Allocation(0, 1)}}
    assert simulate(data, [j], policy).jobs[0].cost == pytest.approx(0.5)
    shifted = flat_data([[1.0, 0.5, 2.0]], [[1, 1, 1]], slot=1800.0)
    with pytest.raises(ValueError, match="expected the slot grid"):
        simulate(shifted, [job(workload=0.1, soft=3 * 1800.0)], policy)


# -- several markets, moves of the checkpoint priced --------------------------------------------

REGIONS = (("us-east-1", "us-east-1a"), ("us-east-2", "us-east-2b"), ("us-west-2", "us-west-2a"),
           ("us-east-1", "us-east-1c"))


@st.composite
def migrating_cases(draw):
    n_markets = draw(st.integers(2, 3))
    n_slots = draw(st.integers(3, 4))
    shape = (n_markets, n_slots)
    price = draw(st.lists(st.sampled_from([0.3, 0.9, 1.6]), min_size=n_markets * n_slots,
                          max_size=n_markets * n_slots))
    avail = draw(st.lists(st.integers(0, 1), min_size=n_markets * n_slots,
                          max_size=n_markets * n_slots))
    slot = draw(st.sampled_from([HOUR, 195.0]))
    zones = draw(st.permutations(REGIONS))[:n_markets]
    markets = [Market("aws", r, z, "p3.2xlarge", draw(st.sampled_from([2.0, 3.0])))
               for r, z in zones]
    data = MarketData.from_slots(markets, 0.0, slot, np.reshape(price, shape),
                                 np.reshape(avail, shape))
    hard = n_slots * slot
    gb = draw(st.sampled_from([0.0, 20.0, 300.0]))
    j = job(workload=round(draw(st.floats(0.1, 0.9)) * (hard / HOUR), 3), soft=hard,
            restart_overhead=draw(st.sampled_from([0.0, 72.0, 720.0, 4000.0])),
            value=draw(st.sampled_from([0.0, 20.0])),
            miss_penalty=draw(st.sampled_from([0.0, 5.0])),
            checkpoint_gb=gb, home_region=draw(st.sampled_from([None, "aws/us-east-1",
                                                                 "aws/us-west-2"])),
            max_hourly_usd=draw(st.sampled_from([None, 1.0, 2.5])))
    table = DEFAULT_MIGRATION.overridden_by({
        "bandwidth_gbps": {"same-region": 8.0, "cross-region": 2.0, "cross-continent": 1.0,
                           "cross-cloud": 1.0},
        "transfer_rounding_seconds": draw(st.sampled_from([0.0, 60.0]))})
    table = table.with_transfer_time(draw(st.booleans()))
    assume(plan_count(data, [j]) <= 3000)
    return data, j, table


@settings(max_examples=examples(30), deadline=None,
          suppress_health_check=[HealthCheck.filter_too_much])
@given(migrating_cases())
def test_over_several_markets_with_moves_priced_the_program_equals_enumeration(case):
    data, j, table = case
    plan = solve_single_job(data, j, table)
    replay = simulate(data, [j], make_policy("optimum", data=data, jobs=[j], migration=table),
                      migration=table)
    assert plan.method == "dp"
    assert replay.total_utility == pytest.approx(plan.expected_utility, abs=1e-9)
    best = enumerate_best(data, [j], table)
    assert replay.total_utility == pytest.approx(best.total_utility, abs=1e-9)


def test_the_program_pays_for_a_move_only_when_it_saves_more():
    # Market 1 is cheaper by 0.5 USD an hour for 4 hours: worth a 1 USD move (50 GB at 0.02),
    # not a 10 USD one (500 GB).
    markets = [Market("aws", "us-east-1", "us-east-1a", "p3.2xlarge", 3.0),
               Market("aws", "us-west-2", "us-west-2a", "p3.2xlarge", 3.0)]
    data = MarketData.from_slots(markets, 0.0, HOUR, [[1.0] * 6, [0.5] * 6], [[1] * 6] * 2)
    table = DEFAULT_MIGRATION.with_transfer_time(False)
    for gb, market in ((50.0, 1), (500.0, 0)):
        j = job(workload=4.0, soft=6 * HOUR, checkpoint_gb=gb, home_region="aws/us-east-1",
                miss_penalty=100.0)
        plan = solve_single_job(data, j, table)
        assert {a["j"].market for a in plan.slots.values()} == {market}
