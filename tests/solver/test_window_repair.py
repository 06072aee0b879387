"""The window program's repair: a job short of spot moves the shortfall to on-demand, on-demand
alone at the cheapest count."""

import numpy as np

from solver.job import Allocation
from solver.observation import JobView, Observation
from solver.policies import make_policy
from solver.policies.chc import _repair
from solver.policies.common import cheapest_on_demand
from solver.simulator import simulate
from tests.solver.helpers import HOUR, cold_outlooks, flat_data, job, markets


def observe(views, available=(8,), time=0.0):
    n = len(available)
    return Observation(
        slot=int(time // HOUR), time=time, slot_seconds=HOUR,
        markets=tuple(markets(n)),
        price_history=np.zeros((n, 0)), availability_history=np.zeros((n, 0), dtype=int),
        price_now=np.ones(n), availability_now=np.array(available),
        jobs=tuple(views), outlooks=cold_outlooks(n),
    )


def ranged(id="r", workload=15.9, soft=3 * HOUR, **kw):
    """Four to eight instances; eight finish in 3 hourly slots, and so do six."""
    return job(id, workload=workload, soft=soft, n_min=4, n_max=8, beta=-0.21,
               restart_overhead=360.0, **kw)


def test_a_job_short_of_its_planned_spot_moves_the_shortfall_to_on_demand():
    """The job before took all but two of the market's spot: the second job, running on two
    spot instances and planned on four, runs the two left topped up with two on-demand; a
    third, planned on two spot and one on-demand, runs its three on on-demand."""
    first, second = job("a", workload=2.0, n_min=1, n_max=6), job("b", workload=3.0,
                                                                   n_min=2, n_max=4)
    third = job("c", workload=3.0, n_min=2, n_max=4)
    obs = observe([JobView(first, 2.0, 0.0, None), JobView(second, 3.0, 0.0, Allocation(0, 2, 0)),
                   JobView(third, 3.0, 0.0, None)], available=(8,))
    out, left = _repair(obs, {"a": Allocation(0, 6, 0), "b": Allocation(0, 4, 0),
                              "c": Allocation(0, 2, 1)}, False, set())
    assert out == {"a": Allocation(0, 6, 0), "b": Allocation(0, 2, 2), "c": Allocation(0, 0, 3)}
    assert left.tolist() == [0]


def test_a_job_planned_without_spot_runs_on_demand_at_the_cheapest_count():
    """No spot anywhere: the window program runs the range on on-demand, at six instances (the
    count on-demand only runs, finishing in the same three slots as eight) rather than eight,
    and kept there."""
    data = flat_data(np.ones((1, 4)), np.zeros((1, 4)))
    j = ranged()
    view = JobView(j, j.workload, 0.0, None)
    assert cheapest_on_demand(observe([view], available=(0,)), view) == Allocation(0, 0, 6)
    for name in ("risk-aware", "chc"):
        result = simulate(data, [j], make_policy(name))
        assert {a for _, _, a in result.decisions} == {Allocation(0, 0, 6)}
        assert result.jobs[0].soft_deadline_met
        assert result.jobs[0].cost == simulate(data, [j], make_policy("on-demand")).jobs[0].cost
        assert result.jobs[0].on_demand_instance_hours == 18.0
