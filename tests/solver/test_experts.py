import math

import numpy as np
import pytest

from solver.experts import Exp3, Hedge, RegretTrace


def play(learner, losses_of, rounds, seed=0):
    """Draw, take the round's losses from ``losses_of(t, probabilities)``, update, trace."""
    rng = np.random.default_rng(seed)
    trace = RegretTrace(learner.n_members)
    for t in range(rounds):
        round_ = learner.draw(rng)
        losses = losses_of(t, round_.probabilities)
        trace.record(round_.probabilities, losses)
        learner.update(round_, losses)
    return trace


def adaptive_adversary(k):
    """Loss 1 on the members the learner currently favours most, 0 elsewhere."""
    def losses(t, p):
        return (p >= p.max() - 1e-12).astype(float)
    return losses


def drifting_best(k, rounds):
    """Member 0 is best in the first half, member 1 in the second, the rest in between."""
    rng = np.random.default_rng(42)
    table = rng.uniform(0.3, 0.9, (rounds, k))
    table[: rounds // 2, 0] = 0.1
    table[rounds // 2:, 1] = 0.05
    return lambda t, p: table[t]


@pytest.mark.parametrize("k", [2, 5, 16])
@pytest.mark.parametrize("rounds", [50, 400])
def test_hedge_at_the_unscaled_anytime_rate_stays_below_its_bound(k, rounds):
    bound = math.sqrt(2 * rounds * math.log(k)) + math.sqrt(math.log(k) / 8)
    assert Hedge(k).regret_bound(rounds) == pytest.approx(bound)
    for losses_of in (adaptive_adversary(k), drifting_best(k, rounds)):
        trace = play(Hedge(k), losses_of, rounds)
        assert max(trace.regret) <= bound + 1e-9


def test_a_larger_rate_scale_settles_on_a_steadily_better_member_sooner():
    k, rounds = 5, 60
    rng = np.random.default_rng(1)
    table = rng.uniform(0.2, 0.6, (rounds, k))
    table[:, 2] -= 0.1  # member 2 is a little better every round
    calm, keen = play(Hedge(k), lambda t, p: table[t], rounds), \
        play(Hedge(k, scale=4.0), lambda t, p: table[t], rounds)
    assert keen.regret[-1] < calm.regret[-1]
    hedge = Hedge(k, scale=4.0)
    play(hedge, lambda t, p: table[t], rounds)
    assert int(np.argmax(hedge.probabilities())) == 2
    assert hedge.probabilities()[2] > 0.9


def test_exp3_expected_regret_stays_below_its_bound_on_a_seeded_sequence():
    k, rounds = 5, 2000
    rng = np.random.default_rng(7)
    table = rng.uniform(0.0, 1.0, (rounds, k))
    table[:, 3] *= 0.6  # member 3 is best on average
    regrets = [play(Exp3(k), lambda t, p: table[t], rounds, seed).regret[-1]
               for seed in range(20)]
    bound = 2 * math.sqrt(rounds * k * math.log(k))
    assert np.mean(regrets) <= bound
    assert Exp3(k).regret_bound(rounds) == pytest.approx(bound)
    # It learns from bandit feedback alone: far below the regret of playing uniformly.
    uniform = table.mean(axis=1).sum() - table.sum(axis=0).min()
    assert np.mean(regrets) < 0.5 * uniform


def test_exp3_reads_only_the_played_loss():
    exp3 = Exp3(3)
    round_ = exp3.draw(np.random.default_rng(0))
    losses = np.full(3, np.nan)
    losses[round_.played] = 0.5
    exp3.update(round_, losses)
    assert exp3.rounds == 1
    assert int(np.argmin(exp3.probabilities())) == round_.played


def test_regret_trace_compares_with_the_best_fixed_member():
    trace = RegretTrace(2)
    trace.record(np.array([0.5, 0.5]), np.array([1.0, 0.0]))
    trace.record(np.array([0.0, 1.0]), np.array([0.0, 1.0]))
    assert trace.expected == [0.5, 1.5]
    assert trace.regret == [0.5, 0.5]
    assert trace.rounds == 2


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Hedge(0), "n_members=0"),
        (lambda: Hedge(2, scale=0.0), "rate scale=0.0"),
        (lambda: Hedge(2).update(None, np.array([0.2, 1.5])), r"losses\[1\]=1.5"),
        (lambda: Hedge(2).update(None, np.array([0.2])), r"losses shape \(1,\)"),
    ],
)
def test_bad_learner_input_is_rejected_naming_the_field(build, message):
    with pytest.raises(ValueError, match=message):
        build()
