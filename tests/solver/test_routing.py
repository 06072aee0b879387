"""One routing table, kept for a job's life, and every decision naming its planner."""

import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import solver
from solver.engine import Engine
from solver.forecast.levels import LevelModel
from solver.market import MarketData
from solver.policies import make_policy
from solver.policies.routing import (
    KEPT_SHARE,
    PLANNERS,
    PROGRAM,
    ROOMY_SHARE,
    RULE,
    WINDOW,
    Router,
)
from tests.solver.helpers import HOUR, flat_data, job, markets

POLICIES = Path(solver.__file__).parent / "policies"
ROUTING_PREDICATES = (
    re.compile(r"n_min\s*==\s*[\w.]*n_max"),  # "a fixed instance count"
    re.compile(r"n_max\s*==\s*[\w.]*n_min"),
    re.compile(r"\broute\("),
    re.compile(r"\bRouter\("),
)


def test_routing_is_declared_in_the_routing_module_alone():
    """No other policy module decides which planner a job gets: the routing predicates and the
    router appear in solver/policies/routing.py only."""
    offenders = [
        f"{path.name}: {pattern.pattern}"
        for path in sorted(POLICIES.glob("*.py")) if path.name != "routing.py"
        for pattern in ROUTING_PREDICATES if pattern.search(path.read_text())]
    assert offenders == []
    routing = (POLICIES / "routing.py").read_text()
    assert all(p.search(routing) for p in ROUTING_PREDICATES[:1] + ROUTING_PREDICATES[2:])


def _views(*jobs):
    from solver.observation import JobView
    return tuple(JobView(j, j.workload, 0.0, None) for j in jobs)


def _no_history(obs):
    """``obs`` with no closed slot to read."""
    obs.slot_seconds = HOUR
    obs.closed_shown = lambda n: np.zeros((2, 0), dtype=np.int64)
    obs.closed_slots = lambda n: (np.zeros((2, 0)), np.zeros((2, 0), dtype=np.int64))
    return obs


def test_a_route_is_decided_when_the_job_is_first_seen_and_kept_for_its_life():
    fixed, ranged = job(id="fixed"), job(id="ranged", n_min=1, n_max=3)
    router = Router(programs=True)
    obs = _no_history(type("Obs", (), {})())
    obs.markets = tuple(markets(2))
    obs.jobs = _views(fixed, ranged)
    assert dict(router.assign(obs, lambda v: True)) == {"fixed": PROGRAM, "ranged": WINDOW}
    # later the program could not plan it: the job keeps its route
    assert router.assign(obs, lambda v: False)["fixed"] == PROGRAM
    obs.jobs = _views(ranged)
    assert dict(router.assign(obs, lambda v: False)) == {"ranged": WINDOW}
    assert router.planner("fixed") is None  # gone: forgotten
    assert Router(programs=False).assign(obs, lambda v: True)["ranged"] == WINDOW
    # a second fixed-count job sharing a market: the newcomer follows the rule, the first keeps
    # its program
    obs.jobs = _views(fixed, job(id="other", allowed_markets=(obs.markets[1].key,)))
    router = Router(programs=True)
    assert dict(router.assign(obs, lambda v: True)) == {"fixed": RULE, "other": RULE}
    obs.jobs = _views(job(id="alone", allowed_markets=(obs.markets[0].key,)))
    assert router.assign(obs, lambda v: True)["alone"] == PROGRAM
    obs.jobs += _views(job(id="late", allowed_markets=(obs.markets[0].key,)))
    assert dict(router.assign(obs, lambda v: True)) == {"alone": PROGRAM, "late": RULE}


def _levels(*shares):
    """An outlook whose learned capacity levels have ``shares`` (level 1 first)."""
    return SimpleNamespace(levels=LevelModel(np.array(shares, float), 1, 0.5))


def test_a_job_of_an_instance_range_follows_the_rule_where_spot_usually_holds_its_count():
    """With a ranged rule (risk-aware), a job of an instance range goes to the rule when a
    market it may use offers its ``n_max`` in at least ROOMY_SHARE of its slots with spot, else
    to the window program, and keeps its route; without one (chc) it goes to the window."""
    small, big = job(id="small", n_min=1, n_max=2), job(id="big", n_min=2, n_max=4)
    obs = SimpleNamespace(markets=tuple(markets(2)), jobs=_views(small, big),
                          outlooks=(_levels(0.2, 0.3, 0.3, 0.2), _levels(1.0)))
    assert ROOMY_SHARE <= 0.8 and ROOMY_SHARE > 0.2  # market a: >= 2 in 0.8, >= 4 in 0.2
    router = Router(programs=True, ranged_rule=True)
    assert dict(router.assign(obs, lambda v: True)) == {"small": RULE, "big": WINDOW}
    obs.outlooks = (_levels(0.0, 0.0, 0.0, 1.0), _levels(1.0))
    assert dict(router.assign(obs, lambda v: True)) == {"small": RULE, "big": WINDOW}  # kept
    fresh = Router(programs=True, ranged_rule=True)
    assert dict(fresh.assign(obs, lambda v: True)) == {"small": RULE, "big": RULE}
    assert dict(Router(programs=True).assign(obs, lambda v: True)) == {
        "small": WINDOW, "big": WINDOW}
    # confined to the market of single instances, or without spot: the window program
    obs.jobs = _views(job(id="confined", n_min=1, n_max=2, allowed_markets=(obs.markets[1].key,)),
                      job(id="no-spot", n_min=1, n_max=2, allow_spot=False))
    assert dict(Router(programs=True, ranged_rule=True).assign(obs, lambda v: True)) == {
        "confined": WINDOW, "no-spot": WINDOW}


def _flickering(kept: bool) -> MarketData:
    """Two markets whose boundaries show spot in every slot; their slots keep it in every
    other slot, or (``kept``) in every slot."""
    slots = 24
    shown = np.ones((2, slots), dtype=np.int64)
    realised = shown.copy() if kept else np.tile([1, 0], (2, slots // 2))
    price = np.full((2, slots), 1.0)
    return MarketData(tuple(markets(2)), 0.0, HOUR, price, realised, price.copy(), shown)


@pytest.mark.parametrize("name", ["risk-aware", "chc"])
def test_a_fixed_count_job_follows_the_rule_where_slots_lose_the_spot_boundaries_show(name):
    """A program reads the boundary as the slot's capacity: a fixed-count job whose markets'
    slots kept less than KEPT_SHARE of the spot their boundaries showed goes to the rule; where
    they kept it, to the program."""
    assert 0.5 < KEPT_SHARE <= 1.0
    fixed = job(id="fixed", workload=3.0, release=12 * HOUR, soft=22 * HOUR,
                restart_overhead=300.0)
    for kept, planner in ((False, RULE), (True, PROGRAM)):
        decided = _decisions(make_policy(name), _flickering(kept), [fixed])
        assert {d.planners["fixed"] for d in decided if "fixed" in d.planners} == {planner}


def _decisions(policy, data, jobs):
    engine = Engine(data.markets, data.origin, data.slot_seconds, policy)
    for j in jobs:
        engine.add_job(j)
    out = []
    for t in range(data.n_slots):
        decided = engine.decide(data.boundary_price[:, t], data.boundary_availability[:, t])
        out.append(decided)
        engine.settle(data.price[:, t], data.availability[:, t])
    return out


@pytest.mark.parametrize("name", ["risk-aware", "chc", "policy-selection", "prediction-free",
                                  "greedy"])
def test_every_decision_names_its_planner(name):
    """A fixed-count job and an instance range: each decision names the planner that made it,
    the same for the job's whole life; a policy not made of planners names itself."""
    slots = 16
    rng = np.random.default_rng(2)
    data = flat_data(rng.uniform(0.5, 1.5, (2, slots)), rng.integers(0, 4, (2, slots)))
    jobs = [job(id="fixed", workload=4.0, release=6 * HOUR, soft=14 * HOUR,
                restart_overhead=300.0),
            job(id="range", workload=6.0, release=6 * HOUR, soft=15 * HOUR, n_min=1, n_max=3,
                restart_overhead=300.0)]
    named: dict[str, set[str]] = {}
    for decided in _decisions(make_policy(name), data, jobs):
        assert set(decided.planners) == set(decided.allocations)
        for job_id in decided.allocations:
            assert decided.explain(job_id).planner == decided.planners[job_id]
            named.setdefault(job_id, set()).add(decided.planners[job_id])
    assert set(named) == {"fixed", "range"}
    assert all(len(planners) == 1 for planners in named.values())
    if name in ("risk-aware", "chc"):
        assert named == {"fixed": {PROGRAM}, "range": {WINDOW}}
    elif name == "greedy":
        assert named == {"fixed": {"greedy"}, "range": {"greedy"}}
    else:
        assert all(p <= set(PLANNERS) | {"uniform-progress"} for p in named.values())


def test_with_a_chooser_a_shared_or_roomy_job_is_routed_by_the_evidence_not_the_table():
    """Two fixed-count jobs sharing a market and a job of an instance range: the chooser is
    asked among the planners that can plan each, the table's answer its fallback, and its
    answer and reason are kept."""

    class Chooser:
        def __init__(self):
            self.asked = []

        def choose(self, obs, view, candidates, fallback):
            self.asked.append((view.id, candidates, fallback))
            return candidates[0], f"first of {len(candidates)}"

    chooser = Chooser()
    router = Router(programs=True, ranged_rule=True, chooser=chooser)
    obs = type("Obs", (), {})()
    obs.markets = tuple(markets(2))
    obs.jobs = _views(job(id="a"), job(id="b"), job(id="ranged", n_min=1, n_max=3),
                      job(id="od", allow_spot=False))
    obs.outlooks = [SimpleNamespace(levels=SimpleNamespace(share_at_least=lambda n: 1.0))] * 2
    assert dict(router.assign(obs, lambda v: True)) == {
        "a": PROGRAM, "b": PROGRAM, "ranged": WINDOW, "od": WINDOW}
    assert chooser.asked == [("a", (PROGRAM, WINDOW, RULE), RULE),
                             ("b", (PROGRAM, WINDOW, RULE), RULE),
                             ("ranged", (WINDOW, RULE), RULE)]
    assert router.reason("a") == "first of 3"
    assert router.reason("od") == "only the window plans this job"
    router.assign(obs, lambda v: False)
    assert len(chooser.asked) == 3  # routes are kept for the jobs' lives
