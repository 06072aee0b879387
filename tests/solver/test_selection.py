import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.experts import Exp3
from solver.job import JobResult
from solver.market import MarketData
from solver.policies import PolicySpec, check_spec, make_policy
from solver.policies.selection import (
    DEFAULT_POOL,
    PolicySelection,
    Selector,
    on_demand_bill,
    round_losses,
)
from solver.policies.spec import format_pool, parse_pool
from solver.simulator import simulate
from tests.properties import examples
from tests.scenarios import LARGER, scenarios
from tests.solver.helpers import HOUR, flat_data, job, markets

POOL = (PolicySpec("prediction-free"), PolicySpec("greedy"), PolicySpec("uniform-progress"),
        PolicySpec("on-demand"), PolicySpec("spot-only"))
FALLBACK = "prediction-free"


def selection(seed=0, learner="hedge", **kw):
    kw.setdefault("fallback", FALLBACK)
    return make_policy("policy-selection", pool=format_pool(POOL), seed=seed, learner=learner, **kw)


def run(data, jobs, policy):
    return simulate(data, jobs, policy, until_end=True)


SCENARIOS = scenarios(**{**LARGER, "slots": (6, 30), "jobs": (1, 5), "values": (0.0, 50.0)},
                      release_offsets=(0.0, 900.0))
"""Scenarios of up to five jobs, released mid-slot too, worth nothing or 50."""


@settings(max_examples=examples(60), deadline=None)
@given(SCENARIOS, st.integers(0, 2**16))
def test_members_stay_within_instance_bounds_and_availability(scenario, seed):
    data, jobs = scenario
    policy = selection(seed)
    result = run(data, jobs, policy)  # the simulator rejects answers outside the model
    assert np.all(result.spot_used <= data.availability)
    for _, job_id, allocation in result.decisions:
        j = next(j for j in jobs if j.id == job_id)
        assert allocation.total == 0 or j.n_min <= allocation.total <= j.n_max
    # Rounds are the jobs the policy saw: those active in at least one slot.
    seen = [j for j in jobs if np.ceil(j.release / HOUR) * HOUR < j.hard_deadline]
    assert policy.selector.trace.rounds == len(seen) == len(policy.selector.settled)
    losses = np.array([s.losses for s in policy.selector.settled]).reshape(-1, len(POOL))
    assert np.all((losses >= 0) & (losses <= 1))
    assert np.all(losses.min(axis=1) == 0)


def market_and_jobs():
    rng = np.random.default_rng(3)
    data = flat_data(rng.uniform(0.5, 2.0, (2, 60)), rng.integers(0, 3, (2, 60)))
    jobs = [job(f"j{k}", workload=float(rng.uniform(2, 10)), release=k * 4 * HOUR,
                soft=k * 4 * HOUR + 20 * HOUR, hard=k * 4 * HOUR + 24 * HOUR, n_max=2,
                value=40.0, value_at_hard_deadline=20.0, miss_penalty=40.0,
                restart_overhead=600.0)
            for k in range(9)]
    return data, jobs


def test_same_seed_same_decisions_and_regret():
    data, jobs = market_and_jobs()
    first, second, other = selection(5), selection(5), selection(6)
    a, b = run(data, jobs, first), run(data, jobs, second)
    assert a.decisions == b.decisions
    assert first.selector.trace.regret == second.selector.trace.regret
    assert [s.played for s in first.selector.settled] == [s.played
                                                           for s in second.selector.settled]
    run(data, jobs, other)
    assert [s.played for s in other.selector.settled] != [s.played
                                                           for s in first.selector.settled]


def test_rounds_settle_once_every_shadow_is_done_with_losses_of_the_past_only():
    data, jobs = market_and_jobs()
    policy = selection(1)
    simulate(data, jobs, policy)
    settled = [s.job_id for s in policy.selector.settled]
    assert sorted(settled) == sorted(set(settled)) and settled
    # Another future after the first settled job's hard deadline leaves its losses unchanged.
    first = next(j for j in jobs if j.id == settled[0])
    cut = int(first.hard_deadline // HOUR)
    price, avail = np.array(data.price), np.array(data.availability)
    price[:, cut:] = 2.5
    avail[:, cut:] = 0
    other = selection(1)
    simulate(flat_data(price, avail), jobs, other)
    assert other.selector.settled[0].job_id == first.id
    assert np.array_equal(other.selector.settled[0].losses, policy.selector.settled[0].losses)


def test_each_shadow_bills_what_its_member_alone_would_have():
    data = flat_data(np.linspace(0.6, 2.4, 3 * 30).reshape(3, 30),
                     (np.arange(90).reshape(3, 30) % 5 > 1).astype(int))
    keys = [m.key for m in data.markets]
    jobs = [job(f"j{k}", workload=6.0, release=k * HOUR, soft=(k + 14) * HOUR, n_max=2,
                value=60.0, miss_penalty=60.0, restart_overhead=600.0,
                allowed_markets=(keys[k],)) for k in range(3)]
    policy = selection(4)
    run(data, jobs, policy)
    by_job = {s.job_id: s for s in policy.selector.settled}
    for k, member in enumerate(POOL):
        alone = {r.job_id: r for r in simulate(data, jobs, make_policy(member)).jobs}
        for j in jobs:
            assert by_job[j.id].costs[k] == pytest.approx(alone[j.id].cost)
            assert bool(by_job[j.id].met[k]) == alone[j.id].hard_deadline_met


def test_hedge_settles_on_the_member_that_is_best_every_round():
    data = flat_data([[0.5] * 80], [[1] * 80])
    jobs = [job(f"j{k}", workload=2.0, release=k * 2 * HOUR, soft=(k * 2 + 6) * HOUR,
                value=30.0, miss_penalty=30.0) for k in range(36)]
    policy = make_policy("policy-selection", pool="on-demand+spot-only",
                         fallback="on-demand", seed=0)
    run(data, jobs, policy)
    p = policy.selector.learner.probabilities()
    assert p[1] > 0.95  # spot-only, with spot always there at a sixth of the price
    late = [s.played for s in policy.selector.settled[-12:]]
    assert late.count(1) >= 11


def test_fallback_takes_new_jobs_while_the_forecast_error_is_high():
    data, jobs = market_and_jobs()
    switch = jobs[4].release

    def error(obs):
        return 0.5 if obs.time >= switch else 0.0

    policy = selection(2, forecast_error=error, error_threshold=0.2)
    run(data, jobs, policy)
    fallback = policy.selector.index(FALLBACK)
    for s, j in zip(policy.selector.settled, jobs, strict=True):
        assert s.fallback == (j.release >= switch)
        if s.fallback:
            assert s.played == fallback
    assert any(not s.fallback and s.played != fallback for s in policy.selector.settled)


def test_exp3_learns_only_from_its_own_draws():
    data, jobs = market_and_jobs()
    policy = selection(3, learner="exp3", forecast_error=lambda obs: 1.0, error_threshold=0.5)
    run(data, jobs, policy)
    drawn_fallback = sum(s.played == policy.selector.index(FALLBACK)
                         for s in policy.selector.settled)
    assert policy.selector.trace.rounds == len(jobs)
    assert policy.selector.learner.rounds < len(jobs) or drawn_fallback == len(jobs)


def test_losses_are_shares_of_the_on_demand_bill_below_the_best_member():
    j = job(workload=4.0, n_max=2, beta=-0.1, restart_overhead=360.0)
    bill = on_demand_bill(j, markets(2, on_demand=3.0))
    assert bill == pytest.approx(2 * 3.0 * (0.1 + 4.0 / 1.9))
    losses = round_losses(np.array([10.0, 10.0 - bill / 8, -1000.0]), bill, 0.25)
    assert losses.tolist() == pytest.approx([0.0, 0.5, 1.0])


def test_members_asking_for_the_same_spot_are_spread_over_markets_with_room():
    data = flat_data([[1.0] * 6, [1.5] * 6, [1.2] * 6], [[1] * 6, [1] * 6, [0] * 6])
    a = job("a", workload=3.0, soft=5 * HOUR)
    b = job("b", workload=3.0, soft=6 * HOUR)
    # Neither member knows the other's job (nor does greedy track its own jobs' claims).
    pool = (PolicySpec("greedy"), PolicySpec("spot-only"))
    policy = make_policy("policy-selection", pool=format_pool(pool), fallback="greedy")
    result = run(data, [a, b], policy)
    first = {job_id: alloc for t, job_id, alloc in result.decisions if t == 0}
    assert first["a"].market == 0 and first["b"].market == 1
    assert all(r.refusals == 0 for r in result.jobs)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Selector(()), "pool: expected at least one member"),
        (lambda: Selector(POOL + POOL[:1]), "duplicate members"),
        (lambda: Selector(POOL, learner="ucb"), "learner='ucb'"),
        (lambda: Selector(POOL, loss_scale=0.0), "loss_scale=0.0"),
        (lambda: selection(fallback="chc"), "fallback=chc: expected a member of the pool"),
        (lambda: make_policy("policy-selection:rate=0"), "rate scale=0.0"),
        (lambda: make_policy("policy-selection", error_threshold=float("nan")),
         "error_threshold=nan"),
    ],
)
def test_bad_configuration_is_rejected_naming_the_field(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_registered_default_runs_without_arguments():
    data, jobs = market_and_jobs()
    policy = make_policy("policy-selection")
    assert isinstance(policy, PolicySelection)
    result = simulate(data, jobs[:2], policy, until_end=True)
    assert all(isinstance(r, JobResult) for r in result.jobs)
    assert isinstance(data, MarketData)


def test_a_pool_is_written_as_one_spec_parameter_and_read_back():
    text = "risk-aware+prediction-free(sigma=0.5)+chc(commitment=2;window_hours=12)"
    members = parse_pool(text)
    assert members == (PolicySpec("risk-aware"), PolicySpec.of("prediction-free", sigma="0.5"),
                       PolicySpec.of("chc", window_hours="12", commitment="2"))
    assert format_pool(members) == text
    policy = make_policy(f"policy-selection:pool={text},fallback=chc(window_hours=12;"
                         "commitment=2),seed=3")
    assert [str(m) for m in policy.selector.pool] == [
        "risk-aware", "prediction-free:sigma=0.5", "chc:commitment=2,window_hours=12"]
    assert policy.fallback == "chc(commitment=2;window_hours=12)"
    assert policy.fallback_member == 2


def test_the_learning_state_of_a_spec_is_what_the_policy_itself_builds():
    spec = PolicySpec.parse(f"policy-selection:pool={format_pool(POOL)},learner=exp3,"
                            "rate=2,loss_scale=0.2,fallback=prediction-free")
    state = Selector.of(spec, seed=3)
    own = make_policy(spec, seed=3).selector
    assert state.pool == own.pool == POOL
    assert type(state.learner) is type(own.learner) is Exp3
    assert state.learner.scale == own.learner.scale == 2.0
    assert state.loss_scale == own.loss_scale == 0.2
    assert state.rng.random() == own.rng.random()
    assert Selector.of(PolicySpec.parse("policy-selection:seed=5"), seed=3).rng.random() == (
        Selector(seed=5).rng.random())
    assert Selector.of(PolicySpec("policy-selection")).pool == DEFAULT_POOL


@pytest.mark.parametrize("pool, message", [
    ("greedy+nope", "pool member nope: policy='nope': expected one of"),
    ("greedy+chc(window=3)", "pool member chc:window=3: policy chc: parameter 'window'"),
    ("greedy+chc(window_hours=3", "expected NAME or NAME(key=value;...)"),
])
def test_a_bad_pool_member_is_named_in_the_error(pool, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        check_spec(f"policy-selection:pool={pool},fallback=greedy")


def test_a_bad_pool_member_is_named_before_a_fallback_outside_the_pool():
    with pytest.raises(ValueError, match=re.escape("pool member foo: policy='foo'")):
        check_spec("policy-selection:pool=risk-aware+foo")
