"""The prediction-free policy: a deadline-aware threshold rule that needs no forecast.

Per job, at each boundary, with ``R`` the time on-demand at ``n_max`` still needs for the
remaining work and ``D`` the target deadline (:meth:`solver.job.Job.target_deadline`):

* **slack** ``s = D - now - (restart overhead + R)``: the time that can still be lost with the
  deadline safe on on-demand. Less than one slot forces on-demand at ``n_max``
  (:func:`~solver.policies.common.must_use_on_demand`'s rule).
* **reserve** ``σ · s₀ · R / R₀``: the share ``σ`` of the slack the job had at release (``s₀``,
  with ``R₀`` for the whole workload) scaled to the work left. ``σ = 1`` keeps the slack in
  proportion to the work left (Uniform Progress), ``σ = 0`` spends it greedily.
* **margin** ``s - reserve``.

Spot counts only in markets whose current price is at most ``θ`` × the on-demand price, and
only as far as the jobs before (in spot-priority order) have not claimed it this slot, so the
policy does not ask for capacity its own jobs already hold. A market that denied spot (refused
or lost it) since it last held spot through a whole slot is asked only where no other market
offers spot: its boundary showed spot the slot did not keep, and a refusal costs the slot.
A job of an instance range goes where spot offers the most of the instances it can use (the
market it is on if that is one, else the cheapest): staying on a market's few instances while
another holds all of the job runs it at a fraction of its speed and tops it up with on-demand
once behind (on the tuning seeds of the market shapes, ``risk-aware``'s fleets of such jobs on
13 and 30 zones cost 5 and 6–7 % less this way, their utility from 0.1 % lower to 4.6 %
higher).

* Off on-demand: spot when available (topped up with on-demand to ``n_max`` while the margin
  is negative); without spot, on-demand at ``n_max`` once the margin is negative, idle before.
* On on-demand: back to spot, when available, only while the margin is above
  ``-tolerance × restart overhead``; further behind, the job stays on on-demand until it has
  caught up that far. Uniform Progress returns to spot whenever it shows up, however far
  behind, and pays an overhead each way every time spot flickers; waiting for a full catch-up
  (``tolerance = 0``) instead keeps the job on on-demand for long stretches, since on-demand
  gains margin only at rate ``σ · s₀ / R₀``. On the Can't Be Late windows (docs/evaluation.md)
  a tolerance of a few overheads cut restarts by a third against Uniform Progress and cost
  less than either extreme.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from solver.job import Allocation, Allocations
from solver.observation import JobView, Observation
from solver.policies.base import PolicyBase
from solver.policies.common import claim, fit_cap, on_demand, one_by_one, spot
from solver.policies.routing import RULE, fixed_count


def check_safety_share(name: str, share: float) -> None:
    """Refuse a safety share (``name``: the setting, as the error names it) that is not a
    finite number >= 0."""
    if not (math.isfinite(share) and share >= 0):
        raise ValueError(f"{name}={share!r}: expected a finite share >= 0 of the initial slack")


class PredictionFree(PolicyBase):
    """Threshold policy with price threshold ``theta``, safety share ``sigma`` and catch-up
    ``tolerance`` in restart overheads (module doc)."""

    name = "prediction-free"

    def __init__(self, theta: float = 1.0, sigma: float = 1.0, tolerance: float = 3.0) -> None:
        for field, value, expected in (
            ("theta", theta, "a share > 0 of the on-demand price"),
            ("tolerance", tolerance, "a number >= 0 of restart overheads"),
        ):
            if math.isnan(value) or value < 0 or (field == "theta" and value == 0):
                raise ValueError(f"prediction-free {field}={value!r}: expected {expected}")
        check_safety_share("prediction-free sigma", sigma)
        self.theta = theta
        self.sigma = sigma
        self.tolerance = tolerance

    def decide(self, obs: Observation) -> Allocations:
        return one_by_one(obs, lambda view, left: self.decide_job(obs, view, left))

    def planner(self, job_id: str) -> str:
        """Every job is decided by the threshold rule."""
        return RULE

    def margin(self, obs: Observation, view: JobView) -> float:
        """The job's margin in seconds (module doc); ``-inf`` once its slack is under one slot
        (on-demand is forced). Below 0 the rule runs it on-demand where it finds no spot."""
        job = view.job
        deadline = job.target_deadline(obs.time, view.remaining)
        slack = deadline - obs.time - job.seconds_needed(view.remaining, job.n_max)
        if slack < obs.slot_seconds:
            return -math.inf
        initial = deadline - job.release - job.seconds_needed(job.workload, job.n_max)
        return slack - self.sigma * max(initial, 0.0) * view.remaining / job.workload

    def decide_job(self, obs: Observation, view: JobView, left: np.ndarray) -> Allocation | None:
        """The rule's allocation (``None``: idle) for one job, given the spot ``left`` per
        market by the jobs before it."""
        limit = self.theta * np.array([m.on_demand_price for m in obs.markets])
        free = replace(obs, availability_now=np.where(obs.price_now <= limit, left, 0))
        job = view.job
        overhead = job.restart_overhead
        margin = self.margin(obs, view)
        if margin == -math.inf:
            return on_demand(obs, view) or spot(free, view, avoid_denied=True, fullest=True)
        choice = spot(free, view, avoid_denied=True, fullest=True)
        current = view.current
        if current is not None and current.spot == 0:
            if choice is not None and (margin > -self.tolerance * overhead or overhead == 0):
                return choice
            return on_demand(obs, view)
        if choice is None:
            return on_demand(obs, view) if margin < 0 else None
        if margin < 0 and choice.spot < job.n_max:
            return fit_cap(obs, view, Allocation(choice.market, choice.spot,
                                                 job.n_max - choice.spot))
        return choice


class ThresholdRule:
    """The rule with safety share ``sigma`` as a planner
    (:class:`~solver.policies.routing.Planner`), each job on the spot the jobs before it left:
    in the programs' spot order (:func:`spot_order`) with ``behind_first``, else in the
    simulator's priority order, as :class:`PredictionFree` decides them, where a job keeps its
    place from slot to slot and jobs running at a range of counts on one market's spot do not
    take it from each other's runs. A job at a fixed instance count that may use spot runs with
    safety share ``fixed_sigma`` (default ``sigma``)."""

    name = RULE

    def __init__(self, sigma: float = 1.0, behind_first: bool = True,
                 fixed_sigma: float | None = None) -> None:
        self.ranged = PredictionFree(sigma=sigma)
        self.fixed = self.ranged if fixed_sigma is None else PredictionFree(sigma=fixed_sigma)
        self.behind_first = behind_first

    def rule(self, view: JobView) -> PredictionFree:
        """The rule that decides ``view``'s job: by whether it runs at a fixed count
        (:func:`~solver.policies.routing.fixed_count`)."""
        return self.fixed if fixed_count(view) else self.ranged

    def plan(self, obs: Observation) -> tuple[dict[str, Allocation | None], np.ndarray]:
        left = np.array(obs.availability_now, dtype=np.int64)
        out: dict[str, Allocation | None] = {}
        for view in spot_order(obs, self.rule) if self.behind_first else obs.jobs:
            out[view.id] = choice = self.rule(view).decide_job(obs, view, left)
            claim(left, choice)
        return out, left


def spot_order(obs: Observation, rule: Callable[[JobView], PredictionFree]
               ) -> tuple[JobView, ...]:
    """The jobs in the order spot goes to them: first those their ``rule`` sees behind (they
    would buy on-demand for want of spot), then the others; in each group the jobs running on
    spot, then the others, in the given (priority) order."""
    def key(view: JobView) -> tuple[bool, bool]:
        holds = view.current is not None and view.current.spot > 0
        return rule(view).margin(obs, view) >= 0, not holds

    return tuple(sorted(obs.jobs, key=key))
