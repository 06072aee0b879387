"""Played evaluation cells kept on disk, so that an evaluation that stopped continues where it
stopped and an unchanged one is read back instead of played.

A cell's key is the SHA-256 of everything its result depends on: the cell (case, episode,
policy as played, noise level); the markets as loaded (their content: times, prices,
availability and on-demand prices, not the files' names), so a redrawn or repriced market is
another; the episodes it plays (their market data, jobs and migration table); how the cases
were built and the evaluation's seed and settings; spotsched's version, a digest of the source
of the ``solver`` package (any change to the code that decides starts afresh; it takes
milliseconds) and the versions of Python and of the libraries the solver computes with.

An entry is a pickle written to a temporary file in its folder and renamed, so a reader never
sees half of one; an entry that cannot be read is played again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import pickle
import platform
import tempfile
from collections.abc import Sequence
from functools import cache
from importlib import metadata
from pathlib import Path

import solver
from solver.evaluation.cells import Cell, CellResult, EvaluationPlan
from solver.evaluation.digest import add_array
from solver.market import MarketData, MarketTicks

log = logging.getLogger(__name__)

LIBRARIES = ("numpy", "numba", "river", "ortools", "scipy")
"""The libraries whose versions are part of every key."""


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/spotsched/evaluate``, or ``~/.cache/spotsched/evaluate``."""
    root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(root) / "spotsched" / "evaluate"


@cache
def code_digest() -> str:
    """SHA-256 of every source file of the ``solver`` package, by path."""
    digest = hashlib.sha256()
    root = Path(solver.__file__).parent
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _versions() -> str:
    def version(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "-"

    return ";".join([f"python {platform.python_version()}", f"spotsched {version('spotsched')}",
                     *(f"{name} {version(name)}" for name in LIBRARIES)])


def markets_digest(ticks: Sequence[MarketTicks]) -> str:
    """SHA-256 of the markets' content: each market and its times, prices and availability."""
    digest = hashlib.sha256()
    for market in ticks:
        digest.update(repr(market.market).encode())
        for array in (market.times, market.prices, market.available):
            add_array(digest, array)
    return digest.hexdigest()


def _data_digest(digest: hashlib._Hash, data: MarketData) -> None:
    digest.update(repr((data.markets, data.origin, data.slot_seconds)).encode())
    for array in (data.price, data.availability, data.boundary_price,
                  data.boundary_availability):
        add_array(digest, array)


class CellKeys:
    """The key of each cell of ``plan`` (module doc): ``markets`` is the digest of the markets
    the cases were built from (:func:`markets_digest`), ``setup`` says how they were built (the
    scenarios' settings, windows and seed)."""

    def __init__(self, plan: EvaluationPlan, markets: str, setup: str) -> None:
        self._plan = plan
        self._base = "\n".join([_versions(), code_digest(), markets, setup, str(plan.seed),
                                repr(plan.settings)])
        self._episodes: dict[tuple[int, int], str] = {}

    def __call__(self, cell: Cell) -> str:
        digest = hashlib.sha256(self._base.encode())
        digest.update(repr((cell.name, cell.episode, str(cell.spec), cell.noise)).encode())
        episodes = self._plan.cases[cell.case].episodes
        for k in range(len(episodes)) if cell.episode is None else (cell.episode,):
            digest.update(self._episode(cell.case, k).encode())
        return digest.hexdigest()

    def _episode(self, case: int, k: int) -> str:
        """The digest of an episode: its market data, and the ``repr`` of every other field
        (the jobs, the migration table, …) but its forecasters and its past (the markets and
        the window decide them)."""
        if (case, k) not in self._episodes:
            episode = self._plan.cases[case].episodes[k]
            digest = hashlib.sha256()
            for name in (f.name for f in dataclasses.fields(episode)):
                if name == "data":
                    _data_digest(digest, episode.data)
                elif name not in ("models", "past"):
                    digest.update(f"{name}={getattr(episode, name)!r}".encode())
            self._episodes[case, k] = digest.hexdigest()
        return self._episodes[case, k]


class CellCache:
    """Cell results under ``directory``, by key."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.pickle"

    def get(self, key: str) -> CellResult | None:
        """The result kept under ``key``, or ``None`` (none, or unreadable: logged)."""
        path = self._path(key)
        try:
            with path.open("rb") as file:
                result = pickle.load(file)
        except FileNotFoundError:  # not played yet
            return None
        except Exception as exc:  # damaged: played again
            log.warning("cell cache entry %s cannot be read (%s: %s); its cell is played again",
                        path, type(exc).__name__, exc)
            return None
        if not isinstance(result, CellResult):
            log.warning("cell cache entry %s holds a %s, not a cell's result; its cell is "
                        "played again", path, type(result).__name__)
            return None
        return result

    def put(self, key: str, result: CellResult) -> None:
        """Keep ``result`` under ``key``: written to a temporary file, then renamed."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".part")
        try:
            with os.fdopen(handle, "wb") as file:
                pickle.dump(result, file, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
