"""What a scheduler sees at a slot boundary and what it answers (the policy itself is
:mod:`solver.policies.protocol`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solver.forecast.models import Outlooks
from solver.job import Allocation, Job
from solver.market import SECONDS_PER_HOUR, Market
from solver.migration import DEFAULT_MIGRATION, MigrationTable, Move, Place


@dataclass(frozen=True, slots=True)
class JobView:
    """A job as the scheduler sees it at a boundary: what is left of its work, the restart
    overhead it still has to sit out, what it holds, what it has paid and where its newest
    checkpoint is (:mod:`solver.migration`; ``None``: nowhere yet)."""

    job: Job
    remaining: float
    pending_overhead: float
    current: Allocation | None
    cost: float = 0.0
    """USD the job has paid so far."""
    checkpoint: Place | None = None

    @property
    def id(self) -> str:
        return self.job.id


@dataclass(frozen=True, slots=True)
class Past:
    """Closed slots before a scheduler's first slot, oldest first, on its slot grid: what the
    market did before the scheduler started deciding (``(markets, slots)`` arrays of realised
    price and availability, and the availability each slot's boundary showed: ``shown``,
    default the realised)."""

    price: np.ndarray
    availability: np.ndarray
    shown: np.ndarray | None = None

    def __post_init__(self) -> None:
        shapes = {self.price.shape, self.availability.shape} | (
            set() if self.shown is None else {self.shown.shape})
        if self.price.ndim != 2 or len(shapes) > 1:
            raise ValueError(f"past price {self.price.shape}, availability "
                             f"{self.availability.shape} and shown "
                             f"{None if self.shown is None else self.shown.shape}: expected "
                             "(markets, slots) arrays of one shape")

    def __len__(self) -> int:
        return int(self.price.shape[1])


@dataclass(frozen=True, slots=True)
class Observation:
    """Everything observable at the boundary of ``slot``, and nothing later.

    ``price_history`` and ``availability_history`` hold closed slots ``0 .. slot-1``
    (``(markets, slot)`` arrays); ``price_now`` and ``availability_now`` are the values in
    force at this boundary. ``jobs`` are the active jobs in spot-priority order.
    ``outlooks`` are the markets' forecasts made at this boundary from the closed slots;
    ``migration`` what moving a job's checkpoint to a market costs (:meth:`move`); ``past``
    the closed slots before slot 0, when the scheduler was given them (:meth:`closed_slots`
    reads both as one history); ``denied`` the markets whose spot was denied to a request
    (refused or lost) in a slot since which they have not held spot through a whole slot: a
    boundary there may show spot the slot will not keep; ``shown_history`` the availability
    the boundary of each closed slot showed (``None``: as realised; :meth:`closed_shown`).
    """

    slot: int
    time: float
    slot_seconds: float
    markets: tuple[Market, ...]
    price_history: np.ndarray
    availability_history: np.ndarray
    price_now: np.ndarray
    availability_now: np.ndarray
    jobs: tuple[JobView, ...]
    outlooks: Outlooks
    migration: MigrationTable = DEFAULT_MIGRATION
    past: Past | None = None
    denied: frozenset[int] = frozenset()
    shown_history: np.ndarray | None = None

    def move(self, view: JobView, market: int) -> Move:
        """What launching ``view``'s job in ``market`` now costs for its checkpoint."""
        return self.migration.move(view.checkpoint, Place.of(self.markets[market]),
                                   view.job.checkpoint_gb)

    @property
    def closed(self) -> int:
        """How many closed slots are observable: those of ``past``, then ``slot`` since."""
        return self.slot + (len(self.past) if self.past is not None else 0)

    def closed_slots(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """The price and availability of the last ``n`` closed slots (fewer when fewer are
        observable), oldest first: ``past`` followed by the history since slot 0."""
        past = self.past
        return (self._closed(n, None if past is None else past.price, self.price_history),
                self._closed(n, None if past is None else past.availability,
                             self.availability_history))

    def closed_shown(self, n: int) -> np.ndarray:
        """The availability the boundaries of the last ``n`` closed slots showed, as
        :meth:`closed_slots` reads them (the realised availability where not recorded)."""
        past = self.past
        before = None if past is None else (
            past.availability if past.shown is None else past.shown)
        return self._closed(n, before, self.availability_history
                            if self.shown_history is None else self.shown_history)

    def _closed(self, n: int, past: np.ndarray | None, mine: np.ndarray) -> np.ndarray:
        """The last ``n`` closed slots of a series: ``past``'s, then ``mine`` since slot 0."""
        n = max(0, min(n, self.closed))
        own = min(n, self.slot)
        recent = mine[:, self.slot - own:]
        if n == own or past is None:
            return recent
        return np.concatenate((past[:, past.shape[1] - (n - own):], recent), axis=1)

    @property
    def slot_hours(self) -> float:
        return self.slot_seconds / SECONDS_PER_HOUR

    @property
    def slot_end(self) -> float:
        return self.time + self.slot_seconds

