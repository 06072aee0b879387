"""The ``shapes`` scenario: a robustness suite of synthetic market shapes the policies were not
tuned on.

Each window of a shape is a market of its own, drawn by
:func:`~solver.evaluation.shape_markets.shape_market` from the calibrated parameters with a
seed of its own (:func:`market_seed`): ``history_days`` of history, on which the forecasters
learn as a live deployment's would, then the window of ``window_hours``, cut into slots of
``slot_seconds``. One shape per zone count, kind of workload and checkpoint size, in that
order; the shapes of one zone count play the same markets:

* ``one``: a single-instance job that may run in every zone, its work the window ÷ ``ratio``,
  due at the window's end (soft = hard), a restart overhead of ``overhead_hours``, worth its
  on-demand bill, a miss costing ``miss_penalty_factor`` times that (as ``multi-region``);
* ``fixed``: ``fleet_jobs`` competing jobs from :func:`~solver.workload.generate_jobs` at a
  fixed instance count (``N_min = N_max``);
* ``elastic``: the same fleet with ``N_min`` a quarter of ``N_max``.

Every job carries the shape's checkpoint, nowhere at first. The market seeds are split into a
tuning half and a held-out half (:data:`SEED_SPLITS`): choose parameters on ``tune``, report on
``held-out``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from solver.evaluation.shape_calibration import CALIBRATION, ShapeCalibration
from solver.evaluation.shape_markets import shape_market
from solver.job import Job
from solver.market import SECONDS_PER_HOUR, MarketData, build_market_data, hours_to_slots
from solver.workload import WorkloadSpec, generate_jobs

SEED_SPLITS = ("tune", "held-out")
"""The halves of the market seeds: parameters are chosen on ``tune``, reported on
``held-out``."""

WORKLOADS = ("one", "fixed", "elastic")
"""The kinds of workload of a shape (module doc)."""


def market_seed(split: str, seed: int, zones: int, window: int) -> np.random.SeedSequence:
    """The seed of the market of window ``window`` of the ``zones``-zone shapes in ``split``
    of :data:`SEED_SPLITS` (evaluation seed ``seed``): the halves never share a market."""
    if split not in SEED_SPLITS:
        raise ValueError(f"seeds={split!r}: expected one of {', '.join(SEED_SPLITS)}")
    return np.random.SeedSequence([seed, SEED_SPLITS.index(split), zones, window])


@dataclass(frozen=True)
class ShapesSpec:
    """The ``shapes`` setup (module doc): the seed half, windows per shape, and the shapes'
    zone counts, workloads and checkpoint sizes."""

    seeds: str = "held-out"
    windows: int = 3
    zone_counts: tuple[int, ...] = (3, 6, 13, 30)
    workloads: tuple[str, ...] = WORKLOADS
    checkpoints_gb: tuple[float, ...] = (0.0, 50.0)
    slot_seconds: float = SECONDS_PER_HOUR
    window_hours: float = 48.0
    history_days: float = 7.0
    capacity: int = 16
    fleet_jobs: int = 20
    ratio: float = 1.5
    overhead_hours: float = 0.2
    miss_penalty_factor: float = 10.0
    fleet: WorkloadSpec = field(default_factory=lambda: WorkloadSpec(
        workload_range=(16.0, 64.0), n_max_choices=(4, 8, 16), slack_range=(1.2, 2.0)))
    calibration: ShapeCalibration = CALIBRATION

    def __post_init__(self) -> None:
        market_seed(self.seeds, 0, 1, 0)
        if self.windows < 1:
            raise ValueError(f"shapes windows={self.windows!r}: expected at least 1")
        unknown = [w for w in self.workloads if w not in WORKLOADS]
        if unknown or not self.workloads:
            raise ValueError(f"shapes workload={unknown[0] if unknown else None!r}: expected "
                             f"one of {', '.join(WORKLOADS)}")
        if not self.checkpoints_gb or any(not gb >= 0 for gb in self.checkpoints_gb):
            raise ValueError(f"shapes checkpoint sizes {list(self.checkpoints_gb)}: expected "
                             "at least one size >= 0 GB")
        if not self.zone_counts:
            raise ValueError("shapes zone counts: expected at least one")

    @property
    def window_slots(self) -> int:
        return hours_to_slots(self.window_hours, self.slot_seconds)

    @property
    def history_slots(self) -> int:
        return hours_to_slots(self.history_days * 24, self.slot_seconds)


DEFAULT_SHAPES = ShapesSpec()
"""The suite as ``spotsched evaluate --scenario shapes`` plays it by default."""


def shape_data(spec: ShapesSpec, zones: int, seed: np.random.SeedSequence) -> MarketData:
    """The history and the window of one ``zones``-zone market (the window starts at slot
    :attr:`ShapesSpec.history_slots`)."""
    hours = (spec.history_slots + spec.window_slots + 1) * spec.slot_seconds / SECONDS_PER_HOUR
    ticks = shape_market(zones, spec.capacity, hours, seed, spec.calibration)
    return build_market_data(ticks, spec.slot_seconds)


def shape_jobs(spec: ShapesSpec, workload: str, window: MarketData, k: int, seed: int
               ) -> tuple[Job, ...]:
    """The jobs of ``workload`` in window ``k`` (``seed``: the fleet's draw), with no
    checkpoint."""
    if workload == "one":
        return (_single_job(spec, window, f"w{k:02d}"),)
    share = 1.0 if workload == "fixed" else 0.25
    jobs = generate_jobs(window, spec.fleet_jobs, replace(spec.fleet, seed=seed,
                                                          n_min_share=share))
    return tuple(replace(j, id=f"w{k:02d}-{j.id}",
                         release=window.slot_start(window.slot_of(j.release))) for j in jobs)


def _single_job(spec: ShapesSpec, window: MarketData, job_id: str) -> Job:
    deadline = spec.window_hours
    work, overhead = deadline / spec.ratio, spec.overhead_hours
    due = window.origin + deadline * SECONDS_PER_HOUR
    slots_on_demand = hours_to_slots(work + overhead, window.slot_seconds, math.ceil)
    value = slots_on_demand * window.slot_hours * float(min(window.on_demand_prices))
    return Job(id=job_id, workload=work, release=window.origin, soft_deadline=due,
               hard_deadline=due, value=value, value_at_hard_deadline=value,
               miss_penalty=spec.miss_penalty_factor * value,
               restart_overhead=overhead * SECONDS_PER_HOUR)
