"""Evaluation scenarios: seeded windows of market ticks, each with the jobs to run in it.

* ``cant-be-late`` sets up the Can't Be Late experiment as its reference simulator does: slots
  are the trace's ticks (``tick_slots``), windows of ``window_ticks`` ticks start at
  ``sorted(random.Random(seed).sample(range(n_ticks - window_ticks + 1), windows))``, and each
  window holds one single-instance job per market, confined to that market: ``work`` hours of
  work (``alpha = 1``, ``beta = 0``) due ``deadline`` hours after the window starts, with soft
  = hard deadline. One case per (work, deadline) task and restart overhead. The job is worth
  its on-demand bill under the simulator's billing (so on-demand only has utility 0 and a
  policy's utility is what it saves) until the deadline; a miss costs ``miss_penalty_factor``
  times that.
* ``multi-region`` sets up SkyNomad's multi-region task (DESIGN §6): slots are the trace's ticks
  (``tick_slots``) of the chosen zones (every market of the traces by default), and each
  window holds one single-instance job that may run in any of them: ``work`` hours of work
  (default: the deadline ÷ ``ratio``) due ``deadline`` hours after the window starts (soft =
  hard), with a restart overhead and a checkpoint of ``checkpoint_gb`` GB, nowhere at first
  (the first launch moves nothing). Windows are ``⌈deadline / tick⌉`` ticks long, seeded as
  Can't Be Late draws them or, given ``window_indices``, the artifact's sequential tiling
  (window ``i`` starts at tick ``i × length``). One case per checkpoint size. Moves are priced
  by the migration table, with transfer times counted only with ``transfer_time``. The job is
  worth its on-demand bill as in ``cant-be-late``.
* ``fine-tune`` runs several multi-instance fine-tuning jobs per window on hourly slots
  (``build_market_data``), competing for spot capacity in every market: jobs from
  :func:`~solver.workload.generate_jobs` (``n_min = n_max / 2``, ``n_max`` up to 8,
  ``H(n) = n + beta``, soft and hard deadlines, a value falling from the soft to the hard
  deadline); each release is moved back to its slot's start, so no job loses part of its
  window waiting for the next boundary. Probe traces, whose counts are only 0 or 1, are read
  as "``capacity_per_probe`` instances obtainable, or none": availability ×
  ``capacity_per_probe``.
* ``shapes`` plays synthetic markets of several shapes drawn from parameters calibrated on the
  public traces, not the given ones (:mod:`solver.evaluation.shapes`).

Every episode carries the markets' forecasters trained on the trace before its window, as a
live deployment would have them (:class:`~solver.forecast.models.MarketModels`), trained when
first read: building the cases costs no training, and an evaluation whose results are all known
trains nothing. It also carries the last :data:`PAST_HOURS` of that trace
(:class:`~solver.observation.Past`), which its policies are shown from the window's first slot.
"""

from __future__ import annotations

import copy
import math
import random
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from solver.evaluation.digest import arrays_digest
from solver.evaluation.shapes import (
    DEFAULT_SHAPES,
    ShapesSpec,
    market_seed,
    shape_data,
    shape_jobs,
)
from solver.forecast.market import MarketForecaster
from solver.forecast.models import MarketModels, OutlookTape
from solver.job import Job
from solver.market import (
    SECONDS_PER_HOUR,
    MarketData,
    MarketTicks,
    build_market_data,
    hours_to_slots,
    tick_slots,
)
from solver.migration import DEFAULT_MIGRATION, MigrationTable
from solver.observation import Past
from solver.workload import WorkloadSpec, generate_jobs

SCENARIOS = ("cant-be-late", "multi-region", "fine-tune", "scarce", "shapes")


@dataclass
class MarketTraining:
    """One market's forecaster (``market``, its index) learning the market's series slot by
    slot: ``forecaster`` as trained on the slots before ``first``, ``price`` and
    ``availability`` the market's slots from ``first`` on; called, a copy of it learns them
    and a copy is returned at each of the sorted ``starts``. A market's forecaster learns its
    own series only, so the markets train apart (on other workers) to the same forecasters."""

    market: int
    forecaster: MarketForecaster
    price: np.ndarray
    availability: np.ndarray
    first: int
    starts: tuple[int, ...]

    def __call__(self) -> list[MarketForecaster]:
        forecaster = copy.deepcopy(self.forecaster)  # may arrive read-only (Ray)
        copies = []
        t = self.first
        for start in self.starts:
            for p, a in zip(self.price[t - self.first:start - self.first].tolist(),
                            self.availability[t - self.first:start - self.first].tolist(),
                            strict=True):
                forecaster.learn_one(p, a)
            t = start
            copies.append(copy.deepcopy(forecaster))
        return copies


class ModelHistory:
    """The markets' forecasters learning ``data`` slot by slot, each market on its own, with a
    copy kept at each of the sorted ``starts`` as it is reached; nothing is learned until a
    copy is asked for, and each slot is learned once (thread-safe). A market's copies may be
    trained elsewhere (:meth:`trainings`) and handed back (:meth:`supply`)."""

    def __init__(self, data: MarketData, starts: Sequence[int]) -> None:
        if list(starts) != sorted(starts):
            raise ValueError(f"starts={list(starts)!r}: expected sorted slot indices")
        self._data = data
        self._starts = tuple(starts)
        self.key = arrays_digest(data.price, data.availability, np.array(self._starts),
                           np.array([data.origin, data.slot_seconds]))
        self._latest = MarketModels(len(data.markets), data.origin, data.slot_seconds).forecasters
        self._copies: list[list[MarketForecaster]] = [[] for _ in data.markets]
        self._models: dict[int, MarketModels] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._starts)

    def at(self, k: int) -> MarketModels:
        """The forecasters trained on the slots before ``starts[k]`` (do not let them learn:
        copy them first)."""
        with self._lock:
            if k not in self._models:
                for training in self._trainings(k):
                    self._supply(training, training())
                models = MarketModels(len(self._data.markets), self._data.origin,
                                      self._data.slot_seconds)
                models.forecasters = [copies[k] for copies in self._copies]
                models.learned = self._starts[k]
                self._models[k] = models
            return self._models[k]

    def trainings(self, k: int) -> list[MarketTraining]:
        """What is left to train, one :class:`MarketTraining` per market, for the copies up
        to ``starts[k]``; none of this history's state changes until :meth:`supply`."""
        with self._lock:
            return self._trainings(k)

    def supply(self, training: MarketTraining, copies: Sequence[MarketForecaster]) -> None:
        """Keep the ``copies`` ``training`` made (ignored when that market has been trained
        past them here meanwhile)."""
        with self._lock:
            if len(self._copies[training.market]) == self._starts.index(training.starts[0]):
                self._supply(training, copies)

    def _trainings(self, k: int) -> list[MarketTraining]:
        trainings = []
        for m, copies in enumerate(self._copies):
            if len(copies) > k:
                continue
            first = self._starts[len(copies) - 1] if copies else 0
            end = self._starts[k]
            trainings.append(MarketTraining(
                m, self._latest[m], self._data.price[m, first:end],
                self._data.availability[m, first:end], first,
                self._starts[len(copies):k + 1]))
        return trainings

    def _supply(self, training: MarketTraining, copies: Sequence[MarketForecaster]) -> None:
        if len(copies) != len(training.starts):
            raise ValueError(f"market {training.market}: {len(copies)} forecasters for "
                             f"{len(training.starts)} windows")
        self._copies[training.market] += copies
        self._latest[training.market] = copies[-1]


class TrainedModels:
    """The forecasters of one episode: the ``k``-th copy of a :class:`ModelHistory`, trained
    when first read, here or elsewhere (:func:`trainings`). Pickled, it carries only that
    copy, not the history."""

    def __init__(self, history: ModelHistory, k: int) -> None:
        self._history = history
        self._k = k
        self._models: MarketModels | None = None
        self.key = f"{history.key}/{k}"
        """The same for the same forecasters, wherever they are read."""

    def get(self) -> MarketModels:
        """The trained forecasters (copy them before use: they learn in place)."""
        if self._models is None:
            self._models = self._history.at(self._k)
        return self._models

    def __getstate__(self) -> dict[str, Any]:
        return {"models": self.get(), "key": self.key}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._models = state["models"]
        self.key = state["key"]


def trainings(episodes: Iterable[Episode]) -> list[tuple[ModelHistory, MarketTraining]]:
    """What is left to train for the forecasters of ``episodes``: per history, one
    :class:`MarketTraining` per market up to the last of its windows asked for (none for
    forecasters already read), each with the history to hand its copies to
    (:meth:`ModelHistory.supply`)."""
    last: dict[int, tuple[ModelHistory, int]] = {}
    for episode in episodes:
        models = episode.models
        if models is None or models._models is not None:
            continue
        history, k = models._history, models._k
        if k > last.get(id(history), (history, -1))[1]:
            last[id(history)] = (history, k)
    return [(history, t) for history, k in last.values() for t in history.trainings(k)]


@dataclass(frozen=True)
class Episode:
    """One window of market data, the jobs released in it, the markets' forecasters as
    trained on the data before the window, what moving a job's checkpoint costs there, and the
    closed slots before the window its policies are shown (:func:`past_before`)."""

    data: MarketData
    jobs: tuple[Job, ...]
    models: TrainedModels | None = field(default=None, compare=False, repr=False)
    migration: MigrationTable = field(default=DEFAULT_MIGRATION, compare=False, repr=False)
    past: Past | None = field(default=None, compare=False, repr=False)

    def fresh_models(self) -> MarketModels | None:
        """A copy of the trained forecasters, for one run over the episode."""
        return None if self.models is None else copy.deepcopy(self.models.get())

    def outlooks(self) -> OutlookTape | None:
        """The outlooks a copy of the trained forecasters makes at each boundary of the
        window, shared by every run over the same window and forecasters in this process
        (the :data:`TAPES_KEPT` latest are kept): they do not depend on the policy, so each
        slot is learned and forecast once, not once per run."""
        models = self.models
        if models is None:
            return None
        data = self.data
        key = (models.key, arrays_digest(data.price, data.availability, np.array([data.origin])))
        with _TAPES_LOCK:
            tape = _TAPES.pop(key, None)
            if tape is None:
                tape = OutlookTape(lambda: copy.deepcopy(models.get()), data.price,
                                   data.availability, data.origin)
            _TAPES[key] = tape
            while len(_TAPES) > TAPES_KEPT:
                _TAPES.popitem(last=False)
        return tape


PAST_HOURS = 168.0
"""How much of the market before a window its policies are shown: a week, what the evidence
chooser's backtest (48 h) and its forecasters' warm-up (120 h) read by default
(:mod:`solver.policies.evidence`)."""


def past_before(data: MarketData, start: int) -> Past:
    """The up to :data:`PAST_HOURS` of closed slots of ``data`` before slot ``start``."""
    first = max(0, start - hours_to_slots(PAST_HOURS, data.slot_seconds, math.ceil))
    return Past(data.price[:, first:start].copy(), data.availability[:, first:start].copy(),
                data.boundary_availability[:, first:start].copy())


TAPES_KEPT = 3
"""Episodes whose outlooks a process keeps (about 18 MB each for a Can't Be Late window):
cells are sent out window by window, so a worker reads a few windows at a time."""

_TAPES: OrderedDict[tuple[str, str], OutlookTape] = OrderedDict()
_TAPES_LOCK = threading.Lock()



@dataclass(frozen=True)
class Case:
    """One scenario case: its episodes, played in order."""

    scenario: str
    name: str
    episodes: tuple[Episode, ...]

    @property
    def n_jobs(self) -> int:
        return sum(len(e.jobs) for e in self.episodes)


@dataclass(frozen=True)
class CantBeLateSpec:
    """The Can't Be Late setup (module doc): ``tasks`` are (work, deadline) hour pairs, each
    played at every restart overhead of ``overheads_hours``."""

    tasks: tuple[tuple[float, float], ...] = ((48.0, 52.0), (48.0, 60.0), (12.0, 16.0))
    overheads_hours: tuple[float, ...] = (0.02, 0.2)
    tick_seconds: float = 195.0
    window_ticks: int = 1145
    miss_penalty_factor: float = 10.0


ARTIFACT_DEADLINE_HOURS = 1106 * 195.0 / SECONDS_PER_HOUR
"""SkyNomad's multi-region deadline: its windows' 1,107 ticks of 195 s less one (59.91 h)."""


@dataclass(frozen=True)
class MultiRegionSpec:
    """The multi-region setup (module doc): ``zones`` (every market's when ``None``),
    ``window_indices`` (seeded windows when empty), the deadline and the work (the deadline ÷
    ``ratio`` when ``None``) in hours, the restart overhead, a case per checkpoint size, and
    whether moves take transfer time (``migration`` prices them)."""

    zones: tuple[str, ...] | None = None
    window_indices: tuple[int, ...] = ()
    deadline_hours: float = ARTIFACT_DEADLINE_HOURS
    work_hours: float | None = None
    ratio: float = 1.5
    overhead_hours: float = 0.2
    checkpoints_gb: tuple[float, ...] = (0.0, 50.0, 500.0)
    transfer_time: bool = False
    tick_seconds: float = 195.0
    miss_penalty_factor: float = 10.0
    migration: MigrationTable = field(default=DEFAULT_MIGRATION, compare=False, repr=False)

    @property
    def work(self) -> float:
        return self.deadline_hours / self.ratio if self.work_hours is None else self.work_hours

    @property
    def window_ticks(self) -> int:
        return hours_to_slots(self.deadline_hours, self.tick_seconds, math.ceil)


@dataclass(frozen=True)
class FineTuneSpec:
    """The fine-tuning setup (module doc); :data:`SCARCE` is the ``scarce`` one."""

    scenario: str = "fine-tune"
    slot_seconds: float = SECONDS_PER_HOUR
    window_slots: int = 168
    jobs_per_window: int = 8
    capacity_per_probe: int = 8
    workload: WorkloadSpec = field(default_factory=lambda: WorkloadSpec(
        workload_range=(16.0, 96.0), n_max_choices=(2, 4, 8), slack_range=(1.3, 2.5)))


SCARCE = FineTuneSpec(
    scenario="scarce", slot_seconds=1800.0, window_slots=96, jobs_per_window=12,
    capacity_per_probe=16, workload=WorkloadSpec(
        workload_range=(16.0, 128.0), n_max_choices=(8, 12, 16), slack_range=(1.2, 2.0),
        n_min_share=0.25))
"""Competing jobs on markets that count their capacity (module doc)."""


def window_starts(n_slots: int, length: int, windows: int, seed: int) -> list[int]:
    """``windows`` distinct window starts, sorted, drawn as Can't Be Late draws them."""
    if windows < 1:
        raise ValueError(f"windows={windows!r}: expected at least 1 window")
    choices = n_slots - length + 1
    if choices < windows:
        raise ValueError(
            f"windows={windows} of {length} slots: expected at most {max(choices, 0)} in "
            f"{n_slots} slots"
        )
    return sorted(random.Random(seed).sample(range(choices), windows))


def cant_be_late_cases(
    ticks: Sequence[MarketTicks], windows: int, seed: int, spec: CantBeLateSpec = CantBeLateSpec()
) -> list[Case]:
    """One case per task and restart overhead of ``spec`` (module doc)."""
    if not spec.tasks or not spec.overheads_hours:
        raise ValueError("cant-be-late: expected at least one (work, deadline) task and one "
                         "restart overhead")
    data = tick_slots(ticks, spec.tick_seconds)
    starts = window_starts(data.n_slots, spec.window_ticks, windows, seed)
    models = trained_models(data, starts)
    pasts = [past_before(data, start) for start in starts]
    cases = []
    for work, deadline in spec.tasks:
        for overhead in spec.overheads_hours:
            if not (work > 0 and overhead >= 0 and work + overhead <= deadline):
                raise ValueError(
                    f"work {work:g} h, deadline {deadline:g} h, restart overhead "
                    f"{overhead:g} h: expected work > 0 and work plus overhead within the "
                    "deadline")
            episodes = tuple(
                Episode(window, _cant_be_late_jobs(window, k, work, deadline, overhead, spec),
                        models[k], past=pasts[k])
                for k, window in ((k, data.window(s, spec.window_ticks))
                                  for k, s in enumerate(starts))
            )
            name = f"cant-be-late {work:g}h/{deadline:g}h/{overhead:g}h"
            cases.append(Case("cant-be-late", name, episodes))
    return cases


def multi_region_cases(
    ticks: Sequence[MarketTicks], windows: int, seed: int,
    spec: MultiRegionSpec = MultiRegionSpec(),
) -> list[Case]:
    """One case per checkpoint size of ``spec`` (module doc)."""
    work, deadline, overhead = spec.work, spec.deadline_hours, spec.overhead_hours
    if not (spec.ratio > 0 and work > 0 and overhead >= 0 and work + overhead <= deadline):
        raise ValueError(
            f"multi-region: work {work:g} h, deadline {deadline:g} h, restart overhead "
            f"{overhead:g} h: expected work > 0 and work plus overhead within the deadline")
    if not spec.checkpoints_gb or any(not gb >= 0 for gb in spec.checkpoints_gb):
        raise ValueError(f"multi-region checkpoint sizes {list(spec.checkpoints_gb)}: "
                         "expected at least one size >= 0 GB")
    data = tick_slots(_zones(ticks, spec.zones), spec.tick_seconds)
    length = spec.window_ticks
    starts = _tiles(data.n_slots, length, spec.window_indices) if spec.window_indices \
        else window_starts(data.n_slots, length, windows, seed)
    models = trained_models(data, starts)
    pasts = [past_before(data, start) for start in starts]
    migration = spec.migration.with_transfer_time(spec.transfer_time)
    keys = tuple(m.key for m in data.markets)
    cases = []
    for gb in spec.checkpoints_gb:
        episodes = []
        for k, start in enumerate(starts):
            window = data.window(start, length)
            due = window.origin + deadline * SECONDS_PER_HOUR
            ticks_on_demand = hours_to_slots(work + overhead, window.slot_seconds, math.ceil)
            value = ticks_on_demand * window.slot_hours * float(min(window.on_demand_prices))
            job = Job(id=f"w{k:02d}", workload=work, release=window.origin, soft_deadline=due,
                      hard_deadline=due, value=value, value_at_hard_deadline=value,
                      miss_penalty=spec.miss_penalty_factor * value,
                      restart_overhead=overhead * SECONDS_PER_HOUR, allowed_markets=keys,
                      checkpoint_gb=gb)
            episodes.append(Episode(window, (job,), models[k], migration, pasts[k]))
        name = (f"multi-region {len(keys)} zones {work:g}h/{deadline:g}h/{overhead:g}h/"
                f"{gb:g}GB")
        cases.append(Case("multi-region", name, tuple(episodes)))
    return cases


def _zones(ticks: Sequence[MarketTicks], zones: tuple[str, ...] | None) -> list[MarketTicks]:
    """The markets of ``zones`` (every one when ``None``), in the order given."""
    if zones is None:
        return list(ticks)
    by_zone = {t.market.zone: t for t in ticks}
    missing = [z for z in zones if z not in by_zone]
    if missing:
        raise ValueError(f"multi-region zone={missing[0]!r}: expected one of "
                         f"{', '.join(by_zone)}")
    return [by_zone[z] for z in zones]


def _tiles(n_slots: int, length: int, indices: Sequence[int]) -> list[int]:
    """The starts of windows ``indices`` of the sequential tiling by ``length`` slots."""
    tiles = n_slots // length
    wrong = [i for i in indices if not 0 <= i < tiles]
    if wrong:
        raise ValueError(f"window index {wrong[0]}: expected 0 to {tiles - 1} ({tiles} windows "
                         f"of {length} ticks in {n_slots})")
    return [i * length for i in sorted(set(indices))]


def trained_models(data: MarketData, starts: Sequence[int]) -> list[TrainedModels]:
    """The markets' forecasters trained on ``data`` up to each of the sorted ``starts``, each
    trained when first read."""
    history = ModelHistory(data, starts)
    return [TrainedModels(history, k) for k in range(len(history))]


def _cant_be_late_jobs(
    window: MarketData, k: int, work: float, deadline: float, overhead: float,
    spec: CantBeLateSpec,
) -> tuple[Job, ...]:
    end = window.slot_start(window.n_slots)
    due = window.origin + deadline * SECONDS_PER_HOUR
    if due > end:
        raise ValueError(
            f"deadline {deadline} h: expected within the window of {spec.window_ticks} ticks "
            f"({(end - window.origin) / SECONDS_PER_HOUR:.2f} h)"
        )
    ticks = hours_to_slots(work + overhead, window.slot_seconds, math.ceil)
    jobs = []
    for market in window.markets:
        value = ticks * window.slot_hours * market.on_demand_price
        jobs.append(Job(
            id=f"w{k:02d}-{market.zone}",
            workload=work,
            release=window.origin,
            soft_deadline=due,
            hard_deadline=due,
            value=value,
            value_at_hard_deadline=value,
            miss_penalty=spec.miss_penalty_factor * value,
            restart_overhead=overhead * SECONDS_PER_HOUR,
            allowed_markets=(market.key,),
        ))
    return tuple(jobs)


def fine_tune_case(
    ticks: Sequence[MarketTicks], windows: int, seed: int, spec: FineTuneSpec = FineTuneSpec()
) -> Case:
    """Several competing multi-instance jobs per window (module doc: ``fine-tune``, or
    ``scarce`` with :data:`SCARCE`)."""
    data = build_market_data([_scaled(t, spec.capacity_per_probe) for t in ticks],
                             spec.slot_seconds)
    starts = window_starts(data.n_slots, spec.window_slots, windows, seed)
    models = trained_models(data, starts)
    episodes = []
    for k, start in enumerate(starts):
        window = data.window(start, spec.window_slots)
        jobs = generate_jobs(window, spec.jobs_per_window,
                             replace(spec.workload, seed=seed * 1000 + k))
        episodes.append(Episode(window, tuple(
            replace(j, id=f"w{k:02d}-{j.id}", release=window.slot_start(window.slot_of(j.release)))
            for j in jobs), models[k], past=past_before(data, start)))
    return Case(spec.scenario, spec.scenario, tuple(episodes))


def shapes_cases(seed: int, spec: ShapesSpec = DEFAULT_SHAPES) -> list[Case]:
    """One case per zone count, workload and checkpoint size of ``spec``, the shapes of one
    zone count on the same markets, each window's forecasters trained on its market's history
    (:mod:`solver.evaluation.shapes`)."""
    cases = []
    for zones in spec.zone_counts:
        windows = []
        for k in range(spec.windows):
            data = shape_data(spec, zones, market_seed(spec.seeds, seed, zones, k))
            windows.append((data.window(spec.history_slots, spec.window_slots),
                            trained_models(data, [spec.history_slots])[0],
                            past_before(data, spec.history_slots)))
        for workload in spec.workloads:
            jobs = [shape_jobs(spec, workload, window, k, seed * 1000 + k)
                    for k, (window, _, _) in enumerate(windows)]
            for gb in spec.checkpoints_gb:
                episodes = tuple(
                    Episode(window, tuple(replace(j, checkpoint_gb=gb) for j in js), models,
                            past=past)
                    for (window, models, past), js in zip(windows, jobs, strict=True))
                cases.append(Case("shapes", f"shapes {zones} zones {workload} {gb:g}GB",
                                  episodes))
    return cases


def _scaled(ticks: MarketTicks, capacity_per_probe: int) -> MarketTicks:
    if int(np.max(ticks.available)) > 1:
        return ticks
    return replace(ticks, available=ticks.available * capacity_per_probe)


def build_cases(
    ticks: Sequence[MarketTicks], scenarios: Sequence[str], windows: int, seed: int,
    cant_be_late: CantBeLateSpec = CantBeLateSpec(),
    multi_region: MultiRegionSpec = MultiRegionSpec(),
    shapes: ShapesSpec = DEFAULT_SHAPES,
) -> list[Case]:
    """The cases of each named scenario, in order (``shapes`` with its own windows and
    markets)."""
    unknown = [s for s in scenarios if s not in SCENARIOS]
    if unknown:
        raise ValueError(f"scenario={unknown[0]!r}: expected one of {', '.join(SCENARIOS)}")
    cases: list[Case] = []
    for scenario in scenarios:
        if scenario == "cant-be-late":
            cases += cant_be_late_cases(ticks, windows, seed, cant_be_late)
        elif scenario == "multi-region":
            cases += multi_region_cases(ticks, windows, seed, multi_region)
        elif scenario == "shapes":
            cases += shapes_cases(seed, shapes)
        else:
            spec = SCARCE if scenario == "scarce" else FineTuneSpec()
            cases.append(fine_tune_case(ticks, windows, seed, spec))
    return cases
