"""Where evaluation cells are played: here, in a pool of worker processes, or on a Ray cluster.

Every executor takes work, :class:`Task` s (a cell, the episodes it plays, the seed and
settings) or :class:`~solver.evaluation.scenarios.MarketTraining` s (one market's forecasters
trained up to the windows played), and yields each one's result as it finishes, with the
seconds it took and the peak memory of the process that did it. A task carries the episodes it
plays, their forecasters already trained (a window of market data and the models, about 1 MB
per Can't Be Late episode), never the whole trace; a training carries one market's series up
to its last window; a worker keeps nothing from one piece of work to the next.

* :class:`InProcess` plays the tasks one after the other in this process (``--workers 1``).
* :class:`ProcessPool` plays them in worker processes forked from a server that has imported
  the solver once. A worker is replaced after :data:`TASKS_PER_WORKER` tasks, so what a
  library keeps between calls cannot pile up; at most two tasks per worker wait in the queue.
* :class:`RayCluster` sends them to a Ray cluster (``ray.init(address)``; without an address,
  a Ray instance of its own on this machine). The ``solver`` and ``evaluation`` packages travel
  with the job (``py_modules``), so the cluster's nodes need only the dependencies; each
  episode is put in the object store once, whatever number of cells play it.
"""

from __future__ import annotations

import logging
import multiprocessing
import resource
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, replace
from typing import Any, Generic, Protocol, TypeVar

from solver.evaluation.cells import Cell, CellResult, play_cell
from solver.evaluation.evaluate import EvaluationSettings
from solver.evaluation.scenarios import Episode, MarketTraining

TASKS_PER_WORKER = 20
"""Tasks a pool worker plays before it is replaced by a fresh one."""


@dataclass(frozen=True)
class Task:
    """A cell to play, the episodes it plays, and the evaluation's seed and settings."""

    cell: Cell
    episodes: tuple[Episode, ...]
    seed: int
    settings: EvaluationSettings

    def __call__(self) -> CellResult:
        return play_cell(self.cell, self.episodes, self.seed, self.settings)


Work = Task | MarketTraining
"""What an executor runs: called with no arguments in a worker."""

W = TypeVar("W", Task, MarketTraining)


@dataclass(frozen=True)
class Done(Generic[W]):
    """Work done: what it returned, the seconds it took (wall clock and CPU), and the peak
    resident memory of the process that did it, MB."""

    work: W
    result: Any
    seconds: float
    cpu_seconds: float
    peak_mb: float


class Executor(Protocol):
    """Runs work and yields each piece as it finishes, in any order."""

    workers: int

    def run(self, tasks: Iterable[W]) -> Iterator[Done[W]]: ...

    def close(self) -> None:
        """Release the workers; a cell still playing is abandoned."""


Played = tuple[Any, float, float, float]
"""What work returned, wall-clock and CPU seconds, and the peak memory of its process, MB."""


def play(work: Work) -> Played:
    """Do one piece of work (:data:`Played`)."""
    start, cpu = time.perf_counter(), time.process_time()
    result = work()
    return (result, time.perf_counter() - start, time.process_time() - cpu,
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


class InProcess:
    """Runs the work one piece after the other in this process."""

    workers = 1

    def run(self, tasks: Iterable[W]) -> Iterator[Done[W]]:
        for task in tasks:
            yield Done(task, *play(task))

    def close(self) -> None:
        """Nothing to release."""


class ProcessPool:
    """Runs the work in ``workers`` processes (module doc)."""

    def __init__(self, workers: int, tasks_per_worker: int = TASKS_PER_WORKER) -> None:
        if workers < 1:
            raise ValueError(f"workers={workers!r}: expected at least 1")
        self.workers = workers
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["solver.evaluation.cells"])
        self._pool = ProcessPoolExecutor(workers, mp_context=context,
                                         max_tasks_per_child=tasks_per_worker)
        self._pending: dict[Future[Played], Any] = {}

    def run(self, tasks: Iterable[W]) -> Iterator[Done[W]]:
        queue = iter(tasks)
        pending: dict[Future[Played], W] = {}
        self._pending = pending

        def fill() -> None:
            while len(pending) < 2 * self.workers:
                task = next(queue, None)
                if task is None:
                    return
                pending[self._pool.submit(play, task)] = task

        fill()
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                task = pending.pop(future)
                yield Done(task, *future.result())
            fill()

    def close(self) -> None:
        """Stop the workers; those still playing a cell (the run was cut short) at once."""
        if any(not future.done() for future in self._pending):
            for process in list(self._pool._processes.values()):  # 3.14: terminate_workers()
                process.terminate()
        self._pool.shutdown(wait=True, cancel_futures=True)


def _play_remote(work: Work, *episodes: Episode) -> Played:
    """:func:`play` on a Ray worker, a task's episodes resolved from the object store."""
    return play(replace(work, episodes=episodes) if isinstance(work, Task) else work)


class RayCluster:
    """Runs the work on a Ray cluster at ``address`` (module doc), or on a Ray instance of
    its own here with ``workers`` CPUs when no address is given."""

    def __init__(self, address: str | None, workers: int,
                 tasks_per_worker: int = TASKS_PER_WORKER) -> None:
        try:
            import ray
        except ImportError:
            raise ValueError("--executor ray: Ray is not installed (pip install -e "
                             "'.[ray]')") from None
        import evaluation
        import solver

        self._ray = ray
        self._started = not ray.is_initialized()
        if self._started:
            ray.init(address=address or "local", num_cpus=None if address else workers,
                     include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING,
                     runtime_env={"py_modules": [solver, evaluation]})
        self.workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self._play = ray.remote(num_cpus=1, max_calls=tasks_per_worker)(_play_remote)

    def run(self, tasks: Iterable[W]) -> Iterator[Done[W]]:
        ray = self._ray
        stored: dict[int, tuple[Episode, Any]] = {}
        pending: dict[Any, W] = {}
        queue = iter(tasks)

        def put(episode: Episode) -> Any:
            if id(episode) not in stored:
                stored[id(episode)] = (episode, ray.put(episode))
            return stored[id(episode)][1]

        def fill() -> None:
            while len(pending) < 2 * self.workers:
                task = next(queue, None)
                if task is None:
                    return
                if isinstance(task, Task):
                    refs = [put(e) for e in task.episodes]
                    ref = self._play.remote(replace(task, episodes=()), *refs)
                else:
                    ref = self._play.remote(task)
                pending[ref] = task

        fill()
        while pending:
            finished, _ = ray.wait(list(pending), num_returns=1)
            for ref in finished:
                task = pending.pop(ref)
                yield Done(task, *ray.get(ref))
            fill()

    def close(self) -> None:
        if self._started:
            self._ray.shutdown()
