"""Timing of the hindsight optimum of several jobs (:func:`solver.optimize.solve_offline`), split
into groups that compete for spot capacity, against one integer program for all the jobs.

    python bench/bench_optimum_workloads.py [--before-limit 300] [--time-limit 0 0.5 5]

* V100: SkyNomad's V100 task as jobs, on the six zones of its trace (``SPOTSCHED_TRACES_DIR``,
  default ``../shared/traces``) cut into 2,112 slots of 600 s: six single-instance jobs, one
  per window of 352 slots (58.7 h), each with two thirds of its window as work, 0.2 h restart
  overhead and a 50 GB checkpoint, free to run in every zone.
* synthetic: 13 markets of :mod:`solver.synthetic` (its eight zones, and five more of another
  instance type from another seed), capacity 0-16 a market, 336 hourly slots, 20 jobs of
  :func:`~solver.workload.generate_jobs` (``n_min = n_max / 2``).

For each: the groups of competing jobs; the time, utility (as the programs value the plan) and
proven gap of ``auto`` at each deterministic search limit; and the time of ``program`` (one
integer program for every job, as before the split), stopped at ``--before-limit`` seconds.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import time
from collections.abc import Callable
from pathlib import Path

from solver.job import Job
from solver.market import SECONDS_PER_HOUR, MarketData, build_market_data
from solver.optimize import solve_offline
from solver.optimize.competition import competing_groups
from solver.synthetic import SyntheticMarketSpec, synthetic_ticks
from solver.workload import generate_jobs

ARTIFACT_TRACE = ("skynomad-artifact/aws_p3.2xlarge_availability_and_spot_price_"
                  "2023-02-15_to_2023-04-02.csv.gz")
WINDOW_SLOTS = 352


def v100() -> tuple[MarketData, list[Job]] | None:
    from solver.traces import load_trace

    path = Path(os.environ.get("SPOTSCHED_TRACES_DIR", "../shared/traces")) / ARTIFACT_TRACE
    if not path.exists():
        print(f"V100: {path} not found; skipped", flush=True)
        return None
    data = build_market_data(load_trace(path), 600.0).window(0, 6 * WINDOW_SLOTS)
    hours = WINDOW_SLOTS * 600.0 / SECONDS_PER_HOUR
    jobs = []
    for k in range(6):
        start = data.slot_start(k * WINDOW_SLOTS)
        due = start + hours * SECONDS_PER_HOUR
        value = 3.06 * hours
        jobs.append(Job(id=f"w{k}", workload=hours / 1.5, release=start, soft_deadline=due,
                        hard_deadline=due, value=value, value_at_hard_deadline=value,
                        miss_penalty=10 * value, restart_overhead=0.2 * SECONDS_PER_HOUR,
                        checkpoint_gb=50.0))
    return data, jobs


def synthetic() -> tuple[MarketData, list[Job]]:
    ticks = synthetic_ticks(SyntheticMarketSpec(seed=0, n_markets=8, days=14, capacity=16))
    ticks += synthetic_ticks(SyntheticMarketSpec(seed=1, n_markets=5, days=14, capacity=16,
                                                 instance_type="g5.48xlarge"))
    data = build_market_data(ticks, SECONDS_PER_HOUR).window(0, 336)
    return data, generate_jobs(data, 20)


def _program(data: MarketData, jobs: list[Job]) -> None:
    solve_offline(data, jobs, method="program")


def before(data: MarketData, jobs: list[Job], limit: float) -> str:
    """Wall time of the one program for every job, or that it was stopped at ``limit``."""
    start = time.perf_counter()
    process = multiprocessing.get_context("fork").Process(target=_program, args=(data, jobs))
    process.start()
    process.join(limit)
    if process.is_alive():
        process.terminate()
        process.join()
        return f"stopped at {limit:.0f} s"
    return f"{time.perf_counter() - start:.1f} s"


def measure(name: str, build: Callable[[], tuple[MarketData, list[Job]] | None],
            limits: list[float], before_limit: float) -> None:
    built = build()
    if built is None:
        return
    data, jobs = built
    groups = competing_groups(jobs, data)
    print(f"{name}: {len(jobs)} jobs x {len(data.markets)} markets x {data.n_slots} slots of "
          f"{data.slot_seconds:g} s; groups of competing jobs: "
          f"{sorted((len(g) for g in groups), reverse=True)}", flush=True)
    for limit in limits:
        start = time.perf_counter()
        plan = solve_offline(data, jobs, time_limit=limit)
        seconds = time.perf_counter() - start
        print(f"  auto, time_limit={limit:g}: {seconds:6.1f} s, {plan.method}, utility "
              f"{plan.expected_utility:,.2f}, gap {plan.gap:,.2f} USD "
              f"({'proven optimal' if plan.optimal else 'not proven'})", flush=True)
    if before_limit > 0:
        print(f"  one program for every job: {before(data, jobs, before_limit)}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before-limit", type=float, default=300.0,
                        help="seconds before the one program for every job is stopped (0: skip)")
    parser.add_argument("--time-limit", type=float, nargs="+", default=[0.0, 0.5, 5.0],
                        help="deterministic search limits of the optimum to time")
    args = parser.parse_args()
    measure("V100", v100, args.time_limit, args.before_limit)
    measure("synthetic", synthetic, args.time_limit, args.before_limit)


if __name__ == "__main__":
    main()
