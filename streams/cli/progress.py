"""How far a long command is, on standard error whatever standard output is: a live bar with
the time left on a terminal, else a plain line at every tenth of the work and at least every
:data:`PLAIN_EVERY_SECONDS` (``replaying: 1,092/8,728 slots (12%), 0:00:09 elapsed, eta
0:01:03``)."""

from __future__ import annotations

import time
from typing import Self

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from evaluation.live import LiveBar, clock

PLAIN_EVERY_SECONDS = 30.0
"""The longest silence between two plain lines while work goes on."""
RATE_SECONDS = 0.5
"""The shortest time a rate is measured over: the time left is told from the rate since the
previous line (steps differ in cost: a replay's simple policies race through theirs), else
from the start, else not at all (``?``)."""
SPEED_WINDOW_SECONDS = 5.0
"""The window the live bar measures its speed over."""


class Steps(LiveBar):
    """Counts the ``total`` steps (``unit``) of ``description`` as they are done."""

    def __init__(self, description: str, total: int, unit: str,
                 console: Console | None = None) -> None:
        self._console = console or Console(stderr=True)
        self._description, self._total, self._unit = description, max(total, 1), unit
        self._done = self._last_done = 0
        self._start = self._last = time.monotonic()
        self._next_tenth = 1
        self._bar: Progress | None = None
        if self._console.is_terminal:
            self._bar = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
                console=self._console, transient=True,
                speed_estimate_period=SPEED_WINDOW_SECONDS)
            self._task = self._bar.add_task(description, total=self._total)

    def __enter__(self) -> Self:
        self._start = self._last = time.monotonic()
        return super().__enter__()

    def _time_left(self, now: float) -> str:
        """The steps left at the rate since the previous line, or since the start, measured
        over :data:`RATE_SECONDS` at least."""
        left = self._total - self._done
        for since, done in ((self._last, self._last_done), (self._start, 0)):
            if now - since >= RATE_SECONDS and self._done > done:
                return clock((now - since) * left / (self._done - done))
        return "0:00:00" if not left else "?"

    def advance(self, steps: int = 1) -> None:
        """Count ``steps`` more as done."""
        self._done = min(self._done + steps, self._total)
        if self._bar is not None:
            self._bar.advance(self._task, steps)
            if self._done == self._total:  # what follows prints freely
                self._bar.stop()
            return
        now = time.monotonic()
        tenth = self._done * 10 // self._total
        if tenth < self._next_tenth and now - self._last < PLAIN_EVERY_SECONDS:
            return
        self._next_tenth = tenth + 1
        elapsed = now - self._start
        eta = self._time_left(now)
        self._last, self._last_done = now, self._done
        self._console.print(
            f"{self._description}: {self._done:,}/{self._total:,} {self._unit} "
            f"({self._done / self._total:.0%}), {clock(elapsed)} elapsed, eta {eta}",
            markup=False, highlight=False, soft_wrap=True)
