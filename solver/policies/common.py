"""Building blocks the rule-based policies share: market choice and deadline safety."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from solver.job import Allocation
from solver.market import SECONDS_PER_HOUR
from solver.observation import Decision, JobView, Observation


def must_use_on_demand(obs: Observation, view: JobView) -> bool:
    """True when idling (or failing on spot) for this slot would leave too little time to
    finish on on-demand at ``n_max``, one restart overhead included, by the target deadline."""
    job = view.job
    needed = job.seconds_needed(view.remaining, job.n_max)
    return obs.slot_end + needed > job.target_deadline(obs.time, view.remaining)


def on_demand_market(obs: Observation, view: JobView) -> int:
    """Cheapest allowed on-demand market; the current market wins ties."""
    return _cheapest(
        view,
        [(m.on_demand_price, i) for i, m in enumerate(obs.markets) if view.job.may_use(m.key)],
    )


def on_demand(obs: Observation, view: JobView, n: int | None = None) -> Allocation:
    """On-demand at ``n`` instances (default ``n_max``), staying put if already there."""
    n = view.job.n_max if n is None else n
    current = view.current
    if current is not None and current.spot == 0 and current.on_demand == n:
        return current
    return Allocation(on_demand_market(obs, view), spot=0, on_demand=n)


def spot(obs: Observation, view: JobView, available: np.ndarray | None = None
         ) -> Allocation | None:
    """Spot in the current market while it still offers ``n_min`` instances, else in the
    cheapest allowed market that does; as many instances as available up to ``n_max``.
    ``available`` (default: what the boundary shows) is the spot left per market."""
    job = view.job
    if not job.allow_spot:
        return None
    if available is None:
        available = obs.availability_now
    options = [
        (float(obs.price_now[i]), i)
        for i, m in enumerate(obs.markets)
        if job.may_use(m.key) and available[i] >= job.n_min
    ]
    if not options:
        return None
    current = view.current
    if current is not None and any(i == current.market for _, i in options):
        market = current.market
    else:
        market = _cheapest(view, options)
    return Allocation(market, spot=min(int(available[market]), job.n_max))


def claim(left: np.ndarray, choice: Allocation | None) -> None:
    """Take ``choice``'s spot out of ``left``, the spot still unclaimed per market."""
    if choice is not None:
        left[choice.market] -= min(choice.spot, int(left[choice.market]))


def one_by_one(obs: Observation,
               rule: Callable[[JobView, np.ndarray], Allocation | None]) -> Decision:
    """Each job in spot-priority order, decided by ``rule`` from the spot the jobs before it
    left unclaimed (per market, which ``rule`` must not change); ``None`` leaves the job idle.
    The spot of each allocation is claimed before the next job is decided."""
    left = np.array(obs.availability_now)
    out: dict[str, Allocation] = {}
    for view in obs.jobs:
        choice = rule(view, left)
        if choice is not None:
            claim(left, choice)
            out[view.id] = choice
    return out


def cheapest_on_demand_count(obs: Observation, view: JobView, deadline: float) -> int:
    """Fewest-dollars on-demand instance count that finishes by ``deadline``; ``n_max`` if none."""
    job = view.job
    price = obs.markets[on_demand_market(obs, view)].on_demand_price
    best: tuple[float, int] | None = None
    for n in range(job.n_min, job.n_max + 1):
        hours = job.hours_needed(view.remaining, n)
        if obs.time + SECONDS_PER_HOUR * hours > deadline:
            continue
        cost = n * price * math.ceil(hours / obs.slot_hours) * obs.slot_hours
        if best is None or cost < best[0]:
            best = (cost, n)
    return job.n_max if best is None else best[1]


def _cheapest(view: JobView, options: list[tuple[float, int]]) -> int:
    current = view.current.market if view.current is not None else -1
    return min(options, key=lambda o: (o[0], o[1] != current, o[1]))[1]


def keeps_deadline(obs: Observation, view: JobView, choice: Allocation | None,
                   spot_is_safe: bool) -> bool:
    """True when, after this slot run with ``choice`` (``None``: idle), the job can still
    finish on on-demand at ``N_max``, one restart included, by its target deadline, and by its
    hard deadline even if the slot's spot is lost (spot is a fair bet for the soft deadline,
    never for the hard one, unless the forecasts are exact)."""
    target = view.job.target_deadline(obs.time, view.remaining)
    return (finishable(obs, view, choice, credit_spot=True, by=target)
            and finishable(obs, view, choice, credit_spot=spot_is_safe,
                           by=view.job.hard_deadline))


def finishable(obs: Observation, view: JobView, choice: Allocation | None, credit_spot: bool,
               by: float) -> bool:
    """True when, after this slot run with ``choice`` (``None``: idle; its spot credited only
    with ``credit_spot``), on-demand at ``N_max`` could finish by ``by``, one restart
    included."""
    job = view.job
    remaining = view.remaining
    if choice is not None and (credit_spot or choice.spot == 0):
        overhead = view.pending_overhead if choice == view.current else job.restart_overhead
        productive = max(0.0, obs.slot_seconds - overhead)
        remaining -= job.throughput(choice.total) * productive / SECONDS_PER_HOUR
        if remaining <= 0:
            return True
    return obs.slot_end + job.seconds_needed(remaining, job.n_max) <= by
