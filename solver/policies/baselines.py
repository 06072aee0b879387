"""The peers to beat: on-demand only, spot only, Greedy, and Uniform Progress (NSDI'24).

Each decides from the observation alone, so one instance can serve a whole simulation and
keeps no state. Jobs are decided in the simulator's spot-priority order, each asking only for
the spot that the jobs before it left unclaimed in this slot.
"""

from __future__ import annotations

import numpy as np

from solver.job import Allocation, Allocations
from solver.observation import JobView, Observation
from solver.policies.base import PolicyBase
from solver.policies.common import (
    cheapest_on_demand,
    fit_cap,
    must_use_on_demand,
    on_demand,
    one_by_one,
    spot,
)


class OnDemandOnly(PolicyBase):
    """On-demand only, at the cheapest instance count that meets the target deadline; it keeps
    its count once running, unless that count can no longer make the deadline."""

    name = "on-demand"

    def decide(self, obs: Observation) -> Allocations:
        out: dict[str, Allocation] = {}
        for view in obs.jobs:
            _put(out, view, cheapest_on_demand(obs, view))
        return out


class SpotOnly(PolicyBase):
    """Spot whenever a market offers it, idle otherwise; it never pays for on-demand."""

    name = "spot-only"

    def decide(self, obs: Observation) -> Allocations:
        return one_by_one(obs, lambda view, left: spot(obs, view, left))


class Greedy(PolicyBase):
    """Spot whenever available; on-demand at ``n_max`` once idling one more slot would make
    the target deadline unreachable on on-demand (Can't Be Late's greedy with safety net), or
    spot still where the job's cap forbids on-demand."""

    name = "greedy"

    def decide(self, obs: Observation) -> Allocations:
        def rule(view: JobView, left: np.ndarray) -> Allocation | None:
            if must_use_on_demand(obs, view) and (od := on_demand(obs, view)) is not None:
                return od
            return spot(obs, view, left)

        return one_by_one(obs, rule)


class UniformProgress(PolicyBase):
    """Uniform Progress (Can't Be Late, NSDI'24), generalised to ``n`` instances.

    The job should be at least as far as the straight line from (release, 0) to (target
    deadline, workload). Spot whenever available, topped up with on-demand to ``n_max`` while
    behind the line; without spot, on-demand at ``n_max`` while behind the line, idle while
    ahead; on-demand at ``n_max`` once the safety net of :class:`Greedy` triggers.
    """

    name = "uniform-progress"

    def decide(self, obs: Observation) -> Allocations:
        def rule(view: JobView, left: np.ndarray) -> Allocation | None:
            if must_use_on_demand(obs, view) and (od := on_demand(obs, view)) is not None:
                return od
            behind = _behind_uniform_line(obs, view)
            choice = spot(obs, view, left)
            if choice is None:
                return on_demand(obs, view) if behind else None
            if behind and choice.spot < view.job.n_max:
                return fit_cap(obs, view, Allocation(choice.market, choice.spot,
                                                     view.job.n_max - choice.spot))
            return choice

        return one_by_one(obs, rule)


def _put(out: dict[str, Allocation], view: JobView, choice: Allocation | None) -> None:
    """Record ``choice`` for the job unless it is ``None`` (idle)."""
    if choice is not None:
        out[view.id] = choice


def _behind_uniform_line(obs: Observation, view: JobView) -> bool:
    job = view.job
    deadline = job.target_deadline(obs.time, view.remaining)
    share = min(1.0, (obs.time - job.release) / (deadline - job.release))
    return job.workload - view.remaining < share * job.workload
