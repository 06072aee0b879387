"""Building blocks the rule-based policies share: market choice, deadline safety and a job's
spend cap.

A job's cap (``max_hourly_usd``) bounds the hourly bill of every allocation at the prices in
force at the boundary. :func:`spot` asks only for the spot instances that fit it, and
:func:`on_demand` for the most on-demand instances it allows (at least ``n_min``) in the
cheapest market; where no on-demand allocation fits, there is no on-demand fallback and
:func:`on_demand` answers ``None``: the job runs what spot fits the cap and idles otherwise,
and may miss its deadline — the cap wins over the deadline. :func:`fit_cap` trims any other
allocation to the cap."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from solver.job import Allocation, Allocations
from solver.market import SECONDS_PER_HOUR
from solver.migration import STAY, Move, Place
from solver.observation import JobView, Observation


def must_use_on_demand(obs: Observation, view: JobView) -> bool:
    """True when idling (or failing on spot) for this slot would leave too little time to
    finish on on-demand at ``n_max``, one restart overhead included, by the target deadline."""
    job = view.job
    needed = job.seconds_needed(view.remaining, job.n_max)
    return obs.slot_end + needed > job.target_deadline(obs.time, view.remaining)


def on_demand_market(obs: Observation, view: JobView) -> int:
    """The allowed market where on-demand at ``n_max`` finishes the job cheapest, counting the
    move of its checkpoint there (the egress, and the transfer time, billed and added to the
    restart), among those whose cap allows ``n_min`` on-demand instances (all allowed markets
    when none does) and, of those, where the job still finishes by its target deadline after
    the move (all of them when none does); the current market, then the checkpoint's, wins
    ties."""
    job = view.job
    seconds = job.seconds_needed(view.remaining, job.n_max)
    allowed = [i for i, m in enumerate(obs.markets) if job.may_use(m.key)]
    affordable = [i for i in allowed
                  if job.affordable_count(obs.markets[i].on_demand_price) >= job.n_min]
    candidates = affordable or allowed
    moves = {i: _move(obs, view, i) for i in candidates}
    deadline = job.target_deadline(obs.time, view.remaining)
    in_time = [i for i in candidates
               if obs.time + seconds + moves[i].transfer_seconds <= deadline]
    return _cheapest(obs, view, [
        (obs.markets[i].on_demand_price * job.n_max
         * (seconds + moves[i].transfer_seconds) / SECONDS_PER_HOUR + moves[i].egress_usd, i)
        for i in in_time or candidates])


def _move(obs: Observation, view: JobView, market: int) -> Move:
    """What moving the job's checkpoint to ``market`` on a launch there costs (nothing when
    the job already runs there or has no checkpoint)."""
    current = view.current
    if view.job.checkpoint_gb == 0 or (current is not None and current.market == market):
        return STAY
    return obs.move(view, market)


def on_demand(obs: Observation, view: JobView, n: int | None = None) -> Allocation | None:
    """On-demand at ``n`` instances (default ``n_max``), or as many as the job's cap allows
    (``None`` when not even ``n_min`` fit), staying put if already there."""
    job = view.job
    market = on_demand_market(obs, view)
    n = min(job.n_max if n is None else n,
            job.affordable_count(obs.markets[market].on_demand_price))
    if n < job.n_min:
        return None
    current = view.current
    if current is not None and current.spot == 0 and current.on_demand == n:
        return current
    return Allocation(market, spot=0, on_demand=n)


def fit_cap(obs: Observation, view: JobView, choice: Allocation | None) -> Allocation | None:
    """``choice`` within the job's cap at the boundary's prices: on-demand instances dropped
    first, then spot ones, never below ``n_min`` (``None`` when even that does not fit)."""
    job = view.job
    if choice is None or job.max_hourly_usd is None:
        return choice
    prices = (float(obs.price_now[choice.market]), obs.markets[choice.market].on_demand_price)
    while choice.on_demand and not job.within_cap(choice.hourly_usd(*prices)):
        choice = Allocation(choice.market, choice.spot, choice.on_demand - 1)
    while choice.spot and not job.within_cap(choice.hourly_usd(*prices)):
        choice = Allocation(choice.market, choice.spot - 1, choice.on_demand)
    if choice.total < job.n_min or not job.within_cap(choice.hourly_usd(*prices)):
        return None
    return choice


def spot(obs: Observation, view: JobView, available: np.ndarray | None = None,
         avoid_denied: bool = False, fullest: bool = False) -> Allocation | None:
    """Spot in the current market while it still offers ``n_min`` instances, else in the
    cheapest allowed market that does; as many instances as available up to ``n_max`` and the
    job's cap. ``available`` (default: what the boundary shows) is the spot left per market.
    With ``avoid_denied``, a market that denied spot since it last held it
    (:attr:`~solver.observation.Observation.denied`) is asked only when no other one offers
    (the market where the job holds spot is never avoided). With ``fullest``, only the markets
    offering the most of the instances the job can use (up to ``n_max`` and its cap) are
    considered, the current one if it is among them, else the cheapest: a job of an instance
    range does not stay on a market's few instances while another holds all of it (a job at a
    fixed count is offered the same count wherever it may go)."""
    job = view.job
    if not job.allow_spot:
        return None
    if available is None:
        available = obs.availability_now
    options = [
        (float(obs.price_now[i]), i)
        for i, m in enumerate(obs.markets)
        if job.may_use(m.key) and min(available[i], affordable_spot(obs, view, i)) >= job.n_min
    ]
    current = view.current
    if avoid_denied:
        held = current.market if current is not None and current.spot > 0 else -1
        options = [o for o in options if o[1] not in obs.denied or o[1] == held] or options
    if not options:
        return None
    if fullest:
        usable = {i: min(int(available[i]), affordable_spot(obs, view, i), job.n_max)
                  for _, i in options}
        most = max(usable.values())
        options = [o for o in options if usable[o[1]] == most]
    if current is not None and any(i == current.market for _, i in options):
        market = current.market
    else:
        market = _cheapest(obs, view, options)
    return Allocation(market, spot=min(int(available[market]), affordable_spot(obs, view,
                                                                               market)))


def affordable_spot(obs: Observation, view: JobView, market: int) -> int:
    """Spot instances of ``market`` the job's cap allows at the boundary's price (``n_max``
    without a cap)."""
    return view.job.affordable_count(float(obs.price_now[market]))


def claim(left: np.ndarray, choice: Allocation | None) -> None:
    """Take ``choice``'s spot out of ``left``, the spot still unclaimed per market."""
    if choice is not None:
        left[choice.market] -= min(choice.spot, int(left[choice.market]))


def one_by_one(obs: Observation,
               rule: Callable[[JobView, np.ndarray], Allocation | None]) -> Allocations:
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


def cheapest_on_demand(obs: Observation, view: JobView) -> Allocation | None:
    """On-demand alone at the cheapest instance count that meets the target deadline, the
    count the job runs kept while it still does (``None``: not even ``n_min`` fits the cap).
    Billed by the whole slot, fewer instances than ``n_max`` often finish in as many slots,
    or in a few more by the deadline, for less."""
    current = view.current
    deadline = view.job.target_deadline(obs.time, view.remaining)
    if current is not None and current.spot == 0 and (
            obs.time + view.job.seconds_needed(view.remaining, current.total,
                                               view.pending_overhead) <= deadline):
        return current
    return on_demand(obs, view, cheapest_on_demand_count(obs, view, deadline))


def cheapest_on_demand_count(obs: Observation, view: JobView, deadline: float) -> int:
    """Fewest-dollars on-demand instance count that finishes by ``deadline``; ``n_max`` if none."""
    job = view.job
    price = obs.markets[on_demand_market(obs, view)].on_demand_price
    best: tuple[float, int] | None = None
    for n in range(job.n_min, max(job.n_min, job.affordable_count(price)) + 1):
        hours = job.hours_needed(view.remaining, n)
        if obs.time + SECONDS_PER_HOUR * hours > deadline:
            continue
        cost = n * price * math.ceil(hours / obs.slot_hours) * obs.slot_hours
        if best is None or cost < best[0]:
            best = (cost, n)
    return job.n_max if best is None else best[1]


def _cheapest(obs: Observation, view: JobView, options: list[tuple[float, int]]) -> int:
    """The market of the cheapest of ``options`` (``(USD, market)``); ties go to the current
    market, then to a market where the job's checkpoint is, then to the lowest index."""
    current = view.current.market if view.current is not None else -1

    def elsewhere(market: int) -> bool:
        return view.checkpoint is None or Place.of(obs.markets[market]) != view.checkpoint

    return min(options, key=lambda o: (o[0], o[1] != current, elsewhere(o[1]), o[1]))[1]


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
