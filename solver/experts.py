"""Experts and bandit learners over a fixed pool, and their regret.

Both learners are exponential weights over cumulative (estimated) losses in ``[0, 1]``:

* :class:`Hedge` sees every member's loss each round (full information). With a known horizon
  ``T`` its rate is ``η = sqrt(8 ln K / T)`` and its regret is at most ``sqrt(T ln K / 2)``;
  without one it restarts on rounds ``2^m`` with the rate for ``2^m`` rounds (doubling trick),
  which costs a factor ``√2 / (√2 - 1)``.
* :class:`Exp3` sees only the loss of the member it played and weights it by the inverse of
  that member's probability. With ``η = sqrt(2 ln K / (T K))`` its expected regret is at most
  ``sqrt(2 T K ln K)`` (Bubeck and Cesa-Bianchi 2012, Theorem 3.1); doubling as above.

A round is drawn with :meth:`draw` and updated later with :meth:`update`, so feedback may
arrive after other rounds were drawn; importance weights use the probabilities of the draw.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

DOUBLING_FACTOR = math.sqrt(2.0) / (math.sqrt(2.0) - 1.0)
"""How much the doubling trick can lose against a rate tuned to the true horizon."""


@dataclass(frozen=True, slots=True)
class Round:
    """One draw: the distribution it came from and the member it picked."""

    probabilities: np.ndarray
    played: int


class _ExponentialWeights:
    """Shared core: cumulative losses per member, a rate from the horizon, epochs."""

    def __init__(self, n_members: int, horizon: int | None = None) -> None:
        if n_members < 1:
            raise ValueError(f"n_members={n_members!r}: expected at least one member")
        if horizon is not None and horizon < 1:
            raise ValueError(f"horizon={horizon!r}: expected a number of rounds >= 1, or None")
        self.n_members = n_members
        self.horizon = horizon
        self.rounds = 0
        self._epoch_length = horizon if horizon is not None else 1
        self._epoch_rounds = 0
        self._losses = np.zeros(n_members)

    def _rate(self, rounds: int) -> float:
        raise NotImplementedError

    def probabilities(self) -> np.ndarray:
        """The current distribution over members."""
        scores = -self._rate(self._epoch_length) * self._losses
        weights = np.exp(scores - scores.max())
        return weights / weights.sum()

    def draw(self, rng: np.random.Generator) -> Round:
        """Pick a member at random from :meth:`probabilities`."""
        p = self.probabilities()
        return Round(p, int(rng.choice(self.n_members, p=p)))

    def _add(self, estimates: np.ndarray) -> None:
        self._losses += estimates
        self._epoch_rounds += 1
        self.rounds += 1
        if self.horizon is None and self._epoch_rounds == self._epoch_length:
            self._epoch_length *= 2
            self._epoch_rounds = 0
            self._losses = np.zeros(self.n_members)


def _check_losses(losses: np.ndarray, n_members: int, only: int | None = None) -> np.ndarray:
    """``losses`` as floats, each (or only entry ``only``) checked to lie in ``[0, 1]``."""
    losses = np.asarray(losses, dtype=float)
    if losses.shape != (n_members,):
        raise ValueError(f"losses shape {losses.shape}: expected ({n_members},)")
    checked = range(n_members) if only is None else (only,)
    for i in checked:
        if not 0.0 <= losses[i] <= 1.0:
            raise ValueError(f"losses[{i}]={float(losses[i])!r}: expected a loss in [0, 1]")
    return losses


class Hedge(_ExponentialWeights):
    """Full-information exponential weights (module doc)."""

    name = "hedge"

    def _rate(self, rounds: int) -> float:
        return math.sqrt(8.0 * math.log(self.n_members) / rounds)

    def update(self, round_: Round, losses: np.ndarray) -> None:
        """Learn every member's loss for one round."""
        self._add(_check_losses(losses, self.n_members))

    def regret_bound(self, rounds: int) -> float:
        """Worst-case regret after ``rounds`` rounds."""
        bound = math.sqrt(rounds * math.log(self.n_members) / 2.0)
        return bound if self.horizon is not None else DOUBLING_FACTOR * bound


class Exp3(_ExponentialWeights):
    """Bandit exponential weights with importance-weighted loss estimates (module doc)."""

    name = "exp3"

    def _rate(self, rounds: int) -> float:
        k = self.n_members
        return math.sqrt(2.0 * math.log(k) / (rounds * k)) if k > 1 else 0.0

    def update(self, round_: Round, losses: np.ndarray) -> None:
        """Learn the played member's loss (the other entries are not read)."""
        k = round_.played
        loss = _check_losses(losses, self.n_members, only=k)[k]
        estimates = np.zeros(self.n_members)
        estimates[k] = loss / round_.probabilities[k]
        self._add(estimates)

    def regret_bound(self, rounds: int) -> float:
        """Bound on the expected regret after ``rounds`` rounds."""
        k = self.n_members
        bound = math.sqrt(2.0 * rounds * k * math.log(k))
        return bound if self.horizon is not None else DOUBLING_FACTOR * bound


LEARNERS = {Hedge.name: Hedge, Exp3.name: Exp3}


class RegretTrace:
    """Regret per round of a learner against the best fixed member in hindsight.

    ``regret[t]`` is the learner's cumulative expected loss (each round's loss vector weighted
    by the distribution the round was drawn from) minus the smallest cumulative loss of one
    member, after ``t + 1`` rounds.
    """

    def __init__(self, n_members: int) -> None:
        self.n_members = n_members
        self.member_totals = np.zeros(n_members)
        self.expected: list[float] = []
        self.regret: list[float] = []

    def record(self, probabilities: np.ndarray, losses: np.ndarray) -> None:
        """Add one round: the distribution it was drawn from and every member's loss."""
        losses = _check_losses(losses, self.n_members)
        self.member_totals = self.member_totals + losses
        previous = self.expected[-1] if self.expected else 0.0
        self.expected.append(previous + float(np.dot(probabilities, losses)))
        self.regret.append(self.expected[-1] - float(self.member_totals.min()))

    @property
    def rounds(self) -> int:
        return len(self.regret)
