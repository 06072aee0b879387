"""Why a decision was made: the cost it expects and the slack it saw."""

from __future__ import annotations

from dataclasses import dataclass

from solver.job import Allocation
from solver.market import SECONDS_PER_HOUR
from solver.observation import JobView, Observation


@dataclass(frozen=True, slots=True)
class Explanation:
    """What an operator needs to read a decision from the topic alone."""

    expected_cost_usd: float
    slack_seconds: float
    spot_price_now: float
    spot_available_now: int
    on_demand_price: float


def explain(obs: Observation, view: JobView, allocation: Allocation) -> Explanation:
    """Expected bill of the slot at the boundary's prices, and the time to spare: hard deadline
    minus the finish time on on-demand at ``n_max`` started now (one restart overhead paid)."""
    job = view.job
    m = allocation.market
    on_demand_price = obs.markets[m].on_demand_price
    price_now = float(obs.price_now[m])
    cost = (allocation.spot * price_now + allocation.on_demand * on_demand_price) * obs.slot_hours
    finish = obs.time + SECONDS_PER_HOUR * (
        job.restart_overhead_hours + job.hours_to_finish(view.remaining, job.n_max)
    )
    return Explanation(
        expected_cost_usd=cost,
        slack_seconds=job.hard_deadline - finish,
        spot_price_now=price_now,
        spot_available_now=int(obs.availability_now[m]),
        on_demand_price=on_demand_price,
    )
