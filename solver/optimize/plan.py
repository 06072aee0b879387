"""A schedule fixed in advance: allocations by slot and job, and how it was found."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from solver.job import Allocations


@dataclass(frozen=True)
class Plan:
    """Allocations by slot index, then job id.

    ``expected_utility`` is the total utility as the program that made the plan valued it
    (value of finishing minus cost); ``method`` names that program (``dp``, ``highs``,
    ``cp-sat``, or several joined by ``+`` for a plan made of independent parts);
    ``optimal`` is false when a solver limit stopped the search early. ``gap`` is how much more
    utility that program could at most reach than ``expected_utility``, as proven by its
    solver's bound (0 for the exact dynamic program; ``inf`` when no bound was proven).
    """

    slots: Mapping[int, Allocations]
    expected_utility: float
    method: str
    optimal: bool = True
    gap: float = 0.0
    _empty: Allocations = field(default_factory=dict, init=False, repr=False, compare=False)

    def at(self, slot: int) -> Allocations:
        return self.slots.get(slot, self._empty)
