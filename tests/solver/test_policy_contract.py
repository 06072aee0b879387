"""What every registered policy must respect, whatever the market and the jobs."""

import pytest
from hypothesis import given, settings

from solver.policies import POLICIES, make_policy
from solver.simulator import simulate
from tests.solver.test_chc import scenarios


class Recorder:
    """Passes a policy's answers through and records them with the availability it saw."""

    def __init__(self, policy):
        self.policy = policy
        self.name = policy.name
        self.seen = []

    def decide(self, obs):
        answer = self.policy.decide(obs)
        self.seen.append((obs, answer))
        return answer

    def __getattr__(self, name):  # settle() and the like
        return getattr(self.policy, name)


def policy_for(name, data, jobs):
    if name == "optimum":
        return make_policy(name, data=data, jobs=jobs)
    if name == "chc":
        return make_policy(name, data=data, window=3)
    return make_policy(name)


@pytest.mark.parametrize("name", sorted(POLICIES))
@settings(max_examples=15, deadline=None)
@given(scenario=scenarios())
def test_counts_stay_within_n_min_n_max_and_spot_within_what_the_boundary_shows(name, scenario):
    data, jobs = scenario
    recorder = Recorder(policy_for(name, data, jobs))
    simulate(data, jobs, recorder)
    assert recorder.seen
    for obs, answer in recorder.seen:
        asked = [0] * len(obs.markets)
        for view in obs.jobs:
            a = answer.get(view.id)
            if a is None or a.total == 0:
                continue
            assert view.job.n_min <= a.total <= view.job.n_max
            assert view.job.may_use(obs.markets[a.market].key)
            asked[a.market] += a.spot
        assert all(asked[m] <= obs.availability_now[m] for m in range(len(obs.markets)))
