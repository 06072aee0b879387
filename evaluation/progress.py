"""How far an evaluation is: a live bar on a terminal, a plain line per finished cell otherwise
(``[12/180] cant-be-late 48h/52h/0.2h w03 risk-aware 14.2 s, eta 0:21:10``), each with an
estimate of the time left from the cells finished so far."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from evaluation.live import LiveBar, clock
from solver.evaluation.cells import Cell


class TimeLeft:
    """Estimates the time the cells not finished yet will take on ``workers`` workers: a
    cell's seconds per episode as measured on the finished cells of the same policy (and
    noise level), else on all finished cells."""

    def __init__(self, cells: Sequence[Cell], workers: int, episodes: dict[Cell, int]) -> None:
        self._left = set(cells)
        self._workers = workers
        self._episodes = episodes
        self._seconds: dict[tuple[str, float | None], list[float]] = defaultdict(list)

    def finished(self, cell: Cell, seconds: float) -> None:
        self._left.discard(cell)
        self._seconds[_kind(cell)].append(seconds / self._episodes[cell])

    def estimate(self) -> float | None:
        """Seconds left, or ``None`` before any cell has finished."""
        every = [s for measured in self._seconds.values() for s in measured]
        if not every:
            return None
        overall = sum(every) / len(every)
        total = 0.0
        for cell in self._left:
            measured = self._seconds.get(_kind(cell))
            per_episode = sum(measured) / len(measured) if measured else overall
            total += per_episode * self._episodes[cell]
        return total / self._workers


def _kind(cell: Cell) -> tuple[str, float | None]:
    return str(cell.spec), cell.noise


class _TimeLeftColumn(ProgressColumn):
    """The estimate made when the last cell finished, counting down since."""

    def render(self, task: Task) -> Text:
        left, at = task.fields["left"], task.fields["at"]
        if left is None or task.elapsed is None:
            return Text("eta ?")
        return Text(f"eta {clock(max(0.0, left - (task.elapsed - at)))}")


class CellProgress(LiveBar):
    """Shows the cells of ``cells`` finishing on ``console``: a live bar when it is a terminal,
    a plain line per cell otherwise."""

    def __init__(self, console: Console, cells: Sequence[Cell], workers: int,
                 episodes: dict[Cell, int]) -> None:
        self._console = console
        self._total = len(cells)
        self._done = 0
        self._left = TimeLeft(cells, workers, episodes)
        self._bar: Progress | None = None
        if console.is_terminal:
            self._bar = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                TimeElapsedColumn(), _TimeLeftColumn(), console=console, transient=True)
            self._task = self._bar.add_task("evaluating", total=self._total, left=None, at=0.0)

    def finished(self, cell: Cell, seconds: float) -> None:
        """Count ``cell`` as played in ``seconds``."""
        self._done += 1
        self._left.finished(cell, seconds)
        left = self._left.estimate()
        if self._bar is not None:
            elapsed = self._bar.tasks[0].elapsed or 0.0
            self._bar.update(self._task, advance=1, description=escape(cell.label), left=left,
                             at=elapsed)
        else:
            eta = clock(left) if left is not None else "?"
            self._console.print(
                f"[{self._done}/{self._total}] {cell.label} {seconds:.1f} s, eta {eta}",
                markup=False, highlight=False, soft_wrap=True)
