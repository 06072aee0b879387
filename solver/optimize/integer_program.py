"""The scheduling program as a mixed-integer linear program (docs/solver.md, "The integer
program").

Over the slots of some market data (the whole trace for the offline optimum, a forecast window
for Committed Horizon Control), for each job ``j`` and slot ``t`` in which it is active, and
each *configuration* ``c = (market, spot, on-demand)`` the job may run (``N_min <= spot +
on-demand <= N_max``, allowed market, spot only if allowed and ``spot <= availability``, its
hourly bill at the boundary's prices within the job's cap):

* ``y[j,c,t]`` ∈ {0,1} runs configuration ``c``; ``sum_c y[j,c,t] <= 1`` (one market and one
  count per slot); ``sum_j sum_{c in m} spot_c·y[j,c,t] <= availability[m,t]``;
* ``u[j,c,t] >= y[j,c,t] - y[j,c,t-1]`` starts of ``c`` (against the configuration the job
  holds when the program starts, at its first slot); a start costs the restart overhead;
* ``loss[j,t] >= sum_c c_0·H_c·u[j,c,t]/3600`` and, for an overhead longer than a slot,
  ``loss[j,t] >= c_i·H_c·(u[j,c,t-i] + y[j,c,t] - 1)/3600`` for each ``c`` and ``i >= 1``, with
  ``c_i = min(Δ, μ - iΔ)`` the overhead still due ``i`` slots after a start; a job starting
  with pending overhead ``P`` gets ``loss >= min(Δ, P - kΔ)·H·y`` on the configuration it holds;
* ``w[j,t] <= sum_c H_c·e_t/3600·y[j,c,t] - loss[j,t]`` work done, ``H_c = α·n_c + β`` and
  ``e_t`` the part of the slot before the hard deadline;
* ``z[j,t]`` ∈ {0,1} finished by the end of ``t``: ``sum_{u<=t} w[j,u] >= R_j·z[j,t]``,
  ``z`` non-decreasing, and nothing runs after it (``sum_c y[j,c,t] + z[j,t-1] <= 1``);
* objective (maximised): ``sum_t V_j(end of t)·(z[j,t] - z[j,t-1])`` (completion valued at
  the end of its slot, or at the hard deadline in the slot holding it — a slot-granular,
  conservative reading of the value function) ``- miss_penalty·(1 - z[j,last])`` ``- cost``,
  every slot run billed in full.

Configuration variables (rather than counts with big-M links) keep the linear relaxation
tight: a start is a difference of two binaries, and no row couples counts to restarts.

**Terminal condition** (``terminal=True``, for windows): a job whose hard deadline lies beyond
the window gets a leftover ``ℓ_j >= R_j - sum_t w[j,t]`` that must stay finishable on on-demand
capacity at ``N_max`` by the hard deadline, ``ℓ_j <= H(N_max)·(D_j - end - μ)/3600 + u_j``
(``u_j >= 0`` is priced at the job's value plus miss penalty per unit of work, so the program
stays feasible when the deadline is already lost); the leftover is valued at the cheapest
on-demand price per unit of work, ``λ_j = min_{m,n} p^o_m·n/H(n)``, and the job keeps its value
of finishing at the earliest completion the leftover allows, ``end + μ + ℓ_j·3600/H(N_max)``
(concave, so two rows bound it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from solver.job import Allocation, Job
from solver.market import SECONDS_PER_HOUR, MarketData
from solver.observation import JobView
from solver.optimize.horizon import active_slots
from solver.optimize.linear import LinearProgram
from solver.optimize.plan import Plan


def cheapest_work_price(job: Job, data: MarketData) -> float:
    """USD per unit of work on the cheapest allowed on-demand market and instance count."""
    prices = [m.on_demand_price for m in data.markets if job.may_use(m.key)]
    return min(prices) * min(n / job.throughput(n) for n in range(job.n_min, job.n_max + 1))


def configurations(job: Job, data: MarketData) -> list[Allocation]:
    """Every ``(market, spot, on-demand)`` the job may run, ignoring availability."""
    return [Allocation(m, s, n - s)
            for m, market in enumerate(data.markets) if job.may_use(market.key)
            for n in range(job.n_min, job.n_max + 1)
            for s in (range(n + 1) if job.allow_spot else range(1))]


@dataclass(frozen=True)
class _JobVars:
    """Variable indices of one job: ``run[t]`` maps configurations to their ``y``."""

    view: JobView
    slots: range
    run: dict[int, dict[Allocation, int]]


@dataclass(frozen=True)
class IntegerProgram:
    """A built program and the map from its variables back to allocations.

    ``steps`` is the resolution of each continuous variable for integer-only backends.
    """

    program: LinearProgram
    jobs: tuple[_JobVars, ...]
    steps: dict[int, float]

    def plan(self, values: np.ndarray, method: str, optimal: bool, gap: float = 0.0) -> Plan:
        """Allocations read from a solution (``gap``: its solver's proven bound less its
        objective); slots are those of the program's market data."""
        slots: dict[int, dict[str, Allocation]] = {}
        for jv in self.jobs:
            for t in jv.slots:
                for config, y in jv.run[t].items():
                    if values[y] > 0.5:
                        slots.setdefault(t, {})[jv.view.id] = config
        return Plan(dict(sorted(slots.items())), self.program.value(values), method, optimal,
                    gap)

    def hint(self, plan: Plan, shift: int = 0) -> dict[int, float]:
        """Configuration variables set from ``plan`` read ``shift`` slots later (the previous
        window's plan, for a warm start); slots the plan does not cover are left out."""
        out: dict[int, float] = {}
        covered = {t - shift for t in plan.slots}
        for jv in self.jobs:
            for t in jv.slots:
                if t in covered:
                    chosen = plan.at(t + shift).get(jv.view.id)
                    for config, y in jv.run[t].items():
                        out[y] = 1.0 if config == chosen else 0.0
        return out


def build_integer_program(
    data: MarketData, views: Sequence[JobView], terminal: bool = False
) -> IntegerProgram:
    """The program for ``views`` (jobs with their remaining work, held configuration and
    pending overhead) over every slot of ``data`` (module doc for the model)."""
    lp = LinearProgram()
    steps: dict[int, float] = {}
    od_price = data.on_demand_prices
    slot_s, slot_h = data.slot_seconds, data.slot_hours
    end = data.slot_start(data.n_slots)
    spot_terms: dict[tuple[int, int], list[tuple[int, float]]] = {}
    built = []
    for view in views:
        job = view.job
        slots = active_slots(job, data.origin, slot_s, data.n_slots)
        if view.remaining <= 0 or not slots:
            continue
        configs = configurations(job, data)
        rate = {c: job.throughput(c.total) / SECONDS_PER_HOUR for c in configs}
        phases = math.ceil(job.restart_overhead / slot_s) if job.restart_overhead else 0
        due = [min(slot_s, job.restart_overhead - i * slot_s) for i in range(phases)]
        work_step = 10.0 ** math.floor(math.log10(max(view.remaining, 1.0) * 1e-6))
        run: dict[int, dict[Allocation, int]] = {}
        starts: dict[int, dict[Allocation, int]] = {}
        finished: dict[int, int] = {}
        work_so_far: list[tuple[int, float]] = []
        for t in slots:
            start = data.slot_start(t)
            run[t] = {}
            for c in configs:
                if c.spot > data.availability[c.market, t] or not job.within_cap(
                        c.hourly_usd(data.boundary_price[c.market, t], od_price[c.market])):
                    continue
                cost = (c.spot * float(data.price[c.market, t])
                        + c.on_demand * float(od_price[c.market])) * slot_h
                y = lp.var(0, 1, integer=True, gain=-cost)
                run[t][c] = y
                if c.spot:
                    spot_terms.setdefault((c.market, t), []).append((y, float(c.spot)))
            running = [(y, 1.0) for y in run[t].values()]
            if t > slots.start:
                lp.row([*running, (finished[t - 1], 1)], upper=1)
            else:
                lp.row(running, upper=1)
            # Starts and the overhead they cost.
            starts[t] = {}
            loss = lp.var(0, math.inf)
            steps[loss] = work_step
            first_loss: list[tuple[int, float]] = [(loss, 1.0)]
            for c, y in run[t].items():
                before = run[t - 1].get(c) if t > slots.start else None
                if phases == 0:
                    continue
                held = t == slots.start and view.current == c
                u = lp.var(0, 1)
                steps[u] = 1.0
                starts[t][c] = u
                if before is not None:
                    lp.row([(u, 1), (y, -1), (before, 1)], lower=0)
                else:
                    lp.row([(u, 1), (y, -1)], lower=-1.0 if held else 0.0)
                first_loss.append((u, -due[0] * rate[c]))
                for i in range(1, phases):
                    earlier = starts.get(t - i, {}).get(c)
                    if earlier is not None:
                        lp.row([(loss, 1), (earlier, -due[i] * rate[c]),
                                (y, -due[i] * rate[c])], lower=-due[i] * rate[c])
            if len(first_loss) > 1:
                lp.row(first_loss, lower=0)
            pending = view.pending_overhead - (t - slots.start) * slot_s
            current = view.current
            held_y = run[t].get(current) if current is not None else None
            if current is not None and held_y is not None and pending > 0:
                lp.row([(loss, 1), (held_y, -min(slot_s, pending) * rate[current])], lower=0)
            # Work and completion.
            effective = min(slot_s, job.hard_deadline - start)
            w = lp.var(0, math.inf)
            steps[w] = work_step
            lp.row([(w, 1), (loss, 1)] + [(y, -effective * rate[c]) for c, y in run[t].items()],
                   upper=0)
            work_so_far.append((w, 1.0))
            z = lp.var(0, 1, integer=True)
            finished[t] = z
            lp.row([*work_so_far, (z, -view.remaining)], lower=0)
            value = job.value_at(min(start + slot_s, job.hard_deadline))
            lp.gain(z, value)
            if t > slots.start:
                lp.row([(z, 1), (finished[t - 1], -1)], lower=0)
                lp.gain(finished[t - 1], -value)
        last = finished[slots[-1]]
        if terminal and job.hard_deadline > end:
            _terminal(lp, steps, data, view, work_so_far, last, end, work_step)
        else:
            lp.gain(last, job.miss_penalty)
            lp.offset -= job.miss_penalty
        built.append(_JobVars(view, slots, run))
    for (m, t), terms in spot_terms.items():
        if sum(c for _, c in terms) > data.availability[m, t]:
            lp.row(terms, upper=int(data.availability[m, t]))
    return IntegerProgram(lp, tuple(built), steps)


def _terminal(
    lp: LinearProgram,
    steps: dict[int, float],
    data: MarketData,
    view: JobView,
    work: list[tuple[int, float]],
    last: int,
    end: float,
    work_step: float,
) -> None:
    """Leftover work priced at on-demand, kept finishable, and the value it still earns."""
    job = view.job
    h_max = job.throughput(job.n_max)
    price = cheapest_work_price(job, data)
    leftover = lp.var(0, view.remaining, gain=-price)
    steps[leftover] = work_step
    lp.row([(leftover, 1), *work], lower=view.remaining)
    finishable = h_max * max(0.0, job.hard_deadline - end - job.restart_overhead) / SECONDS_PER_HOUR
    late_price = price + (job.value + job.miss_penalty) / view.remaining
    late = lp.var(0, view.remaining, gain=-late_price)
    steps[late] = work_step
    lp.row([(leftover, 1), (late, -1)], upper=finishable)
    # Value of finishing after the window: v until the soft deadline, then falling.
    earliest = end + job.restart_overhead
    span = job.hard_deadline - job.soft_deadline
    slope = (job.value - job.value_at_hard_deadline) / span if span > 0 else 0.0
    floor = job.value - slope * max(0.0, earliest - job.soft_deadline
                                    + SECONDS_PER_HOUR * view.remaining / h_max) - 1.0
    credit = lp.var(min(floor, 0.0), max(job.value, 0.0), gain=1.0)
    steps[credit] = 10.0 ** math.floor(math.log10(max(1.0, abs(job.value)) * 1e-6))
    lp.row([(credit, 1), (last, job.value)], upper=job.value)
    if slope > 0:
        lead = slope * (earliest - job.soft_deadline)
        lp.row([(credit, 1), (last, job.value - lead),
                (leftover, slope * SECONDS_PER_HOUR / h_max)], upper=job.value - lead)
