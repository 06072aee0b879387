"""A market-ticks consumer's stages, for tests of the consumer alone: ready at every offset,
nothing to recover, each checkpoint handed to a callback."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping


class ReadyStages:
    def __init__(self, on_checkpoint: Callable[[Mapping[int, int | None]], None] | None = None
                 ) -> None:
        self._on_checkpoint = on_checkpoint

    def ready(self, partition: int, offset: int) -> bool:
        return True

    async def recover(self, partition: int, offset: int) -> None:
        raise AssertionError("nothing to recover")

    async def checkpoint(self, log_ends: Mapping[int, int | None]) -> None:
        if self._on_checkpoint is not None:
            self._on_checkpoint(log_ends)

    def batch(self) -> contextlib.nullcontext[None]:
        return contextlib.nullcontext()
