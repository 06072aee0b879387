"""The per-job dynamic program of :mod:`solver.optimize.decomposed`, compiled with numba.

States per slot: idle (0), or ``1 + c·P + p`` — configuration ``c`` in phase ``p`` of its
restart overhead (``P`` phases; the last phase is also the state of a configuration that keeps
running after its overhead is paid). A slot's reward is ``cost − λ·work`` of the state entered
(``work[c, P]``: a slot run after the overhead). Ties go to the lowest state index, and a
configuration is only entered from a state of another one (holding it is staying).
"""

from __future__ import annotations

import numpy as np
from numba import njit

_INF = np.inf


@njit(cache=True)
def _argmin(values: np.ndarray) -> int:
    """Index of the first minimum (0 when every value is infinite)."""
    best = 0
    for i in range(1, len(values)):
        if values[i] < values[best]:
            best = i
    return best


@njit(cache=True)
def solve_window(
    work: np.ndarray, cost: np.ndarray, open_: np.ndarray, start: np.ndarray,
    usable: np.ndarray, rows: np.ndarray, price: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Plans of jobs ``rows`` at work prices ``price``: configuration per slot (-1 idle) and
    the work each plan does.

    ``work[j, c, p, t]``: work of job ``j`` in configuration ``c`` at phase ``p`` (``P``: after
    the overhead) in slot ``t``; ``cost[c, t]``; ``open_[j, t]``: slot usable by job ``j``;
    ``start[j]``: the state job ``j`` holds; ``usable[c, t]``: the spot of ``c`` available.
    """
    n_rows = len(rows)
    n_cfg, phases, w = work.shape[1], work.shape[2] - 1, work.shape[3]
    n_states = 1 + n_cfg * phases
    chosen = np.full((n_rows, w), -1, dtype=np.int64)
    done = np.zeros(n_rows)
    idle_from = np.zeros(w, dtype=np.int64)
    enter_from = np.zeros((w, n_cfg), dtype=np.int64)
    stayed = np.zeros((w, n_cfg), dtype=np.bool_)
    value = np.empty(n_states)
    new = np.empty(n_states)
    groups = np.empty(1 + n_cfg)
    group_state = np.zeros(1 + n_cfg, dtype=np.int64)
    for r in range(n_rows):
        j, lam = rows[r], price[r]
        value[:] = _INF
        value[start[j]] = 0.0
        for t in range(w):
            slot_open = open_[j, t]
            groups[0] = value[0]
            for c in range(n_cfg):
                own = 1 + c * phases
                p_best = 0
                for p in range(1, phases):
                    if value[own + p] < value[own + p_best]:
                        p_best = p
                groups[1 + c] = value[own + p_best]
                group_state[1 + c] = own + p_best
            first = _argmin(groups)
            best = groups[first]
            held = groups[first]
            groups[first] = _INF
            second = _argmin(groups)
            runner_up = groups[second]
            groups[first] = held
            idle_from[t] = _argmin(value)
            new[0] = value[idle_from[t]]
            for c in range(n_cfg):
                own = 1 + c * phases
                if slot_open and usable[c, t]:
                    if first == 1 + c:
                        entering = runner_up + (cost[c, t] - lam * work[j, c, 0, t])
                        enter_from[t, c] = group_state[second]
                    else:
                        entering = best + (cost[c, t] - lam * work[j, c, 0, t])
                        enter_from[t, c] = group_state[first]
                    new[own] = entering
                    for p in range(1, phases):
                        new[own + p] = value[own + p - 1] + (cost[c, t] - lam * work[j, c, p, t])
                    staying = value[own + phases - 1] + (cost[c, t]
                                                         - lam * work[j, c, phases, t])
                else:
                    for p in range(phases):
                        new[own + p] = _INF
                    staying = _INF
                stay = staying < new[own + phases - 1]
                stayed[t, c] = stay
                if stay:
                    new[own + phases - 1] = staying
            value[:] = new
        state = _argmin(value)
        total = 0.0
        for t in range(w - 1, -1, -1):
            if state == 0:
                state = idle_from[t]
                continue
            c, p = divmod(state - 1, phases)
            chosen[r, t] = c
            if p == phases - 1 and stayed[t, c]:
                total += work[j, c, phases, t]
            else:
                total += work[j, c, p, t]
                if p == 0:
                    state = enter_from[t, c]
                else:
                    state -= 1
        done[r] = total
    return chosen, done
