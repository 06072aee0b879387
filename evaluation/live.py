"""What the progress displays share: a clock for durations and an optional live bar that
starts and stops with its context."""

from __future__ import annotations

from datetime import timedelta
from types import TracebackType
from typing import Self

from rich.progress import Progress


def clock(seconds: float) -> str:
    """``0:21:10``."""
    return str(timedelta(seconds=round(seconds)))


class LiveBar:
    """A context holding a live ``rich`` bar on a terminal (``_bar``), or none otherwise."""

    _bar: Progress | None = None

    def __enter__(self) -> Self:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.stop()
