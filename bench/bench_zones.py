"""Each zone alone with the replay's generated workload: the recommended policy against
prediction-free and on-demand only.

For each 1-node AWS V100 availability trace of 2023-02-15 (six zones; spot at the loader's share
of the on-demand price), ``spotsched replay --trace ZONE`` as the README runs it: 20 jobs from
the replay's generator (seed 0, ``N_min = N_max / 2``), hourly slots. Prints, per zone, each
policy's total utility, risk-aware's against prediction-free's and against on-demand's, and
whether risk-aware is at least prediction-free and within 2 % of on-demand or above it. Run:
``python bench/bench_zones.py [--seed N] [--n-jobs N] [ZONE ...]``; the traces' folder defaults
to ``$SPOTSCHED_TRACES_DIR`` (or ``../shared/traces``).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from solver.evaluation.compare import compare_policies
from solver.market import build_market_data
from solver.traces import load_traces
from solver.workload import WorkloadSpec, generate_jobs

FOLDER = "skypilot-spot-traces/availability/1-node/aws-02-15-2023"
ZONES = ("us-east-1a", "us-east-1c", "us-east-1d", "us-east-2b", "us-west-2a", "us-west-2b")
POLICIES = ("on-demand", "prediction-free", "risk-aware")
WITHIN = 0.02
"""How far below on-demand only's utility the recommended policy may end."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("zones", nargs="*", default=list(ZONES))
    parser.add_argument("--seed", type=int, default=0, help="the workload's seed (replay's)")
    parser.add_argument("--n-jobs", type=int, default=20, help="jobs per zone (replay's)")
    args = parser.parse_args()
    root = Path(os.environ.get("SPOTSCHED_TRACES_DIR",
                               Path(__file__).parents[1] / "../shared/traces"))
    console = Console(width=120)
    table = Table(title=f"each zone alone, {args.n_jobs} generated jobs (seed {args.seed})")
    for column in ("zone", *POLICIES, "vs prediction-free", "vs on-demand", "met", "seconds"):
        table.add_column(column, justify="left" if column == "zone" else "right")
    met = 0
    for zone in args.zones:
        began = time.perf_counter()
        data = build_market_data(load_traces([root / FOLDER / f"{zone}_v100_1.json"]), 3600)
        jobs = generate_jobs(data, args.n_jobs, WorkloadSpec(seed=args.seed))
        _, summaries = compare_policies(data, jobs, POLICIES)
        utility = {s.policy: s.total_utility for s in summaries}
        ours, free, on_demand = (utility[p] for p in ("risk-aware", "prediction-free",
                                                      "on-demand"))
        ok = ours >= free and ours >= on_demand - WITHIN * abs(on_demand)
        met += ok
        table.add_row(zone, *(f"{utility[p]:.2f}" for p in POLICIES), f"{ours - free:+.2f}",
                      f"{(ours - on_demand) / abs(on_demand):+.1%}", "yes" if ok else "NO",
                      f"{time.perf_counter() - began:.1f}")
    console.print(table)
    console.print(f"{met}/{len(args.zones)} zones: risk-aware at least prediction-free and "
                  f"within {WITHIN:.0%} of on-demand only or above it")


if __name__ == "__main__":
    main()
