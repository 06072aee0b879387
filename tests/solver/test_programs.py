"""The stochastic programs of fixed-count jobs: what they plan on and when they are solved."""

from dataclasses import replace
from itertools import pairwise
from types import SimpleNamespace

import numpy as np
import pytest

from solver.forecast.hazards import AGE_EDGES, HazardTable
from solver.forecast.levels import LevelModel
from solver.forecast.outlook import CapacityForecast, MarketOutlook
from solver.job import Allocation
from solver.optimize import stochastic
from solver.policies import make_policy
from solver.policies.forecast_sources import DistributionForecast
from solver.policies.prediction_free import spot_order
from solver.policies.stochastic_planner import POOLED_SHARE, SOLVE_WORK, StochasticPlanner
from solver.simulator import simulate
from tests.solver.helpers import HOUR, flat_data, job


def outlook(shares, persistence):
    hazard = np.random.default_rng(0).uniform(0.05, 0.5, (2, len(AGE_EDGES), 3))
    return MarketOutlook(
        price=np.ones((5, 4)), capacity=CapacityForecast(np.ones(4), np.ones((4, 1))),
        levels=LevelModel(np.array(shares, float), 1, persistence),
        hazards=HazardTable(hazard, 24, 5), run=None)


def test_one_instance_plans_on_the_run_hazards_alone():
    """Any capacity is enough for one instance: how often the market offers more, and how
    long it keeps a level, change nothing for it (and do for three)."""
    shares, other = ([1.0, 1.0, 2.0], 0.8), ([4.0, 0.0, 0.5], 0.1)
    np.testing.assert_array_equal(outlook(*shares).transitions(1, 6),
                                  outlook(*other).transitions(1, 6))
    assert not np.allclose(outlook(*shares).transitions(3, 6), outlook(*other).transitions(3, 6))


@pytest.mark.parametrize(("persistence", "instances", "after_enough", "after_a_gap"), [
    (1.0, 3, 1.0, 0.5),  # the level never changes: a run at three stays at three
    (0.0, 3, 0.5, 0.5),  # a fresh level every slot: half the slots with capacity offer three
    (0.0, 2, 0.75, 0.75),  # three in four offer at least two
    (0.8, 3, 0.9, 0.5),  # the level kept four times in five, else three half the time
])
def test_several_instances_plan_on_capacity_runs_at_a_level_of_at_least_that_many(
        persistence, instances, after_enough, after_a_gap):
    """Levels 1, 2, 3 offered in the shares 1:1:2: the chance that the next slot offers
    enough is the run's chance of capacity times that of a level high enough."""
    o = outlook([1.0, 1.0, 2.0], persistence)
    one, several = o.transitions(1, 6), o.transitions(instances, 6)
    np.testing.assert_allclose(several[:, 1, :], one[:, 1, :] * after_enough)
    np.testing.assert_allclose(several[:, 0, :], one[:, 0, :] * after_a_gap)


def test_more_instances_are_never_likelier_and_a_level_never_offered_never_comes():
    o = outlook([1.0, 1.0, 2.0], 0.8)
    chances = [o.transitions(n, 6) for n in (1, 2, 3, 4)]
    assert np.all((chances[0] >= 0) & (chances[0] <= 1))
    assert all(np.all(fewer >= more) for fewer, more in pairwise(chances))
    assert not chances[3][:, 0, :].any()  # never four after a gap: no slot offered four


def test_before_any_count_is_seen_capacity_is_one_instance():
    levels = LevelModel(np.zeros(1), 0, 0.5)
    assert levels.share_at_least(1) == 1.0 and levels.share_at_least(2) == 0.0


def test_a_job_wanting_more_instances_than_the_market_offers_does_not_wait_for_them():
    """The market always offers two instances; the job needs four. Planned on any capacity,
    it would wait for spot it can never get and finish late; planned on four, it runs
    on-demand in time."""
    slots = 40
    data = flat_data(np.full((1, slots), 0.9), np.full((1, slots), 2))
    j = job(workload=16.0, release=2 * HOUR, soft=12 * HOUR, hard=16 * HOUR, n_min=4, n_max=4,
            value=100.0, value_at_hard_deadline=20.0, miss_penalty=100.0,
            restart_overhead=360.0)
    result = simulate(data, [j], make_policy("risk-aware")).jobs[0]
    assert result.soft_deadline_met
    assert result.spot_instance_hours == 0.0


class _ProgramsOnly:
    """Only the programs decide (the jobs they can plan; the others idle); records what they
    decided."""

    name = "programs-only"

    def __init__(self, solves: int, resolve_hours: float, migration_markets: int = 3) -> None:
        self.programs = StochasticPlanner(DistributionForecast(), resolve_hours, None,
                                          solves=solves, max_markets=migration_markets)
        self.planned: dict[int, list[str]] = {}
        self.decided: dict[int, dict[str, Allocation | None]] = {}

    def decide(self, obs):
        jobs = tuple(v for v in obs.jobs if self.programs.plannable(obs, v))
        out, _ = self.programs.plan(replace(obs, jobs=jobs))
        self.planned[obs.slot] = sorted(out)
        self.decided[obs.slot] = out
        return {k: a for k, a in out.items() if a is not None}


@pytest.fixture
def counted_solves(monkeypatch):
    """Per slot boundary (the job's program origin, in hours), the programs solved."""
    solved: list[float] = []
    solve = stochastic.solve

    def counting(j, model, max_slack, window=None):
        solved.append(j.deadline)
        return solve(j, model, max_slack, window)

    monkeypatch.setattr(stochastic, "solve", counting)
    return solved


def test_a_job_whose_re_solve_must_wait_keeps_following_its_program(counted_solves):
    """With one solve per slot and programs due every slot, both jobs are planned at the slot
    they are admitted, then re-solved in turn, one a slot, each following the program it has
    meanwhile."""
    slots = 32
    data = flat_data(np.full((2, slots), 0.9), np.full((2, slots), 4))
    jobs = [job(id=f"j{k + 1}", workload=6.0, release=2 * HOUR, soft=(31 + k / 2) * HOUR,
                allowed_markets=(data.markets[k].key,)) for k in (0, 1)]
    policy = _ProgramsOnly(solves=1, resolve_hours=1.0)
    simulate(data, jobs, policy)
    assert all(policy.planned[t] == ["j1", "j2"] for t in range(2, 8))
    busy = [t for t, planned in policy.planned.items() if planned]
    assert len(counted_solves) == len(busy) + 1  # both at admission, then one a slot
    # j1's deadlines are whole slots from a boundary, j2's half: the stalest goes first
    assert [d % 1 == 0 for d in counted_solves[:6]] == [True, False] * 3


def test_one_market_is_the_single_market_program(counted_solves):
    """Allowed in a second market that never offers spot (and moves free), a job decides at
    every slot as it does confined to its first market: one market's program."""
    slots = 30
    rng = np.random.default_rng(5)
    price = np.vstack([rng.uniform(0.8, 1.2, slots), np.full(slots, 0.5)])
    availability = np.vstack([rng.integers(0, 2, slots), np.zeros(slots, int)])
    data = flat_data(price, availability)
    a, b = (m.key for m in data.markets)
    alone = job(id="j", workload=12.0, release=2 * HOUR, soft=22 * HOUR,
                restart_overhead=360.0, allowed_markets=(a,))
    one, two = _ProgramsOnly(12, 6.0), _ProgramsOnly(12, 6.0)
    simulate(data, [alone], one)
    simulate(data, [replace(alone, allowed_markets=(a, b))], two)
    assert one.decided == two.decided and len(one.decided) >= 12
    assert {d % 1 for d in counted_solves} == {0.0}


@pytest.mark.parametrize(("spot_now", "workload", "expected"), [
    (1, 6.0, Allocation(0, spot=1)),  # slack to spare and spot at a third of on-demand: spot
    (1, 23.9, Allocation(0, on_demand=1)),  # no slack for a restart: on-demand, spot or not
    (0, 6.0, None),  # spot gone and a day of slack: wait for it rather than pay on-demand
])
def test_at_admission_a_job_takes_what_its_slack_and_the_market_now_allow(
        spot_now, workload, expected):
    """After a day of spot that comes and goes at a third of the on-demand price, a job due a
    day after its release: its first program decides by its slack and the spot there now."""
    slots = 60
    availability = np.tile([1, 1, 1, 0], slots // 4)
    availability[24] = spot_now
    data = flat_data(np.full((1, slots), 1.0), availability)
    j = job(workload=workload, release=24 * HOUR, soft=48 * HOUR, restart_overhead=360.0)
    policy = _ProgramsOnly(solves=12, resolve_hours=6.0)
    simulate(data, [j], policy)
    assert policy.decided[24] == {"j": expected}


@pytest.mark.parametrize("markets", [1, 3])
def test_a_job_in_several_markets_plans_on_hazards_shrunk_towards_its_markets_pooled(
        monkeypatch, markets):
    """Markets whose runs differ: in one market the program plans on that market's learned
    transitions; in several, each market's program on ``POOLED_SHARE`` of their mean over the
    job's markets and the rest its own."""
    slots = 40
    rng = np.random.default_rng(11)
    availability = (rng.random((3, slots)) < np.array([[0.3], [0.6], [0.9]])).astype(int)
    data = flat_data(np.full((3, slots), 0.9), availability)
    models: list[np.ndarray] = []
    solve = stochastic.solve
    monkeypatch.setattr(stochastic, "solve", lambda j, model, max_slack, window=None: (
        models.append(model.on), solve(j, model, max_slack, window))[1])
    seen = []

    class Recording(_ProgramsOnly):
        def decide(self, obs):
            if not seen and obs.jobs:
                seen.append(obs)
            return super().decide(obs)

    free = job(id="free", workload=8.0, release=20 * HOUR, soft=36 * HOUR,
               restart_overhead=360.0,
               allowed_markets=tuple(m.key for m in data.markets[:markets]))
    simulate(data, [free], Recording(12, 6.0))
    obs = seen[0]
    own = [DistributionForecast().transitions(obs, m, len(models[0]), 1)[0]
           for m in range(markets)]
    share = POOLED_SHARE if markets > 1 else 0.0
    for m in range(markets):
        expected = (1 - share) * own[m] + share * np.mean(own, axis=0)
        assert np.allclose(models[m], expected)
    assert markets == 1 or not np.allclose(models[0], own[0])


def test_a_job_allowed_in_several_markets_is_planned_in_the_cheapest_few(counted_solves):
    """Four markets, programs in at most two: the job's programs are solved in the two its
    outlooks make cheapest (here the two with the cheaper spot), never in the others."""
    slots = 30
    price = np.array([[2.0] * slots, [0.5] * slots, [2.5] * slots, [0.6] * slots])
    data = flat_data(price, np.ones((4, slots), int))
    free = job(id="free", workload=12.0, release=4 * HOUR, soft=26 * HOUR,
               restart_overhead=360.0)
    policy = _ProgramsOnly(12, 6.0, migration_markets=2)
    result = simulate(data, [free], policy).jobs[0]
    assert result.hard_deadline_met
    assert {a.market for d in policy.decided.values() for a in d.values() if a} <= {1, 3}
    assert len(counted_solves) % 2 == 0


def test_jobs_sharing_a_market_each_follow_a_program_and_share_its_spot(counted_solves):
    """Three two-instance jobs in one market: each follows its program; the spot they ask for
    never exceeds what the boundary shows, going first to the jobs already on it."""
    slots = 30
    rng = np.random.default_rng(3)
    data = flat_data(rng.uniform(0.8, 1.2, (1, slots)), rng.integers(0, 5, (1, slots)))
    jobs = [job(id=f"j{k}", workload=20.0, release=(k + 2) * HOUR, soft=(20 + 2 * k) * HOUR,
                n_min=2, n_max=2, restart_overhead=360.0) for k in range(3)]
    policy = _ProgramsOnly(solves=12, resolve_hours=6.0)
    shared = []

    def decide(obs):
        out = _ProgramsOnly.decide(policy, obs)
        if len(out) > 1:
            shared.append(obs.slot)
        assert sum(a.spot for a in out.values()) <= obs.availability_now[0]
        return out

    policy.decide = decide
    results = simulate(data, jobs, policy).jobs
    assert len(shared) >= 10 and len(counted_solves) >= 3
    assert all(r.hard_deadline_met for r in results)


def test_a_long_program_counts_as_several_of_the_solves_per_slot(counted_solves):
    """Week-long programs take more than one of the solves: with two per slot and programs
    due every slot, one is re-solved per slot; shorter ones would both be."""
    slots = 230
    data = flat_data(np.full((2, slots), 0.9), np.full((2, slots), 4))
    jobs = [job(id=f"j{k}", workload=6.0, release=2 * HOUR, soft=(220 + k) * HOUR,
                allowed_markets=(data.markets[k - 1].key,)) for k in (1, 2)]
    program = stochastic.SingleJob(218.0, 218.0, 0.0, 1, 3.0, 1.0, 0.0, 0.0, 0.0)
    assert stochastic.work(program, 212.0) > SOLVE_WORK > stochastic.work(
        replace(program, deadline=48.0, soft=48.0), 42.0)
    policy = _ProgramsOnly(solves=2, resolve_hours=1.0)
    simulate(data, jobs, policy)
    busy = [t for t, planned in policy.planned.items() if planned]
    assert len(counted_solves) == len(busy) + 1  # both at admission, then one a slot


def test_spot_goes_to_the_jobs_behind_then_to_those_running_on_it_then_in_priority_order():
    """Within the jobs the rule sees behind and within the others, those running on spot
    come first, so that a job released later does not displace one mid-run; otherwise the
    given (priority) order holds."""
    held = {"idle-behind": None, "spot-behind": Allocation(0, spot=1),
            "idle-ahead": None, "od-ahead": Allocation(0, on_demand=1),
            "spot-ahead": Allocation(0, spot=1)}
    views = tuple(SimpleNamespace(id=k, current=a) for k, a in held.items())
    rule = SimpleNamespace(margin=lambda obs, view: -1.0 if view.id.endswith("behind") else 1.0)
    order = spot_order(SimpleNamespace(jobs=views), lambda view: rule)
    assert [v.id for v in order] == ["spot-behind", "idle-behind", "spot-ahead", "idle-ahead",
                                     "od-ahead"]


def test_a_job_that_would_buy_on_demand_for_want_of_spot_goes_before_one_that_can_wait():
    """One instance of spot, two one-instance jobs that may use only that market, each
    following its program. A job with a day to spare runs on it when one due soon is
    released; once that one is behind (it would buy on-demand without spot), it takes the spot
    and the other, which can wait, idles: no on-demand is bought."""
    slots = 40
    data = flat_data(np.full((1, slots), 0.9), np.full((1, slots), 1))
    spare = job(id="spare", workload=10.0, release=3 * HOUR, soft=36 * HOUR,
                restart_overhead=360.0)
    due = job(id="due", workload=4.0, release=8 * HOUR, soft=16 * HOUR, restart_overhead=360.0)
    policy = _ProgramsOnly(solves=12, resolve_hours=6.0)
    result = {r.job_id: r for r in simulate(data, [spare, due], policy).jobs}
    assert result["due"].spot_instance_hours > 0
    assert result["spare"].restarts == 2  # displaced once, then back
    assert all(r.on_demand_instance_hours == 0.0 and r.hard_deadline_met
               for r in result.values())


def test_an_outlook_writes_unknown_prices_as_nulls_and_reads_them_back():
    o = outlook([1.0, 2.0], 0.5)
    wire = o.to_wire()
    assert wire["price"] == [[1.0] * 4] * 5 and all(
        type(v) is float for row in wire["price"] for v in row)
    price = o.price.copy()
    price[2, 1] = np.nan
    unknown = MarketOutlook(price=price, capacity=o.capacity, levels=o.levels,
                            hazards=o.hazards, run=None)
    wire = unknown.to_wire()
    assert wire["price"][2] == [1.0, None, 1.0, 1.0] and wire["price"][1] == [1.0] * 4
    np.testing.assert_array_equal(MarketOutlook.from_wire(wire).price, price)
