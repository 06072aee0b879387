"""Experts and bandit learners over a fixed pool, and their regret.

Both learners are exponential weights over cumulative (estimated) losses in ``[0, 1]`` with an
*anytime* learning rate, which needs no horizon: after ``t`` updates (``t >= 1``) it is
``scale`` times the rate of the worst-case analysis.

* :class:`Hedge` sees every member's loss each round (full information); its rate is
  ``η_t = scale · sqrt(8 ln K / t)``. With ``scale = 1`` its regret after ``T`` rounds is at
  most ``sqrt(2 T ln K) + sqrt(ln K / 8)`` (Cesa-Bianchi and Lugosi 2006, Theorem 2.3). A larger
  scale concentrates on the best member sooner when one member is steadily better, as in the
  policy pools here, at the cost of the worst-case guarantee.
* :class:`Exp3` sees only the loss of the member it played and weights it by the inverse of
  that member's probability; its rate is ``η_t = scale · sqrt(ln K / (t K))``, with expected
  regret at most ``2 sqrt(T K ln K)`` for ``scale = 1`` (Bubeck and Cesa-Bianchi 2012,
  Theorem 3.1 with the anytime rate).

A round is drawn with :meth:`draw` and updated later with :meth:`update`, so feedback may
arrive after other rounds were drawn; importance weights use the probabilities of the draw.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class Round:
    """One draw: the distribution it came from and the member it picked."""

    probabilities: np.ndarray
    played: int


class _ExponentialWeights:
    """Shared core: cumulative losses per member and an anytime rate."""

    def __init__(self, n_members: int, scale: float = 1.0) -> None:
        if n_members < 1:
            raise ValueError(f"n_members={n_members!r}: expected at least one member")
        if not (math.isfinite(scale) and scale > 0):
            raise ValueError(f"rate scale={scale!r}: expected a positive number")
        self.n_members = n_members
        self.scale = scale
        self.rounds = 0
        self._losses = np.zeros(n_members)

    def rate(self) -> float:
        raise NotImplementedError

    def probabilities(self) -> np.ndarray:
        """The current distribution over members."""
        scores = -self.rate() * self._losses
        weights: np.ndarray = np.exp(scores - scores.max())
        return weights / float(weights.sum())

    def draw(self, rng: np.random.Generator) -> Round:
        """Pick a member at random from :meth:`probabilities`."""
        p = self.probabilities()
        return Round(p, int(rng.choice(self.n_members, p=p)))

    def _add(self, estimates: np.ndarray) -> None:
        self._losses += estimates
        self.rounds += 1


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

    def rate(self) -> float:
        return self.scale * math.sqrt(8.0 * math.log(self.n_members) / max(1, self.rounds))

    def update(self, round_: Round, losses: np.ndarray) -> None:
        """Learn every member's loss for one round."""
        self._add(_check_losses(losses, self.n_members))

    def regret_bound(self, rounds: int) -> float:
        """Worst-case regret after ``rounds`` rounds at ``scale = 1``."""
        log_k = math.log(self.n_members)
        return math.sqrt(2.0 * rounds * log_k) + math.sqrt(log_k / 8.0)


class Exp3(_ExponentialWeights):
    """Bandit exponential weights with importance-weighted loss estimates (module doc)."""

    name = "exp3"

    def rate(self) -> float:
        k = self.n_members
        return self.scale * math.sqrt(math.log(k) / (max(1, self.rounds) * k)) if k > 1 else 0.0

    def update(self, round_: Round, losses: np.ndarray) -> None:
        """Learn the played member's loss (the other entries are not read)."""
        k = round_.played
        loss = _check_losses(losses, self.n_members, only=k)[k]
        estimates = np.zeros(self.n_members)
        estimates[k] = loss / round_.probabilities[k]
        self._add(estimates)

    def regret_bound(self, rounds: int) -> float:
        """Bound on the expected regret after ``rounds`` rounds at ``scale = 1``."""
        k = self.n_members
        return 2.0 * math.sqrt(rounds * k * math.log(k))


LEARNERS: dict[str, type[Hedge | Exp3]] = {Hedge.name: Hedge, Exp3.name: Exp3}


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
