"""A seeded generator of fine-tuning workloads that fit inside some market data."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from solver.job import Job
from solver.market import SECONDS_PER_HOUR, MarketData


class SpanTooShort(ValueError):
    """The market data is too short for a generated job."""

    def __init__(self, span_hours: float, job_hours: float) -> None:
        self.span_hours = span_hours
        self.job_hours = job_hours
        super().__init__(f"market data spans {span_hours:.1f} h, too short for a generated job "
                         f"of {job_hours:.1f} h; expected longer market data")


@dataclass(frozen=True, slots=True)
class WorkloadSpec:
    """Shape of generated jobs.

    Work units are reference instance-hours: ``H(n) = alpha * n + beta`` with ``alpha = 1`` and
    a small negative ``beta`` for the parallel inefficiency. The soft deadline leaves
    ``slack`` times the run time at ``n_max`` (drawn in ``slack_range``); the hard deadline adds
    ``hard_extra`` of that window. ``N_min`` is ``n_min_share`` of ``N_max`` (at least 1). The
    value is ``value_factor`` times the on-demand bill at ``n_max``, halves by the hard
    deadline, and a miss costs ``miss_penalty_factor`` times it.
    """

    seed: int = 0
    workload_range: tuple[float, float] = (4.0, 48.0)
    n_max_choices: tuple[int, ...] = (1, 2, 4, 8)
    beta_per_instance: float = -0.03
    slack_range: tuple[float, float] = (1.3, 3.0)
    hard_extra: float = 0.25
    value_factor: float = 1.5
    miss_penalty_factor: float = 1.0
    restart_overhead_seconds: float = 360.0
    n_min_share: float = 0.5

    def __post_init__(self) -> None:
        lo, hi = self.workload_range
        if not 0 < lo <= hi:
            raise ValueError(f"workload_range={self.workload_range}: expected 0 < low <= high")
        lo, hi = self.slack_range
        if not 1.0 <= lo <= hi:
            raise ValueError(f"slack_range={self.slack_range}: expected 1 <= low <= high")
        if not self.n_max_choices or min(self.n_max_choices) < 1:
            raise ValueError(f"n_max_choices={self.n_max_choices}: expected counts >= 1")
        if not 0 < self.n_min_share <= 1:
            raise ValueError(f"n_min_share={self.n_min_share}: expected a share in (0, 1]")


def generate_jobs(data: MarketData, n_jobs: int, spec: WorkloadSpec = WorkloadSpec()) -> list[Job]:
    """``n_jobs`` jobs released over the data's span, each finishable before its end."""
    if n_jobs < 0:
        raise ValueError(f"n_jobs={n_jobs}: expected a count >= 0")
    rng = np.random.default_rng(spec.seed)
    start = data.origin
    end = data.slot_start(data.n_slots)
    od_price = float(data.on_demand_prices.min())
    jobs: list[Job] = []
    for k in range(n_jobs):
        n_max = int(rng.choice(spec.n_max_choices))
        n_min = max(1, math.floor(n_max * spec.n_min_share))
        beta = spec.beta_per_instance * (n_max - 1)
        workload = float(rng.uniform(*spec.workload_range))
        run_h = workload / (n_max + beta) + spec.restart_overhead_seconds / SECONDS_PER_HOUR
        window_h = run_h * float(rng.uniform(*spec.slack_range))
        total_h = window_h * (1.0 + spec.hard_extra)
        latest = end - total_h * SECONDS_PER_HOUR
        if latest <= start:
            raise SpanTooShort((end - start) / SECONDS_PER_HOUR, total_h)
        release = float(rng.uniform(start, latest))
        value = spec.value_factor * od_price * n_max * run_h
        jobs.append(
            Job(
                id=f"job-{k:04d}",
                workload=round(workload, 3),
                release=math.ceil(release),
                soft_deadline=math.floor(release + window_h * SECONDS_PER_HOUR),
                hard_deadline=math.floor(release + total_h * SECONDS_PER_HOUR),
                n_min=n_min,
                n_max=n_max,
                alpha=1.0,
                beta=beta,
                value=round(value, 2),
                value_at_hard_deadline=round(value / 2, 2),
                miss_penalty=round(spec.miss_penalty_factor * value, 2),
                restart_overhead=spec.restart_overhead_seconds,
            )
        )
    return jobs
