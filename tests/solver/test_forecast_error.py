import numpy as np
import pytest

from solver.policies.forecast_error import ForecastErrorMonitor
from solver.policies.forecast_sources import NoisyOracleForecast, OracleForecast
from solver.simulator import simulate
from tests.solver.helpers import HOUR, flat_data, job


class Watch:
    """Reads a monitor at every boundary and runs nothing."""

    name = "watch"

    def __init__(self, monitor):
        self.monitor = monitor
        self.errors = []
        self.seen = []

    def decide(self, obs):
        self.seen.append(obs)
        self.errors.append(self.monitor(obs))
        return {}


def market(slots=40):
    rng = np.random.default_rng(0)
    return flat_data(rng.uniform(1.0, 2.0, (2, slots)), rng.integers(0, 2, (2, slots)))


def watch(source, **kw):
    data = market()
    policy = Watch(ForecastErrorMonitor(source(data), horizon=4, **kw))
    simulate(data, [job(workload=50.0, soft=40 * HOUR)], policy)
    return policy


def test_a_perfect_forecast_scores_zero_and_the_prior_holds_until_scored():
    policy = watch(OracleForecast, prior=0.3)
    assert policy.errors[0] == 0.3
    assert policy.errors[-1] == pytest.approx(0.0)


def test_flipped_availability_and_noisy_prices_score_high():
    policy = watch(lambda d: NoisyOracleForecast(d, error=1.0, flip=1.0))
    assert policy.errors[-1] > 0.5


def test_observations_must_come_in_slot_order():
    policy = watch(OracleForecast)
    with pytest.raises(ValueError, match="observation slot=3: expected slots in increasing"):
        policy.monitor(policy.seen[3])
