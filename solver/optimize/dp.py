"""Exact offline dynamic program for one job at a fixed instance count (``n_min == n_max``).

This is the Can't Be Late setting: one job, one instance, slots that are the trace's ticks and a
restart overhead that may span several slots. The program follows the simulator's rules
(:mod:`solver.simulator`) exactly:

* a *mode* is one configuration ``(market, spot, on-demand)`` with ``spot + on-demand = n``;
  a spot mode is usable in slot ``t`` only when ``availability[m, t] >= spot``;
* entering a mode (from idle or from another mode) starts its restart overhead ``mu``; slot
  ``i`` of an unbroken run in one mode is productive for ``slot - min(max(mu - i*slot, 0),
  slot)`` seconds, so the overhead *phase* (slots since the run started, capped once the
  overhead is paid) is part of the state;
* every slot run is billed in full, the final partial one included;
* completion time inside the final slot is exact, and the job's value function is applied
  to it; the plan that never runs (worth ``-miss_penalty``) is the alternative to finishing.

Progress is counted in productive seconds at ``n`` instances, in units of ``g``, the largest
length dividing both the slot and the overhead (195 s ticks and 72 s overhead: ``g = 3 s``;
720 s overhead: ``g = 15 s``). Every reachable progress is a whole number of units, so the
discretisation is exact. States are ``(slot, idle | (mode, phase), progress)``; a progress
band is kept per slot (no more than the slots so far can reach, no less than the slots left
can still finish), and the choices are stored to rebuild the plan. Ties go to the first
option in a fixed order, so the plan is deterministic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from solver.job import Allocation, Job
from solver.market import SECONDS_PER_HOUR, MarketData
from solver.optimize.horizon import active_slots
from solver.optimize.plan import Plan

MAX_STORED_CHOICES = 300_000_000
"""Largest number of stored choice cells the program accepts (about that many bytes)."""

_FINISH_TOLERANCE = 1e-12
_NEG = -np.inf


@dataclass(frozen=True)
class _Grid:
    """The progress lattice: ``unit`` seconds, a full slot and each overhead slot in units."""

    unit: float
    slot: int
    productive: tuple[int, ...]
    overhead: tuple[float, ...]

    @property
    def phases(self) -> int:
        return len(self.productive)


def _grid(slot_seconds: float, overhead: float) -> _Grid | None:
    """The lattice for a slot length and an overhead, or ``None`` when they have no common
    unit of at least a millisecond."""
    slot_f = Fraction(slot_seconds).limit_denominator(1000)
    over_f = Fraction(overhead).limit_denominator(1000)
    if float(slot_f) != slot_seconds or float(over_f) != overhead:
        return None
    unit = Fraction(math.gcd(slot_f.numerator * over_f.denominator,
                             over_f.numerator * slot_f.denominator),
                    slot_f.denominator * over_f.denominator)
    phases = max(1, math.ceil(over_f / slot_f))
    lost = [min(max(over_f - i * slot_f, Fraction(0)), slot_f) for i in range(phases)]
    return _Grid(
        unit=float(unit),
        slot=int(slot_f / unit),
        productive=tuple(int((slot_f - x) / unit) for x in lost),
        overhead=tuple(min(max(overhead - i * slot_seconds, 0.0), slot_seconds)
                       for i in range(phases)),
    )


def _modes(job: Job, data: MarketData) -> list[Allocation]:
    n = job.n_min
    spots = range(n + 1) if job.allow_spot else range(1)
    return [Allocation(m, s, n - s) for m, market in enumerate(data.markets)
            if job.may_use(market.key) for s in spots]


def _stored_choices(job: Job, data: MarketData, grid: _Grid, n_modes: int) -> int:
    slots = active_slots(job, data.origin, data.slot_seconds, data.n_slots)
    need = _need_units(job, grid)
    levels = math.ceil(need)
    tau = np.arange(len(slots))
    hi = np.minimum(levels - 1, grid.slot * (tau + 1))
    lo = np.maximum(0, np.ceil(need - grid.slot * (len(slots) - 1 - tau)))
    return int(np.clip(hi - lo + 1, 0, None).sum()) * (1 + 2 * n_modes)


def _need_units(job: Job, grid: _Grid) -> float:
    seconds = job.workload / job.throughput(job.n_min) * SECONDS_PER_HOUR
    return seconds / grid.unit * (1.0 - _FINISH_TOLERANCE)


def exact_dp_applies(jobs: list[Job] | tuple[Job, ...], data: MarketData) -> bool:
    """True for one job with ``n_min == n_max`` whose slot and overhead share a unit and whose
    state space fits :data:`MAX_STORED_CHOICES`."""
    if len(jobs) != 1 or jobs[0].n_min != jobs[0].n_max:
        return False
    job = jobs[0]
    grid = _grid(data.slot_seconds, job.restart_overhead)
    if grid is None:
        return False
    return _stored_choices(job, data, grid, len(_modes(job, data))) <= MAX_STORED_CHOICES


def _values_at(job: Job, times: np.ndarray) -> np.ndarray:
    """Vectorised :meth:`Job.value_at` for completion times."""
    span = job.hard_deadline - job.soft_deadline
    share = (times - job.soft_deadline) / span if span > 0 else np.zeros_like(times)
    falling = job.value + share * (job.value_at_hard_deadline - job.value)
    out = np.where(times <= job.soft_deadline, job.value, falling)
    return np.where(times <= job.hard_deadline, out, -job.miss_penalty)


@dataclass
class _Finish:
    """The best completion found so far: its utility and where to rebuild the plan from."""

    utility: float
    slot: int = -1
    mode: int = -1
    source: int = -1
    progress: int = -1


@dataclass(frozen=True)
class _Choices:
    """Back-pointers of one slot, over its progress band starting at ``low``."""

    low: int
    idle_from: np.ndarray
    entered_from: np.ndarray
    continued: np.ndarray


def solve_single_job(data: MarketData, job: Job) -> Plan:
    """The utility-maximising plan for ``job`` alone on ``data`` (module doc for the model)."""
    if job.n_min != job.n_max:
        raise ValueError(
            f"job {job.id!r} n_max={job.n_max}: the exact program needs n_min == n_max "
            f"(n_min={job.n_min})"
        )
    grid = _grid(data.slot_seconds, job.restart_overhead)
    if grid is None:
        raise ValueError(
            f"job {job.id!r} restart_overhead={job.restart_overhead!r}: expected a length "
            f"sharing a unit of at least 1 ms with slot_seconds={data.slot_seconds!r}"
        )
    modes = _modes(job, data)
    cells = _stored_choices(job, data, grid, len(modes))
    if cells > MAX_STORED_CHOICES:
        raise ValueError(
            f"job {job.id!r}: the exact program would store {cells} choices; expected at most "
            f"{MAX_STORED_CHOICES} (shorten the horizon or the workload)"
        )
    return _Program(data, job, grid, modes).solve()


class _Program:
    """One run of the dynamic program; states are ``0`` (idle) and ``1 + k*phases + p`` for
    mode ``k`` in phase ``p`` (``p = phases - 1``: overhead paid)."""

    def __init__(self, data: MarketData, job: Job, grid: _Grid, modes: list[Allocation]) -> None:
        self.data, self.job, self.grid, self.modes = data, job, grid, modes
        self.phases = grid.phases
        self.n_states = 1 + len(modes) * self.phases
        self.state_type = np.min_scalar_type(self.n_states)
        self.need = _need_units(job, grid)
        self.levels = math.ceil(self.need)
        self.work_seconds = job.workload / job.throughput(job.n_min) * SECONDS_PER_HOUR
        self.slots = active_slots(job, data.origin, data.slot_seconds, data.n_slots)
        markets = np.array([a.market for a in modes], dtype=int)
        spot = np.array([a.spot for a in modes], dtype=float)[:, None]
        on_demand = np.array([a.on_demand for a in modes], dtype=float)[:, None]
        od_price = data.on_demand_prices[markets][:, None]
        self.cost = (spot * data.price[markets] + on_demand * od_price) * data.slot_hours
        self.usable = data.availability[markets] >= spot.astype(np.int64)

    def band(self, tau: int) -> tuple[int, int]:
        """Progress levels kept after the ``tau``-th active slot (``tau = -1``: the start)."""
        if tau < 0:
            return 0, 0
        hi = min(self.levels - 1, self.grid.slot * (tau + 1))
        lo = max(0, math.ceil(self.need - self.grid.slot * (len(self.slots) - 1 - tau)))
        return lo, hi

    def solve(self) -> Plan:
        job = self.job
        best = _Finish(utility=-job.miss_penalty)
        values = np.zeros((self.n_states, 1))
        values[1:] = _NEG
        values[0, 0] = 0.0
        low = 0
        history: list[_Choices] = []
        for tau, t in enumerate(self.slots):
            new_low, new_high = self.band(tau)
            values, choices = self.step(t, values, low, new_low, new_high - new_low + 1, best)
            history.append(choices)
            low = new_low
            if values.shape[1] == 0:
                break
        return self.rebuild(best, history)

    def step(
        self, t: int, old: np.ndarray, old_low: int, low: int, width: int, best: _Finish
    ) -> tuple[np.ndarray, _Choices]:
        grid, phases = self.grid, self.phases
        width = max(width, 0)
        n_modes = len(self.modes)
        old_width = old.shape[1]
        columns = np.arange(old_width)

        def shift(rows: np.ndarray, units: int, fill: float | int) -> np.ndarray:
            out = np.full((*rows.shape[:-1], width), fill, dtype=rows.dtype)
            d = low - units - old_low
            i0, i1 = max(0, -d), min(width, old_width - d)
            if i1 > i0:
                out[..., i0:i1] = rows[..., i0 + d : i1 + d]
            return out

        new = np.full((self.n_states, width), _NEG)
        new[0] = shift(old.max(axis=0), 0, _NEG)
        idle_from = shift(old.argmax(axis=0).astype(self.state_type), 0, 0)
        # Best source for entering each mode: the best state outside that mode.
        by_mode = old[1:].reshape(n_modes, phases, old_width)
        group_value = np.vstack((old[:1], by_mode.max(axis=1)))
        group_state = np.vstack((
            np.zeros((1, old_width), dtype=self.state_type),
            (1 + np.arange(n_modes)[:, None] * phases
             + by_mode.argmax(axis=1)).astype(self.state_type),
        ))
        first = group_value.argmax(axis=0)
        first_value = group_value[first, columns]
        first_state = group_state[first, columns]
        masked = group_value.copy()
        masked[first, columns] = _NEG
        second = masked.argmax(axis=0)
        second_value = masked[second, columns]
        second_state = group_state[second, columns]

        entered_from = np.zeros((n_modes, width), dtype=self.state_type)
        continued = np.zeros((n_modes, width), dtype=bool)
        start = self.data.slot_start(t)
        productive, overhead, full = grid.productive, grid.overhead, grid.slot
        for k in range(n_modes):
            if not self.usable[k, t]:
                continue
            cost = self.cost[k, t]
            own = first == k + 1
            source = np.where(own, second_value, first_value) - cost
            entered_from[k] = shift(np.where(own, second_state, first_state), productive[0], 0)
            rows = old[1 + k * phases : 1 + (k + 1) * phases] - cost
            base = 1 + k * phases
            self.finish(best, t, k, source, np.where(own, second_state, first_state), old_low,
                        productive[0], start + overhead[0])
            entering = shift(source, productive[0], _NEG)
            for p in range(1, phases):
                self.finish(best, t, k, rows[p - 1], np.full(old_width, base + p - 1), old_low,
                            productive[p], start + overhead[p])
                new[base + p] = shift(rows[p - 1], productive[p], _NEG)
            self.finish(best, t, k, rows[-1], np.full(old_width, base + phases - 1), old_low,
                        full, start)
            staying = shift(rows[-1], full, _NEG)
            if phases == 1:
                continued[k] = staying > entering
                new[base] = np.maximum(entering, staying)
            else:
                new[base] = entering
                continued[k] = staying > new[base + phases - 1]
                new[base + phases - 1] = np.maximum(new[base + phases - 1], staying)
        return new, _Choices(low, idle_from, entered_from, continued)

    def finish(
        self, best: _Finish, t: int, mode: int, values: np.ndarray, sources: np.ndarray,
        old_low: int, units: int, work_starts: float,
    ) -> None:
        """Record the best completion in slot ``t`` reached with ``units`` of progress."""
        first = max(0, math.ceil(self.need - units - old_low))
        if first >= len(values):
            return
        progress = old_low + np.arange(first, len(values))
        finish_at = work_starts + (self.work_seconds - progress * self.grid.unit)
        utility = values[first:] + _values_at(self.job, finish_at)
        i = int(np.argmax(utility))
        if utility[i] > best.utility:
            best.utility = float(utility[i])
            best.slot, best.mode = t, mode
            best.source, best.progress = int(sources[first + i]), int(progress[i])

    def rebuild(self, best: _Finish, history: list[_Choices]) -> Plan:
        if best.slot < 0:
            return Plan({}, best.utility, "dp")
        job_id, phases, grid = self.job.id, self.phases, self.grid
        plan = {best.slot: {job_id: self.modes[best.mode]}}
        state, progress = best.source, best.progress
        for t in range(best.slot - 1, self.slots.start - 1, -1):
            choices = history[t - self.slots.start]
            i = progress - choices.low
            if state == 0:
                state = int(choices.idle_from[i])
                continue
            k, p = divmod(state - 1, phases)
            plan[t] = {job_id: self.modes[k]}
            last = p == phases - 1
            if last and choices.continued[k, i]:
                progress -= grid.slot
            elif p == 0:
                state = int(choices.entered_from[k, i])
                progress -= grid.productive[0]
            else:
                state -= 1
                progress -= grid.productive[p]
        return Plan(dict(sorted(plan.items())), best.utility, "dp")
