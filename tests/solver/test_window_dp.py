import itertools
import math

import numpy as np
import pytest

from solver.optimize.window_dp import solve_window


def objective(seq, start, work, cost, open_, usable, lam):
    """``Σ cost − λ·work`` of a configuration sequence (-1 idle) from ``start`` = (config,
    slots run before, or None), restart phases counted as the simulator does; inf if a slot
    uses what is not there."""
    phases = work.shape[1] - 1
    prev, run = start if start is not None else (-1, 0)
    total = 0.0
    for t, c in enumerate(seq):
        if c < 0:
            prev = -1
            continue
        run = run + 1 if c == prev else 0
        prev = c
        if not (open_[t] and usable[c, t]):
            return math.inf
        total += cost[c, t] - lam * work[c, min(run, phases), t]
    return total


def instance(seed, configs=3, phases=2, slots=5):
    rng = np.random.default_rng(seed)
    work = np.sort(rng.uniform(0.0, 1.0, (1, configs, phases + 1, slots)), axis=2)
    cost = rng.uniform(0.2, 1.0, (configs, slots))
    usable = rng.random((configs, slots)) < 0.8
    open_ = np.ones((1, slots), dtype=bool)
    open_[0, slots - 1] = rng.random() < 0.5
    return work, cost, open_, usable


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("start", [None, (1, 0), (2, 5)])
def test_the_window_program_finds_the_best_sequence_by_enumeration(seed, start):
    work, cost, open_, usable = instance(seed)
    configs, phases = work.shape[1], work.shape[2] - 1
    state = 0 if start is None else 1 + start[0] * phases + min(start[1], phases - 1)
    lams = np.array([0.5, 1.5, 3.0])
    chosen, done = solve_window(work, cost, open_, np.array([state]), usable,
                                np.zeros(len(lams), dtype=np.int64), lams)
    for r, lam in enumerate(lams):
        best = min(objective(seq, start, work[0], cost, open_[0], usable, lam)
                   for seq in itertools.product(range(-1, configs), repeat=work.shape[3]))
        found = objective(chosen[r], start, work[0], cost, open_[0], usable, lam)
        assert found == pytest.approx(best)
        # ``done`` is the work of the plan returned.
        spent = sum(cost[c, t] for t, c in enumerate(chosen[r]) if c >= 0)
        assert found == pytest.approx(spent - lam * done[r])


def test_a_higher_work_price_never_plans_less_work():
    work, cost, open_, usable = instance(3, configs=4, phases=3, slots=8)
    lams = np.array([0.1, 0.5, 1.0, 2.0, 5.0, 50.0])
    _, done = solve_window(work, cost, open_, np.array([0]), usable,
                           np.zeros(len(lams), dtype=np.int64), lams)
    assert np.all(np.diff(done) >= -1e-12)
    assert done[0] < done[-1]
