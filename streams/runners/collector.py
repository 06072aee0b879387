"""Full garbage collections where they delay no decision.

Left to its allocation counts, the cycle collector runs a full collection every epoch or two
of a busy worker, wherever the count runs out: often in the middle of deciding an epoch, which
then waits for a scan of the whole state. A worker instead turns the automatic full
collections off (:func:`defer_full_collections`) and :class:`QuietCollector` runs one right
after a batch that decided an epoch has been delivered (the next epoch is a slot away), at
most every ``min_interval`` seconds, and after any batch once ``max_interval`` seconds passed
without one (a worker that decides nothing). The young generations are still collected as
usual.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

from streams.pipeline.driver import Batch

NEVER = 2**31 - 1
"""A full-collection threshold the young collections never reach."""
MIN_INTERVAL_SECONDS = 5.0
MAX_INTERVAL_SECONDS = 60.0


def defer_full_collections() -> None:
    """Leave full collections to :class:`QuietCollector` (process-wide)."""
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, NEVER)


class QuietCollector:
    """Runs full collections after the batches that decided an epoch (module doc); an
    observer of the stages, told by the runner when a batch is delivered."""

    def __init__(self, min_interval: float = MIN_INTERVAL_SECONDS,
                 max_interval: float = MAX_INTERVAL_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.min_interval, self.max_interval, self.clock = min_interval, max_interval, clock
        self._last = clock()
        self._decided = False

    def observe(self, batch: Batch) -> None:
        self._decided = self._decided or any(handling.decided for _, handling in batch.eventful)

    def delivered(self) -> bool:
        """A batch's outputs are delivered: collects if due; returns whether it did."""
        since = self.clock() - self._last
        if not ((self._decided and since >= self.min_interval) or since >= self.max_interval):
            return False
        gc.collect()
        self._last, self._decided = self.clock(), False
        return True
