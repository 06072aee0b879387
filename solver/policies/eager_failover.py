"""SkyPilot's managed-job recovery across markets: Uniform Progress with eager failover.

SkyPilot's ``EAGER_NEXT_REGION`` recovery with Can't Be Late's Uniform Progress deciding spot
or on-demand, as SkyNomad's artifact runs it (its "UP(S)" baseline). Per job, at each boundary,
``t`` the time since release, ``D`` the target deadline (:meth:`solver.job.Job.target_deadline`)
less the release, ``C`` the running time of the whole workload and ``c`` that of what is left
(at ``n_max`` instances), ``d`` the restart overhead, ``Δ`` the slot, and the instance the job
holds (none if its spot is gone at the boundary):

* **safety net** — once ``⌈(c + d)/Δ⌉·Δ >= ⌊(D − t)/Δ⌋·Δ``: on-demand, kept where the job
  holds it, else in the market it holds, else where on-demand finishes cheapest counting the
  egress of moving the checkpoint from the market the job last ran in (the first on a tie);
  the condition holds from then on, so this is for good;
* **Uniform Progress** decides the type, assuming spot is to be had: spot; on-demand while
  behind the uniform line (``C − c < t·C/D``) when spot is not; on-demand stays on-demand
  until ahead by two overheads (``(t + 2d)·C/D − (C − c) < 0``, then spot), or while the two
  overheads no longer fit (``⌈(c + 2d)/Δ⌉·Δ > ⌊(D − t)/Δ⌋·Δ``, from idle too);
* a job holding what the rule asks keeps it; otherwise it lets it go, and for spot tries the
  markets in order of their spot price now (cheapest first, the lowest index on a tie), the
  zones of the region it last held an instance in moved to the end — SkyPilot's eager move
  to the next region after a preemption; the first offering its instances gets it (failed
  tries cost nothing). Finding none, a job that was leaving on-demand for spot idles;
  otherwise the rule is asked again without spot and from idle, and on-demand goes to the
  market the job holds or last ran in (else the first it may use).

Prices count only in the order of the spot markets: the rule is blind to on-demand prices and
to the cost of moving (but for where the safety net buys on-demand). A job's cap limits the
markets it tries to those whose spot fits, and its on-demand to what fits the cap.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from solver.job import Allocation, Allocations
from solver.migration import Place
from solver.observation import JobView, Observation
from solver.policies.base import PolicyBase
from solver.policies.common import affordable_spot, fit_cap, on_demand, one_by_one

Kind = Literal["none", "spot", "on-demand"]


class EagerFailover(PolicyBase):
    """Uniform Progress with SkyPilot's eager failover across markets (module doc)."""

    name = "eager-failover"

    def __init__(self) -> None:
        self._last_held: dict[str, int] = {}
        """Per job, the market of the instance it held at the last boundary it kept one."""
        self._last_ran: dict[str, int] = {}
        """Per job, the market of the last slot it ran in."""

    def decide(self, obs: Observation) -> Allocations:
        out = one_by_one(obs, lambda view, left: self.decide_job(obs, view, left))
        live = {v.id for v in obs.jobs}
        self._last_held = {k: m for k, m in self._last_held.items() if k in live}
        self._last_ran = {k: m for k, m in self._last_ran.items() if k in live}
        return out

    def decide_job(self, obs: Observation, view: JobView, left: np.ndarray
                   ) -> Allocation | None:
        """The job's allocation (``None``: idle), given the spot ``left`` per market."""
        job = view.job
        n = job.n_max
        current = view.current
        if current is not None:
            self._last_ran[view.id] = current.market
        held = current if current is not None and (
            current.spot == 0 or left[current.market] >= current.spot) else None
        if held is not None and fit_cap(obs, view, held) != held:
            held = None  # its spot price rose over the job's cap: let it go as if lost
        if held is not None:
            self._last_held[view.id] = held.market
        kind: Kind = "none" if held is None else "spot" if held.spot else "on-demand"
        clock = _Clock(obs, view)
        if clock.safety_net():
            if held is not None and kind == "on-demand":
                return held
            if held is not None:
                return self._on_demand(obs, view, held.market)
            return self._cheapest_on_demand(obs, view)
        request, leaving = clock.request(kind, has_spot=True)
        if held is not None and request == kind:
            return held
        if request == "spot":
            for m in self._spot_order(obs, view):
                if left[m] >= n and affordable_spot(obs, view, m) >= n:
                    return Allocation(m, spot=n)
            if leaving:
                return None
            request, _ = clock.request("none", has_spot=False)
        if request == "on-demand":
            market = held.market if held is not None else self._last_ran.get(view.id)
            return self._on_demand(obs, view, market)
        return None

    def _spot_order(self, obs: Observation, view: JobView) -> list[int]:
        """The job's markets by spot price now, those of the region it last held an instance
        in moved to the end."""
        allowed = [m for m, market in enumerate(obs.markets) if view.job.may_use(market.key)]
        order = sorted(allowed, key=lambda m: (float(obs.price_now[m]), m))
        last = self._last_held.get(view.id)
        if last is None:
            return order
        region = Place.of(obs.markets[last]).region_key
        away = [m for m in order if Place.of(obs.markets[m]).region_key != region]
        return away + [m for m in order if m not in away]

    def _on_demand(self, obs: Observation, view: JobView, market: int | None
                   ) -> Allocation | None:
        """On-demand at ``n_max`` in ``market`` (the first the job may use when ``None``),
        within its cap; else the cap's on-demand fallback."""
        if market is None:
            market = next(m for m, x in enumerate(obs.markets) if view.job.may_use(x.key))
        current = view.current
        choice = Allocation(market, 0, view.job.n_max)
        if current == choice:
            return current
        return fit_cap(obs, view, choice) or on_demand(obs, view)

    def _cheapest_on_demand(self, obs: Observation, view: JobView) -> Allocation | None:
        """On-demand where finishing costs least, with the egress of moving the checkpoint
        from the market the job last ran in (its checkpoint's place before it ran)."""
        job = view.job
        hours = job.hours_needed(view.remaining, job.n_max, overhead=0.0)
        ran = self._last_ran.get(view.id)
        source = view.checkpoint if ran is None else Place.of(obs.markets[ran])
        options = [
            (m.on_demand_price * job.n_max * hours
             + obs.migration.move(source, Place.of(m), job.checkpoint_gb).egress_usd, i)
            for i, m in enumerate(obs.markets) if job.may_use(m.key)]
        return self._on_demand(obs, view, min(options)[1])


class _Clock:
    """Uniform Progress's view of one job at a boundary, in seconds (module doc)."""

    def __init__(self, obs: Observation, view: JobView) -> None:
        job = view.job
        self.gap = obs.slot_seconds
        self.elapsed = obs.time - job.release
        self.deadline = job.target_deadline(obs.time, view.remaining) - job.release
        self.total = job.seconds_needed(job.workload, job.n_max, overhead=0.0)
        self.left = job.seconds_needed(view.remaining, job.n_max, overhead=0.0)
        self.overhead = job.restart_overhead
        self.pending = view.pending_overhead

    def _ticks(self, seconds: float) -> float:
        return math.ceil(seconds / self.gap) * self.gap

    @property
    def time_left(self) -> float:
        return math.floor((self.deadline - self.elapsed) / self.gap) * self.gap

    def safety_net(self) -> bool:
        return self._ticks(self.left + self.overhead) >= self.time_left

    def request(self, kind: Kind, has_spot: bool) -> tuple[Kind, bool]:
        """The type Uniform Progress asks for, holding ``kind``, and whether it asks for spot
        only to leave on-demand."""
        done = self.total - self.left
        line = self.elapsed * self.total / self.deadline
        ahead_by_two = (self.elapsed + 2 * self.overhead) * self.total / self.deadline - done
        request: Kind = "spot" if has_spot else "none"
        if done - line < 0:
            request = "spot" if has_spot else "on-demand"
        if kind == "on-demand" and (not has_spot or ahead_by_two >= 0):
            request = "on-demand"
        if self._ticks(self.left + 2 * self.overhead) > self.time_left and kind != "spot":
            request = "on-demand"
        if self._ticks(self.left + self.overhead) >= self.time_left:
            request = "spot" if kind == "spot" and self.pending < 1e-3 else "on-demand"
            if self.overhead == 0 and has_spot:
                request = "spot"
        if kind == "on-demand" and has_spot and request == "on-demand" and ahead_by_two < 0:
            return "spot", True
        return request, False
