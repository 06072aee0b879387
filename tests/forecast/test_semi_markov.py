"""The semi-Markov capacity model on a synthetic market whose run hazards are known."""

import numpy as np
import pytest

from solver.forecast.hazards import AGE_EDGES, age_bucket
from solver.forecast.semi_markov import SemiMarkovAvailability
from solver.simulator import simulate
from tests.forecast.series import PERIOD, semi_markov_series, true_hazard
from tests.solver.helpers import HOUR, flat_data, job


@pytest.fixture(scope="module")
def learned():
    series = semi_markov_series(60_000, seed=3)
    model = SemiMarkovAvailability(PERIOD, 0, day_buckets=2, half_life_cycles=1e6)
    for y in series:
        model.learn_one(y)
    return model, series


def test_learned_hazards_recover_the_true_ones(learned):
    model, _ = learned
    table = model.hazards()
    for state in (0, 1):
        for age in (1, 2, 3, 4, 6, 12):
            for day, position in ((0, 3), (1, 15)):
                expected = true_hazard(state, age, position)
                got = table.hazard[state, age_bucket(age), day]
                assert got == pytest.approx(expected, abs=0.03), (state, age, day)


def test_forecasts_are_calibrated_at_every_horizon(learned):
    _, series = learned
    model = SemiMarkovAvailability(PERIOD, 0, day_buckets=2, half_life_cycles=1e6)
    horizons = (1, 4, 12)
    predicted = {h: [] for h in horizons}
    observed = {h: [] for h in horizons}
    for t, y in enumerate(series[:30_000]):
        model.learn_one(y)
        if t < 5_000 or t % 7:
            continue
        ahead = model.forecast(max(horizons))
        for h in horizons:
            predicted[h].append(ahead[h - 1])
            observed[h].append(series[t + h])
    for h in horizons:
        p, y = np.array(predicted[h]), np.array(observed[h])
        bins = np.digitize(p, np.linspace(0, 1, 11)[1:-1])
        for b in np.unique(bins):
            chosen = bins == b
            if chosen.sum() >= 200:
                assert y[chosen].mean() == pytest.approx(p[chosen].mean(), abs=0.05), (h, b)


def test_a_run_older_than_the_oldest_bucket_keeps_its_hazard():
    assert age_bucket(AGE_EDGES[-1] + 10_000) == len(AGE_EDGES) - 1
    model = SemiMarkovAvailability(PERIOD, 0)
    for _ in range(3 * AGE_EDGES[-1]):
        model.learn_one(1.0)
    assert model.state == 1 and model.age == 3 * AGE_EDGES[-1]
    assert 0.0 < model.forecast(5)[-1] <= 1.0


def test_each_estimate_shrinks_towards_the_coarser_one():
    """Every (state, age, day) hazard is the module doc's shrinkage of the counts, written
    here with whole-array sums."""
    model = SemiMarkovAvailability(PERIOD, 5, day_buckets=4, half_life_cycles=2.0,
                                   age_prior=8.0, day_prior=32.0)
    series = semi_markov_series(3_000, seed=5)
    series[::97] = np.nan
    for y in series:
        model.learn_one(y)
    exposure, ended = model._exposure / model._weight, model._ended / model._weight
    overall = (ended.sum(axis=(1, 2)) + 0.5) / (exposure.sum(axis=(1, 2)) + 1.0)
    prior, by_age = overall, []
    for b in range(len(AGE_EDGES)):
        prior = (ended[:, b].sum(axis=1) + 8.0 * prior) / (exposure[:, b].sum(axis=1) + 8.0)
        by_age.append(prior)
    expected = (ended + 32.0 * np.stack(by_age, axis=1)[:, :, None]) / (exposure + 32.0)
    assert np.allclose(model.hazards().hazard, expected, rtol=1e-12, atol=0.0)
    assert np.any(model._exposure == 0) and np.any(model._ended > 0)


class _ReadsOutlooks:
    """A policy that idles and keeps the outlooks it was shown at one slot."""

    name = "reads-outlooks"

    def __init__(self, slot):
        self.slot, self.seen = slot, None

    def decide(self, obs):
        if obs.slot == self.slot:
            self.seen = [o.to_wire() for o in obs.outlooks.ready()]
        return {}


def test_outlooks_a_policy_sees_do_not_depend_on_later_slots():
    rng = np.random.default_rng(5)
    price = rng.uniform(0.8, 1.2, (2, 200))
    availability = (rng.random((2, 200)) < 0.6).astype(int)
    cut = 120
    changed_price, changed_availability = price.copy(), availability.copy()
    changed_price[:, cut:] *= 3.0
    changed_availability[:, cut:] = 1 - changed_availability[:, cut:]
    seen = []
    for p, a in ((price, availability), (changed_price, changed_availability)):
        data = flat_data(p, a)
        policy = _ReadsOutlooks(cut)
        simulate(data, [job(workload=1.0, soft=199 * HOUR)], policy, until_end=True)
        seen.append(policy.seen)
    assert seen[0] is not None and seen[0] == seen[1]
