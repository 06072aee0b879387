"""Timing of the exact hindsight program for one job at a fixed instance count over several
markets (:mod:`solver.optimize.dp`), moves of its checkpoint priced.

    python bench/bench_optimum.py [--repeat 3]

* synthetic: six markets of :mod:`solver.synthetic` (three regions on three continents), 311
  slots of 600 s; one single-instance job due at the end with two thirds of that as work,
  0.2 h restart overhead, a checkpoint of 0, 50 and 500 GB with transfer times counted;
* artifact: SkyNomad's V100 task (three zones, 1,106 ticks of 195 s, a job of 39.94 h, 0.2 h
  restart overhead, 50 GB) on the first of its windows, when the public traces are there
  (``SPOTSCHED_TRACES_DIR``, default ``../shared/traces``).

The first solve compiles the program's forward pass (cached by numba afterwards); it is timed
apart.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from solver.job import Job
from solver.market import SECONDS_PER_HOUR, MarketData, build_market_data
from solver.migration import DEFAULT_MIGRATION, MigrationTable
from solver.optimize import solve_single_job
from solver.synthetic import SyntheticMarketSpec, synthetic_ticks

ARTIFACT_TRACE = ("skynomad-artifact/aws_p3.2xlarge_availability_and_spot_price_"
                  "2023-02-15_to_2023-04-02.csv.gz")


def timed(data: MarketData, job: Job, table: MigrationTable, repeat: int) -> tuple[float, float]:
    """Best wall time of ``repeat`` solves, and the plan's utility."""
    best = float("inf")
    utility = 0.0
    for _ in range(repeat):
        start = time.perf_counter()
        plan = solve_single_job(data, job, table)
        best = min(best, time.perf_counter() - start)
        utility = plan.expected_utility
    return best, utility


def synthetic(repeat: int) -> None:
    slots = 311
    ticks = synthetic_ticks(SyntheticMarketSpec(seed=0, n_markets=6, days=3.0))
    data = build_market_data(ticks, 600.0)
    data = data.window(0, slots)
    hours = slots * 600.0 / SECONDS_PER_HOUR
    print(f"synthetic: {len(data.markets)} markets x {data.n_slots} slots of 600 s, "
          f"job {hours / 1.5:.2f} h due in {hours:.2f} h, 0.2 h overhead")
    start = time.perf_counter()
    solve_single_job(data, _job(data, hours, 0.0), DEFAULT_MIGRATION)
    print(f"  first solve (compiles when not cached): {time.perf_counter() - start:.2f} s")
    for gb in (0.0, 50.0, 500.0):
        seconds, utility = timed(data, _job(data, hours, gb), DEFAULT_MIGRATION, repeat)
        print(f"  checkpoint {gb:5.0f} GB, transfer time on: {seconds:6.2f} s "
              f"(utility {utility:.2f})")


def artifact(repeat: int) -> None:
    from solver.market import tick_slots
    from solver.traces import load_trace

    root = Path(os.environ.get("SPOTSCHED_TRACES_DIR", "../shared/traces"))
    path = root / ARTIFACT_TRACE
    if not path.exists():
        print(f"artifact: {path} not found; skipped")
        return
    zones = ("us-east-1c", "us-east-2b", "us-west-2a")
    ticks = [t for t in load_trace(path) if t.market.zone in zones]
    data = tick_slots(ticks, 195.0).window(3 * 1106, 1106)
    hours = 1106 * 195.0 / SECONDS_PER_HOUR
    table = DEFAULT_MIGRATION.with_transfer_time(False)
    seconds, utility = timed(data, _job(data, hours, 50.0), table, repeat)
    print(f"artifact V100 task, window 3: 3 zones x 1106 ticks of 195 s: {seconds:.2f} s "
          f"(cost {-utility:.2f} USD)")


def _job(data: MarketData, hours: float, gb: float) -> Job:
    return Job(id="job", workload=hours / 1.5, release=data.origin,
               soft_deadline=data.origin + hours * SECONDS_PER_HOUR,
               hard_deadline=data.origin + hours * SECONDS_PER_HOUR,
               restart_overhead=0.2 * SECONDS_PER_HOUR, miss_penalty=1e4, checkpoint_gb=gb)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    synthetic(args.repeat)
    artifact(args.repeat)


if __name__ == "__main__":
    main()
