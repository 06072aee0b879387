"""In-process replay speed: the 45-day, 6-zone AWS trace with 100 jobs and every baseline.

Prints the time to load the file and cut it into 1-hour slots (ticks/s), then the simulation
time per policy (job-slots/s: active job-slots simulated per second), each policy's time as a
ratio of on-demand only's (the simplest policy, timed in the same process), and the total
against the 30 s target. Run: ``python bench/bench_replay.py [TRACE]``; the trace defaults to
``$SPOTSCHED_TRACES_DIR`` (or ``../shared/traces``) ``/skynomad-artifact/...csv.gz``.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from solver.market import build_market_data
from solver.policies import make_policy
from solver.simulator import simulate
from solver.traces import load_traces
from solver.workload import WorkloadSpec, generate_jobs

TRACE = ("skynomad-artifact/"
         "aws_p3.2xlarge_availability_and_spot_price_2023-02-15_to_2023-04-02.csv.gz")
POLICIES = ("on-demand", "spot-only", "greedy", "uniform-progress")
TARGET_S = 30.0


def main() -> None:
    default = Path(__file__).parents[1] / "../shared/traces"
    root = Path(os.environ.get("SPOTSCHED_TRACES_DIR", default))
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else root / TRACE
    console = Console()
    started = time.perf_counter()
    ticks = load_traces([path])
    loaded = time.perf_counter()
    data = build_market_data(ticks, 3600)
    cut = time.perf_counter()
    jobs = generate_jobs(data, 100, WorkloadSpec(seed=0))
    n_ticks = sum(len(t.times) for t in ticks)
    table = Table(title=f"{path.name}: {len(data.markets)} markets, {n_ticks:,} ticks, "
                        f"{data.n_slots} slots, {len(jobs)} jobs")
    for column in ("step", "seconds", "throughput", "vs on-demand"):
        table.add_column(column, justify="left" if column == "step" else "right")
    for step, seconds in (("load file", loaded - started), ("cut into slots", cut - loaded)):
        table.add_row(step, f"{seconds:.2f}", f"{n_ticks / seconds:,.0f} ticks/s", "")
    job_slots = sum(
        min(data.slot_of(j.hard_deadline), data.n_slots) - max(data.slot_of(j.release), 0)
        for j in jobs
    )
    reference = None
    for name in POLICIES:
        began = time.perf_counter()
        simulate(data, jobs, make_policy(name))
        seconds = time.perf_counter() - began
        reference = reference or seconds
        table.add_row(f"simulate {name}", f"{seconds:.2f}",
                      f"{job_slots / seconds:,.0f} job-slots/s", f"{seconds / reference:.2f}×")
    total = time.perf_counter() - started
    table.add_row("total", f"{total:.2f}", "", "")
    console.print(table)
    verdict = "within" if total <= TARGET_S else "OVER"
    console.print(f"total {total:.2f} s for load + slots + {len(POLICIES)} policies: "
                  f"{verdict} the {TARGET_S:.0f} s target ({total / TARGET_S:.0%} of it)")


if __name__ == "__main__":
    main()
