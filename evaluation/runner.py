"""Play an evaluation plan's cells where the user asks, reading and keeping them in the cache,
and tell the user how far it is."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rich.console import Console

from evaluation.cache import CellCache, CellKeys
from evaluation.executors import (
    Done,
    Executor,
    InProcess,
    ProcessPool,
    RayCluster,
    Task,
)
from evaluation.live import clock
from evaluation.progress import CellProgress
from solver.choices import one_of
from solver.evaluation.cells import Cell, CellResult, Evaluation, EvaluationPlan
from solver.evaluation.scenarios import MarketTraining, trainings

ExecutorKind = Literal["local", "ray"]
EXECUTORS: tuple[ExecutorKind, ...] = ("local", "ray")


@dataclass(frozen=True)
class Execution:
    """Where the cells are played: ``workers`` processes here (1: in this process) or a Ray
    cluster (``executor="ray"``, at ``address``; without one, a Ray instance here with
    ``workers`` CPUs); and the cache folder (``None``: no cache)."""

    workers: int = 1
    executor: ExecutorKind = "local"
    address: str | None = None
    cache_dir: Path | None = None

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"workers={self.workers!r}: expected at least 1")
        one_of("executor", self.executor, EXECUTORS)
        if self.address is not None and self.executor != "ray":
            raise ValueError(f"address={self.address!r}: expected only with the ray executor")

    def start(self) -> Executor:
        """The executor, started."""
        if self.executor == "ray":
            return RayCluster(self.address, self.workers)
        return ProcessPool(self.workers) if self.workers > 1 else InProcess()


def play_plan(plan: EvaluationPlan, execution: Execution, keys: CellKeys | None,
              console: Console) -> Evaluation:
    """Every cell of ``plan``, read from the cache when kept there (under ``keys``) or played
    by ``execution``'s executor and kept; merged in the plan's order. Progress goes to
    ``console``."""
    cells = plan.cells()
    cache = CellCache(execution.cache_dir) if execution.cache_dir is not None else None
    results: dict[Cell, CellResult] = {}
    if cache is not None and keys is not None:
        for cell in cells:
            kept = cache.get(keys(cell))
            if kept is not None:
                results[cell] = kept
    todo = longest_first(plan, [c for c in cells if c not in results])
    where = "" if cache is None else f"{len(results)} read from the cache ({cache.directory}), "
    if not todo:
        console.print(f"{len(cells)} cells: {where}none to play", highlight=False, soft_wrap=True)
        return plan.merge(results)
    executor = execution.start()
    try:
        console.print(f"{len(cells)} cells: {where}{len(todo)} to play on {executor.workers} "
                      f"{'worker' if executor.workers == 1 else 'workers'}"
                      f"{' (ray)' if execution.executor == 'ray' else ''}",
                      highlight=False, soft_wrap=True)
        start = time.perf_counter()
        usage = _train(plan, todo, executor, console)
        episodes = {cell: len(plan.episodes(cell)) for cell in todo}
        with CellProgress(console, todo, executor.workers, episodes) as progress:
            for done in executor.run(_tasks(plan, todo)):
                cell = done.work.cell
                if cache is not None and keys is not None:
                    try:
                        cache.put(keys(cell), done.result)
                    except OSError as exc:  # say so once, and play on without keeping
                        console.print(f"cache: {exc}; cells are no longer kept",
                                      highlight=False, soft_wrap=True)
                        cache = None
                results[cell] = done.result
                usage.add(done)
                progress.finished(cell, done.seconds)
    finally:
        executor.close()
    console.print(f"played {len(todo)} cells in {clock(time.perf_counter() - start)} "
                  f"({clock(usage.busy)} in workers, {clock(usage.cpu)} of CPU; peak worker "
                  f"memory {usage.peak:,.0f} MB)", highlight=False, soft_wrap=True)
    return plan.merge(results)


@dataclass
class _Usage:
    """What the workers spent: wall-clock and CPU seconds, and their peak memory, MB."""

    busy: float = 0.0
    cpu: float = 0.0
    peak: float = 0.0

    def add(self, done: Done[Any]) -> None:
        self.busy += done.seconds
        self.cpu += done.cpu_seconds
        self.peak = max(self.peak, done.peak_mb)


def _train(plan: EvaluationPlan, cells: Sequence[Cell], executor: Executor,
           console: Console) -> _Usage:
    """Train the forecasters ``cells`` play with on the executor's workers, one piece of work
    per history and market, the longest first, before any cell goes out."""
    usage = _Usage()
    work = trainings(e for cell in cells for e in plan.episodes(cell))
    if not work:
        return usage
    histories = {id(training): history for history, training in work}
    start = time.perf_counter()
    for done in executor.run(longest_trainings([t for _, t in work])):
        histories[id(done.work)].supply(done.work, done.result)
        usage.add(done)
    console.print(f"trained the forecasters of {len(work)} markets in "
                  f"{clock(time.perf_counter() - start)} ({clock(usage.cpu)} of CPU)",
                  highlight=False, soft_wrap=True)
    return usage


def longest_trainings(work: Sequence[MarketTraining]) -> list[MarketTraining]:
    """Trainings the longest (the most slots to learn) first."""
    return sorted(work, key=lambda t: t.first - t.starts[-1])


def longest_first(plan: EvaluationPlan, cells: Sequence[Cell]) -> list[Cell]:
    """Cells the longest first, so that none is left to finish alone at the end: the cells of
    whole cases (the most windows first), then those of planners (a spec with a forecast
    kind, or a noisy oracle), then the rest, each in window order."""
    def key(cell: Cell) -> tuple[int, int]:
        if cell.episode is None:
            return 0, -len(plan.episodes(cell))
        plans = cell.noise is not None or "forecast" in cell.spec.kwargs
        return (1 if plans else 2), cell.episode

    return sorted(cells, key=key)


def _tasks(plan: EvaluationPlan, cells: Sequence[Cell]) -> Iterator[Task]:
    for cell in cells:
        episodes = plan.episodes(cell)
        for episode in episodes:
            if episode.models is not None:
                episode.models.get()  # put together here, not in the thread that sends it
        yield Task(cell, episodes, plan.seed, plan.settings)
