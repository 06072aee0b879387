"""A stochastic dynamic program for one job at a fixed instance count in one spot market.

The model (units: slots of the grid; ``n`` instances; ``μ`` the restart overhead in slots):

* The state at a boundary is the time ``t``, the **slack** ``σ = τ − w`` (``τ``: slots left to
  the hard deadline, ``w``: slots of productive running the remaining work needs), the mode
  held in the slot before (idle, spot or on-demand), and the spot market's state: capacity in
  this slot or not (seen at the boundary) and the age bucket of that run
  (:mod:`solver.forecast.hazards`). Capacity in the next slot follows the run hazards of a
  :class:`~solver.forecast.hazards.HazardTable` (or any per-slot probabilities, see
  :class:`SpotModel`).
* Actions: idle (``σ`` falls by one slot), spot (only with capacity), or on-demand. Running the
  mode already held keeps ``σ``; entering another mode pays the overhead at once: ``σ`` falls
  by ``μ`` and the slot does ``1 − μ`` slots of work. A slot run is billed in full, the last
  partial one included; a spot run lost to a slot without capacity leaves the job idle.
* The hard deadline is kept by the on-demand fallback: an action is allowed only if, whatever
  capacity comes, on-demand can still finish in time: ``σ ≥ μ`` after the slot unless
  on-demand is held, ``σ ≥ 0`` on on-demand, and for spot also if the slot's spot is not
  granted after all (the boundary shows the capacity in force at the slot's start, which may
  not last the whole slot).
* It minimises the expected bill minus the value of finishing (the job's value function at the
  completion time), by backward induction over ``t``. ``σ`` lives on a grid of ``step``-slot
  spacing (whole slots unless the slack is long, :data:`MAX_GRID` points at most) that ends at
  the slack the program is solved at, so that idling and running, which move ``σ`` by whole
  slots, keep the job on grid points; off them (after a restart's overhead) values are
  interpolated linearly. Grid states from which no action is allowed hold the bill of running
  on-demand to the end, so interpolation near the deadline stays continuous; cells past the end
  of the work (no job is there: it finished) hold the value of owing a sliver of work, which a
  slot is billed in full to finish, so the last slot never looks free. Values are stored as
  32-bit floats.

Paying the overhead at once, rather than over the slots it spans, changes only what a spot run
lost during its overhead costs: the model charges the whole overhead, the simulator what
elapsed — a slightly pessimistic view of short spot runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numba import njit

from solver.forecast.hazards import AGE_ADVANCE

IDLE, SPOT, ON_DEMAND = 0, 1, 2
"""Actions, and the modes a job holds."""

_EPS = 1e-9
_TINY_WORK = 1e-6
"""Slots of work standing for "a sliver left" in the cells no real state reaches."""

MAX_GRID = 160
"""Most slack grid points; a longer slack gets a coarser grid."""

MAX_CELLS = 600_000
"""Most (slot, slack) cells a program takes (about 120 MB of values at 0.2 h overhead)."""


def overhead_phases(overhead: float) -> int:
    """Slots a restart overhead of ``overhead`` slots spans (at least 1)."""
    return max(1, math.ceil(overhead - _EPS))


def state_count(overhead: float) -> int:
    """States per (slot, slack, run bucket): idle and on-demand with and without capacity,
    spot with its overhead paid, and spot in each slot of its overhead but the last."""
    return 5 + overhead_phases(overhead) - 1


def state_index(mode: int, capacity: bool, overhead: float = 0.0, owed: float = 0.0) -> int:
    """The index of (mode held, capacity now, spot overhead still owed in slots); spot held
    without capacity is idle (lost)."""
    if mode == SPOT:
        if not capacity:
            return 0
        if owed <= _EPS:
            return 4
        elapsed = min(max(round(overhead - owed), 1), overhead_phases(overhead) - 1)
        return 4 + elapsed
    return (2 if mode == ON_DEMAND else 0) + int(capacity)


@dataclass(frozen=True)
class SpotModel:
    """What the program knows of the spot market over slots ``0 .. T-1`` from now.

    ``on[t, a, b]``: probability of capacity in slot ``t + 1`` given capacity ``a`` (0/1) in
    slot ``t`` and the age bucket ``b`` of that run; ``price[t]``: spot USD per instance-hour
    in slot ``t``.
    """

    on: np.ndarray
    price: np.ndarray

    def __post_init__(self) -> None:
        if self.on.ndim != 3 or self.on.shape[1] != 2 or len(self.price) != len(self.on):
            raise ValueError(
                f"spot model on {self.on.shape}, price {self.price.shape}: expected (T, 2, "
                "buckets) and (T,)")


@dataclass(frozen=True)
class SingleJob:
    """One job as the program sees it, times in slots from the program's origin: ``deadline``
    (hard), ``soft``, ``overhead`` (``μ``); its ``instances`` and their on-demand price, the
    value at the soft and hard deadlines and the penalty for missing. The work left is part of
    the state (through the slack), not of the job."""

    deadline: float
    soft: float
    overhead: float
    instances: int
    on_demand_price: float
    slot_hours: float
    value: float
    value_at_hard_deadline: float
    miss_penalty: float


@dataclass(frozen=True)
class Solution:
    """Expected cost-to-go ``values[t, state, bucket, i]`` at slack ``offset + i · step``
    (slots), for ``t = 0 .. T``, and the problem it solves."""

    job: SingleJob
    model: SpotModel
    values: np.ndarray
    step: float
    offset: float

    @property
    def slots(self) -> int:
        return int(self.values.shape[0]) - 1

    @property
    def max_slack(self) -> float:
        return self.offset + (int(self.values.shape[3]) - 1) * self.step

    @cached_property
    def _packed(self) -> np.ndarray:
        """The job and grid as the compiled functions read them."""
        return _params(self.job, self.step, self.offset)

    def action_values(self, t: int, mode: int, capacity: bool, bucket: int, slack: float,
                      owed: float = 0.0) -> np.ndarray:
        """Expected cost-to-go of idle, spot and on-demand at slot ``t`` (``inf`` where not
        allowed), for a job holding ``mode`` that still owes ``owed`` slots of spot overhead
        (an on-demand overhead counts as paid: take it out of ``slack``)."""
        if not 0 <= t < self.slots:
            raise ValueError(f"t={t!r}: expected a slot in 0..{self.slots - 1}")
        out = np.empty(3)
        _q(self.values, self.model.on, self.model.price, self._packed,
           AGE_ADVANCE, t, state_index(mode, capacity, self.job.overhead, owed), bucket,
           slack, out)
        return out


def horizon(job: SingleJob, window: int | None = None) -> int:
    """The slots the program spans: up to the one holding the hard deadline, or ``window``
    slots when that is sooner."""
    slots = max(1, math.ceil(job.deadline - _EPS))
    return slots if window is None else max(1, min(slots, window))


def grid_for(max_slack: float) -> tuple[int, float, float]:
    """Grid points, their spacing and the first one's slack (slots): a grid ending at
    ``max_slack``, the slack the program is solved at, and starting less than a step above 0.
    Idling and running move the slack by whole slots, so with whole-slot steps the job's
    states stay on the grid until a restart's overhead shifts them."""
    span = max(max_slack, 0.0)
    step = max(1.0, span / (MAX_GRID - 1))
    grid = math.floor(span / step + _EPS) + 1
    return grid, step, max(span - (grid - 1) * step, 0.0)


def fits(job: SingleJob, max_slack: float, window: int | None = None) -> bool:
    """True when the program for ``job`` stays within :data:`MAX_CELLS`."""
    return horizon(job, window) * grid_for(max_slack)[0] <= MAX_CELLS


def work(job: SingleJob, max_slack: float, window: int | None = None) -> int:
    """The (slot, slack, state) cells a program for ``job`` solves: what its time grows with."""
    return horizon(job, window) * grid_for(max_slack)[0] * state_count(job.overhead)


def solve(job: SingleJob, model: SpotModel, max_slack: float, window: int | None = None
          ) -> Solution:
    """Backward induction over the job's slots, or its first ``window`` slots with the work
    left after them valued at on-demand to the end (module doc); the grid covers slack
    ``0 .. max_slack``."""
    slots = horizon(job, window)
    if len(model.on) < slots:
        raise ValueError(f"spot model of {len(model.on)} slots: expected at least {slots}")
    if not fits(job, max_slack, window):
        raise ValueError(f"{slots} slots with slack {max_slack:g}: expected at most "
                         f"{MAX_CELLS} (slot, slack) cells")
    grid, step, offset = grid_for(max_slack)
    values = _solve(slots, grid, state_count(job.overhead), model.on, model.price,
                    _params(job, step, offset), AGE_ADVANCE)
    return Solution(job, model, values, step, offset)


def _params(job: SingleJob, step: float, offset: float) -> np.ndarray:
    return np.array([job.deadline, job.soft, job.overhead, float(job.instances),
                     job.on_demand_price, job.slot_hours, job.value, job.value_at_hard_deadline,
                     job.miss_penalty, step, float(overhead_phases(job.overhead)), offset])


@njit(cache=True, inline="always")
def _position(params: np.ndarray, slack: float) -> float:
    """Where ``slack`` falls on the grid (below its first point: at it)."""
    return max(float((slack - params[11]) / params[9]), 0.0)


@njit(cache=True)
def _reward(params: np.ndarray, at: float) -> float:
    """The job's value of finishing ``at`` slots from the origin (capped at the hard
    deadline)."""
    deadline, soft = params[0], params[1]
    at = min(at, deadline)
    if at <= soft or deadline <= soft:
        return float(params[6])
    return float(params[6] + (at - soft) / (deadline - soft) * (params[7] - params[6]))


@njit(cache=True, inline="always")
def _interp(values: np.ndarray, t: int, state: int, bucket: int, position: float) -> float:
    """``values[t, state, bucket]`` (a value per slack grid point) at a fractional grid
    ``position``."""
    last = values.shape[3] - 1
    if position >= last:
        return float(values[t, state, bucket, last])
    i = int(position)
    f = position - i
    if f < _EPS:
        return float(values[t, state, bucket, i])
    return float((1.0 - f) * values[t, state, bucket, i] + f * values[t, state, bucket, i + 1])


_LEAD, _TERMINAL, _BARRED = 0, 1, 2
"""What an action site is at a boundary: it leads to the next boundary (valued from the rows
of the next slot's values), it ends the job (a value of its own), or it is not allowed."""


@njit(cache=True)
def _sites(values: np.ndarray, price: np.ndarray, params: np.ndarray, t: int, slack: float,
           rows: np.ndarray, kind: np.ndarray, terminal: np.ndarray) -> None:
    """What each action site is at boundary ``t`` and ``slack``, whatever the held state's
    capacity and age bucket: site 0 idling, 1 entering on-demand (paying the overhead), 2
    holding on-demand, 3 entering spot, ``k >= 4`` spot held in state ``k``. Into ``kind[k]``
    (:data:`_LEAD`, :data:`_TERMINAL` with its value in ``terminal[k]``, or :data:`_BARRED`)
    and, for a site that leads on, ``rows[k, 0, b]`` and ``rows[k, 1, b]``: the values at the
    next boundary, in age bucket ``b``, of the state the job is in if the next slot has no
    capacity and if it has (spot sites need the first only in bucket 0). Interpolating once per
    (slot, slack) serves every bucket."""
    deadline, overhead, phases = params[0], params[2], int(params[10])
    buckets = values.shape[2]
    work = deadline - t - slack
    idled = slack - 1.0
    if idled >= overhead - _EPS:
        _rows(values, t, 0, 1, _position(params, idled), buckets, rows, 0)
        kind[0] = _LEAD
    else:
        kind[0] = _BARRED
    on_demand = params[3] * params[5] * params[4]
    for site, paid in ((1, overhead), (2, 0.0)):
        if work + paid <= 1.0 + _EPS:
            kind[site] = _TERMINAL
            terminal[site] = on_demand - _reward(params, t + paid + work)
        elif slack - paid < -_EPS:
            kind[site] = _BARRED
        else:
            _rows(values, t, 2, 3, _position(params, slack - paid), buckets, rows, site)
            kind[site] = _LEAD
    cost = params[3] * params[5] * price[t]
    for site in range(3, rows.shape[0]):
        elapsed = max(site - 4, 0)
        owed = overhead if site == 3 else (0.0 if site == 4 else overhead - elapsed)
        if slack - 1.0 < overhead - _EPS:  # the slot's spot may not be granted after all
            kind[site] = _BARRED
            continue
        if work + owed <= 1.0 + _EPS:
            kind[site] = _TERMINAL
            terminal[site] = cost - _reward(params, t + owed + work)
            continue
        after = slack - min(owed, 1.0)
        if after < overhead - _EPS:
            kind[site] = _BARRED
            continue
        kept = 4 if owed <= 1.0 + _EPS or elapsed + 1 >= phases else 5 + elapsed
        _rows(values, t, 0, kept, _position(params, after), 1, rows, site)
        kind[site] = _LEAD


@njit(cache=True, inline="always")
def _rows(values: np.ndarray, t: int, lost: int, kept: int, position: float, lost_buckets: int,
          rows: np.ndarray, site: int) -> None:
    """Values at boundary ``t + 1`` and slack grid ``position`` of state ``lost`` in its first
    ``lost_buckets`` buckets and of state ``kept`` in every bucket."""
    for b in range(lost_buckets):
        rows[site, 0, b] = _interp(values, t + 1, lost, b, position)
    for b in range(values.shape[2]):
        rows[site, 1, b] = _interp(values, t + 1, kept, b, position)


@njit(cache=True, inline="always")
def _mix(p_on: float, capacity: int, up: float, same: float, same_next: float, other: float
         ) -> float:
    """Expected value at the next boundary for a job with ``capacity`` now whose next slot
    has capacity with probability ``p_on``: if capacity stays as it is, the run goes on, its
    age moving to the next bucket with probability ``up`` (values ``same`` and ``same_next``);
    if it changes, a new run starts in the first bucket (value ``other``). Scalars only: no
    array passes in or out of the innermost loop."""
    total = 0.0
    for nxt in range(2):
        p = p_on if nxt == 1 else 1.0 - p_on
        if p <= 0.0:
            continue
        if nxt == capacity:
            v = (1.0 - up) * same
            if up > 0.0:
                v += up * same_next
        else:
            v = other
        total += p * v
    return total


@njit(cache=True)
def _q_all(rows: np.ndarray, kind: np.ndarray, terminal: np.ndarray, on: np.ndarray,
           price: np.ndarray, params: np.ndarray, advance: np.ndarray, t: int, bucket: int,
           value: np.ndarray, out: np.ndarray) -> None:
    """Action values (idle, spot, on-demand; ``inf`` where not allowed) at boundary ``t`` of
    every held state into ``out[state]``, from the action sites of the boundary's slack
    (:func:`_sites`); what states share is computed once (``value``: room for a value per
    site)."""
    states = out.shape[0]
    up = advance[bucket]
    following = min(bucket + 1, rows.shape[2] - 1)  # read only where ``up > 0``
    for capacity in range(2):
        p_on = on[t, capacity, bucket]
        for site in range(states if capacity == 1 else 3):
            if kind[site] == _TERMINAL:
                value[site] = terminal[site]
            elif kind[site] == _BARRED:
                value[site] = np.inf
            else:
                expected = _mix(p_on, capacity, up, rows[site, capacity, bucket],
                                rows[site, capacity, following], rows[site, 1 - capacity, 0])
                if site == 0:  # idling costs nothing
                    value[site] = expected
                else:
                    value[site] = params[3] * params[5] * (
                        params[4] if site < 3 else price[t]) + expected
        held = (capacity, 2 + capacity)  # idle, on-demand
        for state in held:
            out[state, 0] = value[0]
            out[state, 1] = np.inf
        out[capacity, 2] = value[1]
        out[2 + capacity, 2] = value[2]
    out[1, 1] = value[3]
    out[3, 1] = value[3]
    for state in range(4, states):
        out[state, 0] = value[0]
        out[state, 1] = value[state]
        out[state, 2] = value[1]


@njit(cache=True)
def _q(values: np.ndarray, on: np.ndarray, price: np.ndarray, params: np.ndarray,
       advance: np.ndarray, t: int, state: int, bucket: int, slack: float,
       out: np.ndarray) -> None:
    """Action values of one held state at boundary ``t`` into ``out``."""
    states, buckets = values.shape[1], values.shape[2]
    rows = np.empty((states, 2, buckets))
    kind = np.empty(states, dtype=np.int64)
    terminal = np.empty(states)
    _sites(values, price, params, t, slack, rows, kind, terminal)
    every = np.empty((states, 3))
    _q_all(rows, kind, terminal, on, price, params, advance, t, bucket, np.empty(states), every)
    out[:] = every[state]


@njit(cache=True)
def _fallback(params: np.ndarray, t: int, state: int, slack: float) -> float:
    """On-demand from boundary ``t`` to the end, whatever the deadline."""
    deadline, overhead = params[0], params[2]
    paid = 0.0 if state == 2 or state == 3 else overhead
    span = max(deadline - t - slack + paid, 0.0)
    return float(params[3] * params[5] * params[4] * math.ceil(span - _EPS)
                 - _reward(params, t + span))


@njit(cache=True)
def _solve(slots: int, grid: int, states: int, on: np.ndarray, price: np.ndarray,
           params: np.ndarray, advance: np.ndarray) -> np.ndarray:
    buckets, step, offset = on.shape[2], params[9], params[11]
    values = np.empty((slots + 1, states, buckets, grid), dtype=np.float32)
    for s in range(states):
        for i in range(grid):
            v = _fallback(params, slots, s, offset + i * step)
            for b in range(buckets):
                values[slots, s, b, i] = v
    q = np.empty((states, 3))
    rows = np.empty((states, 2, buckets))
    kind = np.empty(states, dtype=np.int64)
    terminal = np.empty(states)
    value = np.empty(states)
    for t in range(slots - 1, -1, -1):
        for i in range(grid):
            slack = offset + i * step
            if params[0] - t - slack <= _TINY_WORK:
                # No state has this little work left (a job that finishes is done):
                # the cell holds the value of a job owing a sliver of work, which a slot
                # is billed in full to finish, so that interpolating towards it does not
                # make the last slot of work look free.
                slack = params[0] - t - _TINY_WORK
            _sites(values, price, params, t, slack, rows, kind, terminal)
            for b in range(buckets):
                _q_all(rows, kind, terminal, on, price, params, advance, t, b, value, q)
                for s in range(states):
                    best = min(q[s, 0], min(q[s, 1], q[s, 2]))
                    values[t, s, b, i] = best if best < np.inf else _fallback(
                        params, t, s, slack)
    return values
