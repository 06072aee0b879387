"""Exact offline dynamic program for one job at a fixed instance count (``n_min == n_max``)
over every market it may use.

This is the Can't Be Late setting and SkyNomad's multi-region one: one job, ``n`` instances,
slots that may be the trace's ticks, a restart overhead that may span several slots, and
moves of the job's checkpoint between markets (:mod:`solver.migration`). The program follows
the simulator's rules (:mod:`solver.simulator`) exactly:

* a *mode* is one configuration ``(market, spot, on-demand)`` with ``spot + on-demand = n``
  in an allowed market; a spot mode is usable in slot ``t`` only when ``availability[m, t] >=
  spot``, and any mode only when its hourly bill at the boundary's prices keeps to the job's
  cap;
* entering a mode (from idle or from another mode) starts an overhead of the restart overhead
  plus the transfer time of moving the checkpoint from where it is (its *entry class*), and
  bills the move's egress in that slot; slot ``i`` of an unbroken run is productive for
  ``slot - min(max(overhead - i*slot, 0), slot)`` seconds, so the overhead *phase* (slots
  since the run started, capped at the first productive one) is part of the state;
* the checkpoint is where the job last made progress: in the market of a run that has
  reached its productive phase, else where it was before. So a run's progress phase, and an
  idle job's checkpoint place (the start — home region or nowhere — or a market), are states
  wherever moving costs anything; with nothing to pay for moving, one idle state serves;
* every slot run is billed in full, the final partial one included; completion time inside
  the final slot is exact, and the job's value function is applied to it; the plan that never
  runs (worth ``-miss_penalty``) is the alternative to finishing.

A run left before its first productive slot (for another mode, or for idling) is never part
of a best plan: idling through those slots instead reaches the same state (same progress,
same checkpoint place) for less. So such runs only go on; this keeps the checkpoint place out
of the run states.

Progress is counted in productive seconds at ``n`` instances, in units of ``g``, the largest
length dividing the slot and every entry class's overhead (195 s ticks and 72 s overhead:
``g = 3 s``; 720 s: ``g = 15 s``; transfer times are whole minutes). Every reachable progress is
a whole number of units, so the discretisation is exact. States are ``(slot, state,
progress)``; a progress band is kept per slot (no more than the slots so far can reach, no
less than the slots left can still finish). The forward pass is compiled with numba; for each
state with several ways in, the way taken is stored per slot and progress level (one byte) to
rebuild the plan. Ties go to the first way in a fixed order, so the plan is deterministic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from numba import njit

from solver.job import FINISH_TOLERANCE, Allocation, Job
from solver.market import SECONDS_PER_HOUR, MarketData
from solver.migration import DEFAULT_MIGRATION, MigrationTable, Move, Place
from solver.optimize.horizon import active_slots
from solver.optimize.plan import Plan

MAX_STORED_CHOICES = 300_000_000
"""Largest number of stored choice cells (bytes) the program accepts."""

_NEG = -np.inf
START = -1
"""The checkpoint place of a job that has not made progress yet: its home region or nowhere."""


@dataclass(frozen=True)
class _Entry:
    """An entry class: an overhead of ``overhead`` seconds, and per phase the productive units
    and the overhead seconds of the slot (the last phase is the first productive one)."""

    overhead: float
    productive: tuple[int, ...]
    lost: tuple[float, ...]

    @property
    def phases(self) -> int:
        return len(self.productive)


def _fraction(seconds: float) -> Fraction | None:
    f = Fraction(seconds).limit_denominator(1000)
    return f if float(f) == seconds else None


def _unit(slot_seconds: float, overheads: list[float]) -> Fraction | None:
    """The largest length dividing the slot and every overhead, or ``None`` when they share
    no unit of at least a millisecond."""
    lengths = [_fraction(x) for x in (slot_seconds, *overheads)]
    exact = [f for f in lengths if f is not None]
    if len(exact) < len(lengths):
        return None
    unit = exact[0]
    for f in exact[1:]:
        if f:
            unit = Fraction(math.gcd(unit.numerator * f.denominator,
                                     f.numerator * unit.denominator),
                            unit.denominator * f.denominator)
    return unit


def _exact(seconds: float) -> Fraction:
    """``seconds`` as an exact fraction (:func:`_unit` found one for every length)."""
    f = _fraction(seconds)
    if f is None:
        raise ValueError(f"{seconds!r} s: expected a length exact to the millisecond")
    return f


def _entry(slot_seconds: float, overhead: float, unit: Fraction) -> _Entry:
    slot_f, over_f = _exact(slot_seconds), _exact(overhead)
    phases = math.floor(over_f / slot_f) + 1
    lost = [min(max(over_f - i * slot_f, Fraction(0)), slot_f) for i in range(phases)]
    return _Entry(overhead, tuple(int((slot_f - x) / unit) for x in lost),
                  tuple(min(max(overhead - i * slot_seconds, 0.0), slot_seconds)
                        for i in range(phases)))


@dataclass(frozen=True)
class _Model:
    """The job's modes, moves and states, and the ways into each state (sorted by state).

    States: first the idle ones (``idle_place[s]``: ``START`` or a market), then the runs
    (``mode``, ``entry`` class, ``phase``). Way ``w`` leads from ``way_from[w]`` into
    ``way_to[w]``, adding ``way_units[w]`` of progress, with ``way_lost[w]`` seconds of the slot
    lost to overhead and ``way_egress[w]`` USD of egress.
    """

    modes: list[Allocation]
    unit: float
    slot_units: int
    state_mode: np.ndarray
    idle_place: list[int]
    first_way: np.ndarray
    way_from: np.ndarray
    way_units: np.ndarray
    way_lost: np.ndarray
    way_egress: np.ndarray

    @property
    def n_states(self) -> int:
        return len(self.state_mode)

    def stored(self) -> np.ndarray:
        """Per state, its row among the states whose way in is stored (-1: one way in)."""
        many = np.diff(self.first_way) > 1
        rows = np.full(self.n_states, -1, dtype=np.int64)
        rows[many] = np.arange(int(many.sum()))
        return rows


def _build(job: Job, data: MarketData, migration: MigrationTable) -> _Model | None:
    """The program's model, or ``None`` when the slot and the overheads share no unit."""
    n = job.n_min
    allowed = [m for m, market in enumerate(data.markets) if job.may_use(market.key)]
    spots = range(n + 1) if job.allow_spot else range(1)
    modes = [Allocation(m, s, n - s) for m in allowed for s in spots]
    places = [Place.of(market) for market in data.markets]

    def move(source: int, market: int) -> Move:
        where = job.home if source == START else places[source]
        return migration.move(where, places[market], job.checkpoint_gb)

    sources = [START, *allowed]
    moves = {(src, m): move(src, m) for src in sources for m in allowed}
    placed = any(mv.transfer_seconds or mv.egress_usd for mv in moves.values())
    idle = sources if placed else [START]
    overheads = sorted({job.restart_overhead + mv.transfer_seconds for mv in moves.values()})
    unit = _unit(data.slot_seconds, overheads)
    if unit is None:
        return None
    classes = {o: _entry(data.slot_seconds, o, unit) for o in overheads}

    def entry_of(src: int, mode: int) -> float:
        market = modes[mode].market
        return job.restart_overhead + moves[(src if placed else START, market)].transfer_seconds

    runs: list[tuple[int, float, int]] = []
    for k in range(len(modes)):
        for o in sorted({entry_of(src, k) for src in idle}):
            runs.extend((k, o, p) for p in range(classes[o].phases))
    index: dict[tuple[str | int | float, ...], int] = {
        ("idle", place): i for i, place in enumerate(idle)}
    index.update({("run", *r): len(idle) + i for i, r in enumerate(runs)})
    last = {(k, o): classes[o].phases - 1 for k, o, _ in runs}
    progressed = [(k, o) for k, o, p in runs if p == last[(k, o)]]
    slot_units = int(_exact(data.slot_seconds) / unit)

    ways: list[tuple[int, int, int, float, float]] = []  # (to, from, units, lost, egress)
    for i, place in enumerate(idle):
        ways.append((i, i, 0, 0.0, 0.0))
        for k, o in progressed:
            if not placed or modes[k].market == place:
                ways.append((i, index[("run", k, o, last[(k, o)])], 0, 0.0, 0.0))
    for k, o, p in runs:
        target = index[("run", k, o, p)]
        entry = classes[o]
        if p == 0:
            market = modes[k].market
            for src in idle:
                if entry_of(src, k) == o:
                    ways.append((target, index[("idle", src)], entry.productive[0],
                                 entry.lost[0], moves[(src, market)].egress_usd))
            for k2, o2 in progressed:
                src = modes[k2].market
                if k2 != k and entry_of(src, k) == o:
                    ways.append((target, index[("run", k2, o2, last[(k2, o2)])],
                                 entry.productive[0], entry.lost[0],
                                 moves[(src if placed else START, market)].egress_usd))
        else:
            ways.append((target, index[("run", k, o, p - 1)], entry.productive[p],
                         entry.lost[p], 0.0))
        if p == last[(k, o)]:
            ways.append((target, target, slot_units, 0.0, 0.0))
    ways.sort(key=lambda w: w[0])  # stable: each state's ways keep their order
    to = np.array([w[0] for w in ways], dtype=np.int64)
    n_states = len(idle) + len(runs)
    return _Model(
        modes=modes,
        unit=float(unit),
        slot_units=slot_units,
        state_mode=np.array([-1] * len(idle) + [k for k, _, _ in runs], dtype=np.int64),
        idle_place=idle,
        first_way=np.searchsorted(to, np.arange(n_states + 1)).astype(np.int64),
        way_from=np.array([w[1] for w in ways], dtype=np.int64),
        way_units=np.array([w[2] for w in ways], dtype=np.int64),
        way_lost=np.array([w[3] for w in ways], dtype=float),
        way_egress=np.array([w[4] for w in ways], dtype=float),
    )


def _need_units(job: Job, unit: float) -> float:
    seconds = job.workload / job.throughput(job.n_min) * SECONDS_PER_HOUR
    return seconds / unit * (1.0 - FINISH_TOLERANCE)


def _bands(need: float, slot_units: int, n_slots: int) -> tuple[np.ndarray, np.ndarray]:
    """Progress levels kept after each active slot: no more than the slots so far reach, no
    less than the slots left can still finish, never a finished level."""
    levels = math.ceil(need)
    tau = np.arange(n_slots)
    hi = np.minimum(levels - 1, slot_units * (tau + 1))
    lo = np.maximum(0, np.ceil(need - slot_units * (n_slots - 1 - tau))).astype(np.int64)
    return lo, hi.astype(np.int64)


def _stored_cells(model: _Model, lo: np.ndarray, hi: np.ndarray) -> int:
    rows = int((model.stored() >= 0).sum())
    return int(np.clip(hi - lo + 1, 0, None).sum()) * rows


def exact_dp_applies(jobs: list[Job] | tuple[Job, ...], data: MarketData,
                     migration: MigrationTable = DEFAULT_MIGRATION) -> bool:
    """True for one job with ``n_min == n_max`` whose slot and overheads share a unit and
    whose stored choices fit :data:`MAX_STORED_CHOICES`."""
    if len(jobs) != 1 or jobs[0].n_min != jobs[0].n_max:
        return False
    job = jobs[0].resolved(list(data.index))
    model = _build(job, data, migration)
    if model is None:
        return False
    slots = active_slots(job, data.origin, data.slot_seconds, data.n_slots)
    lo, hi = _bands(_need_units(job, model.unit), model.slot_units, len(slots))
    return _stored_cells(model, lo, hi) <= MAX_STORED_CHOICES


def solve_single_job(data: MarketData, job: Job,
                     migration: MigrationTable = DEFAULT_MIGRATION) -> Plan:
    """The utility-maximising plan for ``job`` alone on ``data`` (module doc for the model)."""
    if job.n_min != job.n_max:
        raise ValueError(
            f"job {job.id!r} n_max={job.n_max}: the exact program needs n_min == n_max "
            f"(n_min={job.n_min})"
        )
    job = job.resolved(list(data.index))
    model = _build(job, data, migration)
    if model is None:
        raise ValueError(
            f"job {job.id!r} restart_overhead={job.restart_overhead!r}: expected a length "
            f"sharing a unit of at least 1 ms with slot_seconds={data.slot_seconds!r} (and "
            "with the transfer times of its moves)"
        )
    slots = active_slots(job, data.origin, data.slot_seconds, data.n_slots)
    need = _need_units(job, model.unit)
    lo, hi = _bands(need, model.slot_units, len(slots))
    cells = _stored_cells(model, lo, hi)
    if cells > MAX_STORED_CHOICES:
        raise ValueError(
            f"job {job.id!r}: the exact program would store {cells} choices; expected at most "
            f"{MAX_STORED_CHOICES} (shorten the horizon or the workload)"
        )
    if not slots:
        return Plan({}, -job.miss_penalty, "dp")
    cut = slice(slots.start, slots.stop)
    markets = np.array([a.market for a in model.modes], dtype=int)
    spot = np.array([a.spot for a in model.modes], dtype=float)[:, None]
    on_demand = np.array([a.on_demand for a in model.modes], dtype=float)[:, None]
    od_price = data.on_demand_prices[markets][:, None]
    cost = (spot * data.price[markets, cut] + on_demand * od_price) * data.slot_hours
    usable = data.availability[markets, cut] >= spot.astype(np.int64)
    if job.max_hourly_usd is not None:
        bill = spot * data.boundary_price[markets, cut] + on_demand * od_price
        usable &= np.vectorize(job.within_cap)(bill)
    rows = model.stored()
    width = np.clip(hi - lo + 1, 0, None)
    offsets = np.concatenate(([0], np.cumsum(width * int((rows >= 0).sum())))).astype(np.int64)
    most_ways = int(np.diff(model.first_way).max())
    choices = np.zeros(int(offsets[-1]), dtype=np.uint8 if most_ways <= 256 else np.uint16)
    work_seconds = job.workload / job.throughput(job.n_min) * SECONDS_PER_HOUR
    starts = data.origin + np.arange(slots.start, slots.stop) * data.slot_seconds
    utility, best_slot, best_way, best_level = _forward(
        model.first_way, model.way_from, model.way_units, model.way_lost, model.way_egress,
        model.state_mode, rows, np.ascontiguousarray(cost), np.ascontiguousarray(usable),
        lo, hi, need, model.unit, work_seconds, starts, job.soft_deadline, job.hard_deadline,
        job.value, job.value_at_hard_deadline, job.miss_penalty, choices, offsets)
    if best_slot < 0:
        return Plan({}, float(utility), "dp")
    return Plan(_rebuild(model, rows, choices, offsets, lo, width, slots.start, best_slot,
                         best_way, best_level, job.id), float(utility), "dp")


def _rebuild(model: _Model, rows: np.ndarray, choices: np.ndarray, offsets: np.ndarray,
             lo: np.ndarray, width: np.ndarray, first: int, slot: int, way: int, level: int,
             job_id: str) -> dict[int, dict[str, Allocation]]:
    """The plan ending with ``way`` from progress ``level`` in active slot ``slot``."""
    target = int(np.searchsorted(model.first_way, way, side="right") - 1)
    plan = {first + slot: {job_id: model.modes[model.state_mode[target]]}}
    state = int(model.way_from[way])
    for tau in range(slot - 1, -1, -1):
        mode = int(model.state_mode[state])
        if mode >= 0:
            plan[first + tau] = {job_id: model.modes[mode]}
        w = int(model.first_way[state])
        if rows[state] >= 0:
            cell = offsets[tau] + rows[state] * width[tau] + level - lo[tau]
            w += int(choices[cell])
        level -= int(model.way_units[w])
        state = int(model.way_from[w])
    return dict(sorted(plan.items()))


@njit(cache=True)
def _value_at(t: float, soft: float, hard: float, value: float, at_hard: float,
              miss_penalty: float) -> float:
    """:meth:`solver.job.Job.value_at` of a completion at ``t``."""
    if t > hard:
        return -miss_penalty
    if t <= soft:
        return value
    return value + (t - soft) / (hard - soft) * (at_hard - value)


@njit(cache=True)
def _forward(first_way: np.ndarray, way_from: np.ndarray, way_units: np.ndarray,
             way_lost: np.ndarray, way_egress: np.ndarray, state_mode: np.ndarray,
             rows: np.ndarray, cost: np.ndarray, usable: np.ndarray, lo: np.ndarray,
             hi: np.ndarray, need: float, unit: float, work_seconds: float, starts: np.ndarray,
             soft: float, hard: float, value: float, at_hard: float, miss_penalty: float,
             choices: np.ndarray, offsets: np.ndarray,
             ) -> tuple[float, int, int, int]:  # pragma: no cover - compiled
    """Best utility, and the active slot, way and progress level of the completion reaching
    it (-1: never running is best); fills ``choices`` with the way into each stored state."""
    n_states = len(state_mode)
    n_slots = len(lo)
    n_rows = 0
    for s in range(n_states):
        if rows[s] >= 0:
            n_rows += 1
    size = 1
    for t in range(n_slots):
        size = max(size, hi[t] - lo[t] + 1)
    old = np.full((n_states, size), -np.inf)
    new = np.full((n_states, size), -np.inf)
    old[0, 0] = 0.0
    old_lo, old_hi = 0, 0
    best, best_slot, best_way, best_level = -miss_penalty, -1, -1, -1
    for t in range(n_slots):
        new_lo, new_hi = lo[t], hi[t]
        width = new_hi - new_lo + 1
        for s in range(n_states):
            for j in range(max(width, 0)):
                new[s, j] = -np.inf
        for target in range(n_states):
            k = state_mode[target]
            if k >= 0 and not usable[k, t]:
                continue
            charge = cost[k, t] if k >= 0 else 0.0
            row = rows[target]
            for w in range(first_way[target], first_way[target + 1]):
                src = way_from[w]
                d = way_units[w]
                pay = way_egress[w] + charge
                for j in range(max(new_lo, old_lo + d), min(new_hi, old_hi + d) + 1):
                    v = old[src, j - d - old_lo]
                    if v == -np.inf:
                        continue
                    v -= pay
                    if v > new[target, j - new_lo]:
                        new[target, j - new_lo] = v
                        if row >= 0:
                            choices[offsets[t] + row * width + j - new_lo] = w - first_way[target]
                if k < 0:
                    continue
                for j in range(max(old_lo, math.ceil(need - d)), old_hi + 1):
                    v = old[src, j - old_lo]
                    if v == -np.inf:
                        continue
                    done = starts[t] + way_lost[w] + (work_seconds - j * unit)
                    u = v - pay + _value_at(done, soft, hard, value, at_hard, miss_penalty)
                    if u > best:
                        best, best_slot, best_way, best_level = u, t, w, j
        if width <= 0:
            break
        old, new = new, old
        old_lo, old_hi = new_lo, new_hi
    return best, best_slot, best_way, best_level
