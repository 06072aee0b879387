"""One event of a kind per interval: the limit that keeps a log readable while something
keeps failing, behind the log handlers' filter (:class:`streams.runtime.RateLimit`) and the
price feeds' warnings."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass

MAX_KINDS = 1_000
"""Kinds remembered at once; the one let through longest ago is forgotten beyond."""


@dataclass(frozen=True, slots=True)
class LetThrough:
    """An event let through: ``held`` of its kind were held back in the ``seconds`` since the
    last one let through (none, and 0 s, for the first of its kind)."""

    held: int
    seconds: float


@dataclass
class _Window:
    started: float
    held: int = 0


class RateLimiter:
    """Lets the first event of a kind through, then holds back the others of that kind for
    ``interval`` seconds, counting them; safe to share between threads."""

    def __init__(self, interval: float, clock: Callable[[], float] = time.monotonic,
                 max_kinds: int = MAX_KINDS) -> None:
        self.interval = interval
        self.clock = clock
        self.max_kinds = max_kinds
        self._windows: dict[Hashable, _Window] = {}
        self._lock = threading.Lock()

    def admit(self, kind: Hashable) -> LetThrough | None:
        """The event let through, or ``None`` when it is held back."""
        with self._lock:
            now = self.clock()
            window = self._windows.get(kind)
            if window is not None and now - window.started < self.interval:
                window.held += 1
                return None
            self._windows.pop(kind, None)
            self._windows[kind] = _Window(now)
            if len(self._windows) > self.max_kinds:
                del self._windows[next(iter(self._windows))]
        return LetThrough(0, 0.0) if window is None else LetThrough(window.held,
                                                                     now - window.started)
