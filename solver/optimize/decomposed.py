"""The window program decomposed per job, for re-solving every slot with many jobs.

Each job's window program (the model of :mod:`solver.optimize.integer_program` restricted to that
job) is solved by a dynamic program over ``(configuration, overhead phase)`` per slot, with
work valued at a price ``λ`` per unit (Lagrangian relaxation of the work constraints):

* a configuration is ``(market, spot, on-demand)``: spot alone at any count from ``N_min`` to
  ``N_max``, or any mix of spot and on-demand at ``N_min`` or ``N_max`` (a restriction that
  keeps the arrays small: with ``H(n) = α·n + β`` the price per unit of work of one kind of
  instance is monotone in ``n``, so the extreme counts are the cheapest and the fastest, and
  spot alone follows whatever count the availability allows);
* entering a configuration from idle or another one starts the restart overhead, which
  carries over into later slots phase by phase, exactly as in the simulator; the job starts
  from the configuration it holds (as idle when that is outside the set), with its pending
  overhead;
* slots after the job's *target deadline* (the soft deadline while on-demand at ``N_max`` can
  still meet it, else the hard one; :meth:`solver.job.Job.target_deadline`) are not
  usable, and the slot holding it only up to it;
* ``λ`` starts at the cheapest on-demand price per unit of work (the terminal cost: work left
  after the window is assumed done on on-demand). If the plan then does more work than remains,
  ``λ`` is bisected down to the least value whose plan still finishes (the cheapest way to
  finish inside the window); if it leaves more work after the window than on-demand at
  ``N_max`` can finish by the target deadline (the terminal condition), ``λ`` is bisected up
  to the least value whose plan satisfies it (or the most work the window allows).

Jobs with the same configuration set are solved together in arrays. Spot capacity is then
coordinated in the simulator's priority order (earliest hard deadline, then id): jobs whose
planned spot would exceed a market-slot's availability after the jobs before them are
re-planned on the residual availability, for a few rounds; what conflicts remain is repaired
by the caller in the slot it commits.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from solver.job import Allocation
from solver.market import SECONDS_PER_HOUR, MarketData
from solver.observation import JobView, Observation
from solver.optimize.integer_program import cheapest_work_price
from solver.optimize.window_dp import solve_window

BISECTION_STEPS = 12
"""Bisection steps on ``λ`` for a job whose first plan finishes early or leaves too much:
arithmetic below the base price (to within base / 4096), geometric above it (to within 0.6 %
of a ratio of up to 1000)."""

COORDINATION_ROUNDS = 2
"""Re-planning rounds for jobs displaced from spot capacity by jobs before them."""

_UP_RANGE = 1000.0


@dataclass(frozen=True)
class _Configs:
    """The configurations of one group of alike jobs."""

    market: np.ndarray
    spot: np.ndarray
    on_demand: np.ndarray

    @property
    def count(self) -> np.ndarray:
        count: np.ndarray = self.spot + self.on_demand
        return count

    def allocation(self, c: int) -> Allocation:
        return Allocation(int(self.market[c]), int(self.spot[c]), int(self.on_demand[c]))


def _configs(view: JobView, markets: list[int]) -> _Configs:
    """Spot-only at every count, and every spot/on-demand mix at ``N_min`` and ``N_max``."""
    job = view.job
    counts = sorted({job.n_min, job.n_max})
    rows = {(m, s, n - s)
            for m in markets
            for n in counts
            for s in (range(n + 1) if job.allow_spot else range(1))}
    if job.allow_spot:
        rows |= {(m, n, 0) for m in markets for n in range(job.n_min, job.n_max + 1)}
    table = np.array(sorted(rows), dtype=np.int64).reshape(-1, 3)
    return _Configs(table[:, 0], table[:, 1], table[:, 2])


class _Group:
    """Jobs sharing one configuration set and overhead, solved together in arrays."""

    def __init__(self, obs: Observation, views: list[JobView], window: MarketData) -> None:
        job0 = views[0].job
        allowed = [m for m, mk in enumerate(obs.markets) if job0.may_use(mk.key)]
        self.configs = _configs(views[0], allowed)
        self.views = views
        slot_s = window.slot_seconds
        w = window.n_slots
        overhead = job0.restart_overhead
        self.phases = max(1, math.ceil(overhead / slot_s))
        lost = np.array([min(max(overhead - p * slot_s, 0.0), slot_s)
                         for p in range(self.phases)])
        starts = window.origin + slot_s * np.arange(w)
        deadlines = np.array([v.job.target_deadline(obs.time, v.remaining) for v in views])
        effective = np.clip(deadlines[:, None] - starts[None, :], 0.0, slot_s)  # (J, w)
        alpha = np.array([v.job.alpha for v in views])[:, None]
        beta = np.array([v.job.beta for v in views])[:, None]
        # (J, C) work per second
        rate = (alpha * self.configs.count[None, :] + beta) / SECONDS_PER_HOUR
        # work[j, c, p, t]: slot index p of a run; p == phases: a slot after the overhead.
        productive = np.maximum(effective[:, None, :] - np.append(lost, 0.0)[None, :, None], 0.0)
        self.work = rate[:, :, None, None] * productive[:, None, :, :]
        self.open = effective > 0  # (J, w)
        self.remaining = np.array([v.remaining for v in views])
        end = window.origin + slot_s * w
        h_max = np.array([v.job.throughput(v.job.n_max) for v in views])
        later = h_max * np.maximum(deadlines - end - overhead, 0.0) / SECONDS_PER_HOUR
        self.required = np.where(deadlines > end, np.maximum(self.remaining - later, 0.0),
                                 self.remaining)
        self.base_price = np.array([cheapest_work_price(v.job, window) for v in views])
        self.start = np.array([self._start_state(v, overhead, slot_s) for v in views])
        od = window.on_demand_prices
        cfg = self.configs
        self.cost = (cfg.spot[:, None] * window.price[cfg.market]
                     + cfg.on_demand[:, None] * od[cfg.market][:, None]) * window.slot_hours

    def _start_state(self, view: JobView, overhead: float, slot_s: float) -> int:
        held = view.current
        if held is None:
            return 0
        cfg = self.configs
        match = np.flatnonzero((cfg.market == held.market) & (cfg.spot == held.spot)
                               & (cfg.on_demand == held.on_demand))
        if len(match) == 0:
            return 0
        paid = self.phases - 1
        if view.pending_overhead > 0:
            paid = min(paid, max(0, round((overhead - view.pending_overhead) / slot_s) - 1))
        return 1 + int(match[0]) * self.phases + paid

    def solve(self, rows: np.ndarray, price: np.ndarray, capacity: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
        """Plans of jobs ``rows`` at work prices ``price``: configuration per slot (-1 idle)
        and total work; spot usable up to ``capacity`` (markets, w)."""
        usable = self.configs.spot[:, None] <= capacity[self.configs.market]  # (C, w)
        return solve_window(self.work, self.cost, self.open, self.start, usable,
                            rows.astype(np.int64), price.astype(float))

    def plan(self, capacity: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Configuration per slot for jobs ``rows`` on spot ``capacity``, ``λ`` searched."""
        base = self.base_price[rows]
        chosen, done = self.solve(rows, base, capacity)
        remaining, required = self.remaining[rows], self.required[rows]
        tol = 1e-9 * np.maximum(remaining, 1.0)
        early = np.flatnonzero(done >= remaining + tol)
        short = np.flatnonzero(done < required - tol)
        if len(early) + len(short) == 0:
            return chosen
        top = base[short] * _UP_RANGE
        most = self.solve(rows[short], top, capacity)[0] if len(short) else chosen[short]
        search = np.concatenate((early, short))
        chosen[search] = self._bisect(
            rows[search],
            np.concatenate((np.zeros(len(early)), base[short])),
            np.concatenate((base[early], top)),
            np.concatenate((remaining[early], required[short])) - tol[search],
            np.concatenate((chosen[early], most)),
            capacity,
        )
        return chosen

    def _bisect(self, rows: np.ndarray, lo: np.ndarray, hi: np.ndarray, target: np.ndarray,
                best: np.ndarray, capacity: np.ndarray) -> np.ndarray:
        """The plan at the least price in ``[lo, hi]`` found doing ``target`` work (``best``,
        the plan at ``hi``, when none does)."""
        for _ in range(BISECTION_STEPS):
            mid = np.where(lo > 0, np.sqrt(lo * hi), (lo + hi) / 2.0)
            trial, work = self.solve(rows, mid, capacity)
            ok = work >= target
            best = np.where(ok[:, None], trial, best)
            hi, lo = np.where(ok, mid, hi), np.where(ok, lo, mid)
        return best


def solve_decomposed(obs: Observation, window: MarketData) -> dict[str, list[Allocation | None]]:
    """Per-job plans over ``window`` (forecast market data starting at the boundary of
    ``obs.slot``) for the active jobs of ``obs``: one entry per window slot."""
    groups: dict[tuple[object, ...], list[JobView]] = {}
    for view in obs.jobs:
        job = view.job
        key = (job.n_min, job.n_max, job.allow_spot, job.allowed_markets, job.restart_overhead)
        groups.setdefault(key, []).append(view)
    built = [_Group(obs, views, window) for views in groups.values()]
    order = sorted(((v.job.hard_deadline, v.id, g, j) for g, grp in enumerate(built)
                    for j, v in enumerate(grp.views)))
    plans = [np.full((len(g.views), window.n_slots), -1, dtype=np.int64) for g in built]
    pending = [np.arange(len(g.views)) for g in built]
    capacity = window.availability.astype(np.int64)
    for _ in range(COORDINATION_ROUNDS):
        for g, grp in enumerate(built):
            if len(pending[g]):
                plans[g][pending[g]] = grp.plan(capacity, pending[g])
        pending, capacity = _displaced(built, plans, order, window.availability)
        if not any(len(p) for p in pending):
            break
    out: dict[str, list[Allocation | None]] = {}
    for grp, chosen in zip(built, plans, strict=True):
        for j, view in enumerate(grp.views):
            out[view.id] = [None if c < 0 else grp.configs.allocation(int(c))
                            for c in chosen[j]]
    return out


def _displaced(
    built: Sequence[_Group], plans: list[np.ndarray], order: list[tuple[float, str, int, int]],
    availability: np.ndarray,
) -> tuple[list[np.ndarray], np.ndarray]:
    """Jobs whose planned spot exceeds what the jobs before them leave, and the availability
    the others leave for re-planning them."""
    left = availability.astype(np.int64).copy()
    moved: list[list[int]] = [[] for _ in built]
    cols = np.arange(availability.shape[1])
    for _, _, g, j in order:
        chosen = plans[g][j]
        cfg = built[g].configs
        markets = cfg.market[np.maximum(chosen, 0)]
        spot = np.where(chosen >= 0, cfg.spot[np.maximum(chosen, 0)], 0)
        if np.any(spot > left[markets, cols]):
            moved[g].append(j)
        else:
            np.subtract.at(left, (markets, cols), spot)
    return [np.array(m, dtype=np.int64) for m in moved], left
