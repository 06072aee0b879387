"""Solver timings: the recommended planner's (``risk-aware``, learned distributions) and CHC's
per-slot decisions at 10, 100, 1,000 and 10,000 concurrent jobs, against Greedy's decide() in
the same process, and the offline programs at growing sizes.

    python bench/bench_solver.py [--slots 20] [--quick]
    python bench/bench_solver.py --multi-market [--jobs 1000] [--markets 30] [--slots 20]

Markets come from :mod:`solver.synthetic` (4 markets, hourly slots, forecasters trained on its
first week), jobs from :mod:`solver.workload`, all released at the first timed slot so that
every one is active. With four markets every fixed-count job shares the markets it is planned
in with others, so it follows the prediction-free rule rather than a stochastic program
(:mod:`solver.policies.stochastic_planner`); a last case gives eight fixed-count jobs a market
each, so that every one follows its stochastic programs.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time

import numpy as np

from solver.forecast.models import OutlookTape
from solver.job import Job
from solver.market import MarketData, build_market_data, tick_slots
from solver.observation import JobView, Observation
from solver.optimize import SolverLimits, build_integer_program, solve_offline
from solver.policies import make_policy
from solver.policies.forecast_sources import DistributionForecast
from solver.policies.protocol import Policy
from solver.policies.stochastic_planner import StochasticPlanner
from solver.simulator import tape
from solver.synthetic import SyntheticMarketSpec, synthetic_ticks
from solver.workload import WorkloadSpec, generate_jobs

WARM_SLOTS = 168
"""Slots the forecasters learn before the timed ones."""


def observation(data: MarketData, jobs: list[Job], t: int, outlooks: OutlookTape
                ) -> Observation:
    views = sorted((JobView(j, j.workload, 0.0, None) for j in jobs),
                   key=lambda v: (v.job.hard_deadline, v.id))
    return Observation(t, data.slot_start(t), data.slot_seconds, data.markets,
                       data.price[:, :t], data.availability[:, :t],
                       data.boundary_price[:, t].copy(), data.boundary_availability[:, t].copy(),
                       tuple(views), outlooks[t])


def decide_times(policy: Policy, observations: list[Observation]) -> np.ndarray:
    out = []
    for obs in observations:
        start = time.perf_counter()
        policy.decide(obs)
        out.append(time.perf_counter() - start)
    return np.array(out)


def bench_planners(slots: int, sizes: tuple[int, ...]) -> None:
    data = build_market_data(synthetic_ticks(SyntheticMarketSpec(seed=0, days=21)), 3600)
    later = data.window(WARM_SLOTS, data.n_slots - WARM_SLOTS)
    print(f"Per-slot decide(), learned distributions, {slots} slots from hour {WARM_SLOTS}")
    print(f"{'policy':>11} {'jobs':>6} {'p50 s':>8} {'p99 s':>8} {'max s':>8} "
          f"{'greedy p50 s':>13} {'ratio p50':>10}")
    outlooks = tape(data)
    for n in sizes:
        time_planners(data, outlooks, generate_jobs(later, n, WorkloadSpec(seed=0)), slots)


def bench_own_markets(slots: int) -> None:
    """Fixed-count jobs with a market each, which all follow programs: the programs' time."""
    data = build_market_data(
        synthetic_ticks(SyntheticMarketSpec(seed=0, days=21, n_markets=8)), 3600)
    later = data.window(WARM_SLOTS, data.n_slots - WARM_SLOTS)
    jobs = [dataclasses.replace(j, allowed_markets=(market.key,)) for j, market in zip(
        generate_jobs(later, len(data.markets), WorkloadSpec(seed=0, n_min_share=1.0)),
        data.markets, strict=True)]
    print(f"\nThe same, {len(jobs)} fixed-count jobs on {len(data.markets)} markets, one each")
    time_planners(data, tape(data), jobs, slots)


def bench_multi_market(slots: int, n_jobs: int, n_markets: int) -> None:
    """Fixed-count jobs each allowed in every one of ``n_markets`` markets (the synthetic zones
    with two instance types), all planned by the multi-market programs (``risk-aware`` routes
    jobs that share markets to the threshold rule, so the planner is timed alone): the time of
    admission (every job's first programs), then the per-slot time, re-solves included (every
    six hours, at most the per-slot solve budget), against the target of a p99 under 1 s. The
    markets' outlooks are made before the clock starts (the forecasters make them once per
    boundary for every policy); a job leaves the observations once its hard deadline has
    passed (the jobs never run here, and a job past it would be done or given up)."""
    ticks = []
    for seed in range(math.ceil(n_markets / 8)):  # the generator has 8 zones: other types
        kind = f"p3.{seed}xlarge"
        ticks += [dataclasses.replace(t, market=dataclasses.replace(t.market, instance_type=kind))
                  for t in synthetic_ticks(SyntheticMarketSpec(
                      seed=seed, days=21, n_markets=min(8, n_markets - 8 * seed)))]
    data = build_market_data(ticks, 3600)
    later = data.window(WARM_SLOTS, data.n_slots - WARM_SLOTS)
    start = data.slot_start(WARM_SLOTS)
    jobs = [dataclasses.replace(j, release=start) for j in
            generate_jobs(later, n_jobs, WorkloadSpec(seed=0, n_min_share=1.0))]
    outlooks = tape(data)
    started = time.perf_counter(), time.process_time()
    outlooks[WARM_SLOTS + slots].ready()
    made = time.perf_counter() - started[0], time.process_time() - started[1]
    observations = [observation(data, [j for j in jobs if j.hard_deadline > data.slot_start(t)],
                                t, outlooks)
                    for t in range(WARM_SLOTS, WARM_SLOTS + slots + 1)]
    planner = StochasticPlanner(DistributionForecast(), resolve_hours=6.0, window_hours=None,
                                solves=12)
    print(f"\n{n_jobs} fixed-count jobs, each allowed in all {n_markets} markets, planned by "
          f"the multi-market programs", flush=True)
    print(f"  outlooks (untimed below): {WARM_SLOTS + slots + 1} boundaries in {made[0]:.1f} s "
          f"wall, {made[1]:.1f} s CPU, {made[0] / (WARM_SLOTS + slots + 1):.3f} s a boundary")
    started = time.perf_counter(), time.process_time()
    planner.plan(observations[0])
    print(f"  admission {time.perf_counter() - started[0]:.1f} s wall, "
          f"{time.process_time() - started[1]:.1f} s CPU; then per slot over {slots} slots:",
          flush=True)
    wall, cpu = [], []
    for k, obs in enumerate(observations[1:], 1):
        started = time.perf_counter(), time.process_time()
        planner.plan(obs)
        wall.append(time.perf_counter() - started[0])
        cpu.append(time.process_time() - started[1])
        print(f"  slot {k}/{slots}: {wall[-1]:.3f} s", end="\r", file=sys.stderr, flush=True)
    for name, times in (("wall", np.array(wall)), ("CPU", np.array(cpu))):
        p50, p99 = np.percentile(times, [50, 99])
        print(f"  {name:>4} p50 {p50:.3f} s, p99 {p99:.3f} s, max {times.max():.3f} s")
    p99 = float(np.percentile(wall, 99))
    print(f"  target: wall p99 {p99:.3f} s {'<' if p99 < 1.0 else '>='} 1 s per slot: "
          f"{'met' if p99 < 1.0 else 'missed'}")


def time_planners(data: MarketData, outlooks: OutlookTape, jobs: list[Job], slots: int
                  ) -> None:
    """Print ``risk-aware``'s and ``chc``'s per-slot times for ``jobs``, all released at the
    first timed slot, against Greedy's."""
    start = data.slot_start(WARM_SLOTS)
    jobs = [dataclasses.replace(j, release=start) for j in jobs]
    observations = [observation(data, jobs, t, outlooks)
                    for t in range(WARM_SLOTS, WARM_SLOTS + slots)]
    greedy = float(np.percentile(decide_times(make_policy("greedy"), observations), 50))
    for name in ("risk-aware", "chc"):
        make_policy(name).decide(observations[0])  # untimed: loads the compiled programs
        times = decide_times(make_policy(name), observations)
        p50, p99 = np.percentile(times, [50, 99])
        print(f"{name:>11} {len(jobs):>6} {p50:>8.3f} {p99:>8.3f} {times.max():>8.3f} "
              f"{greedy:>13.5f} {p50 / greedy:>10.0f}")


def bench_offline(quick: bool) -> None:
    print("\nOffline integer program (hourly slots, 2 markets, jobs with 1-2 instances)")
    print(f"{'jobs':>5} {'slots':>6} {'backend':>8} {'vars':>6} {'seconds':>8} {'optimal':>8} "
          f"{'utility':>9}")
    limits = SolverLimits(node_limit=20_000, deterministic_seconds=30.0)
    sizes = ((2, 24), (3, 36)) if quick else ((2, 24), (3, 36), (3, 48), (4, 72))
    for n_jobs, n_slots in sizes:
        spec = SyntheticMarketSpec(seed=1, n_markets=2, days=n_slots / 24 + 0.1)
        data = build_market_data(synthetic_ticks(spec), 3600).window(0, n_slots)
        jobs = generate_jobs(data, n_jobs, WorkloadSpec(seed=1, workload_range=(3, 10),
                                                        n_max_choices=(1, 2)))
        for backend in ("highs", "cp-sat"):
            start = time.perf_counter()
            plan = solve_offline(data, jobs, method="program", backend=backend, limits=limits)
            took = time.perf_counter() - start
            size = build_integer_program(data, [JobView(j, j.workload, 0.0, None) for j in jobs])
            print(f"{n_jobs:>5} {n_slots:>6} {backend:>8} {size.program.n_vars:>6} {took:>8.2f} "
                  f"{plan.optimal!s:>8} {plan.expected_utility:>9.2f}")
    print("\nExact dynamic program, one instance on 195 s ticks (Can't Be Late shape)")
    print(f"{'task h':>7} {'deadline h':>11} {'overhead h':>11} {'ticks':>6} {'seconds':>8}")
    spec = SyntheticMarketSpec(seed=2, n_markets=1, days=2.7, tick_seconds=195.0, capacity=1)
    data = tick_slots(synthetic_ticks(spec), 195.0).window(0, 1145)
    cases = ((12, 16, 0.2),) if quick else ((12, 16, 0.2), (48, 52, 0.2), (48, 52, 0.02))
    for task, deadline, overhead in cases:
        j = Job("cbl", task, data.origin, data.origin + deadline * 3600,
                data.origin + deadline * 3600, restart_overhead=overhead * 3600,
                miss_penalty=1e6)
        start = time.perf_counter()
        solve_offline(data, [j])
        print(f"{task:>7} {deadline:>11} {overhead:>11} {data.n_slots:>6} "
              f"{time.perf_counter() - start:>8.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slots", type=int, default=20, help="re-solves timed per size")
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    parser.add_argument("--multi-market", action="store_true",
                        help="only the multi-market planner (--jobs over --markets)")
    parser.add_argument("--jobs", type=int, default=1000,
                        help="jobs of the multi-market planner (100 with --quick)")
    parser.add_argument("--markets", type=int, default=30,
                        help="markets every job of the multi-market planner may use")
    args = parser.parse_args()
    jobs = 100 if args.quick else args.jobs
    if args.multi_market:
        bench_multi_market(args.slots, jobs, args.markets)
        return
    bench_planners(args.slots, (10, 100) if args.quick else (10, 100, 1000, 10000))
    bench_own_markets(args.slots)
    bench_multi_market(args.slots, jobs, args.markets)
    bench_offline(args.quick)


if __name__ == "__main__":
    main()
