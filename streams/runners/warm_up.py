"""Compiled code and late imports loaded before a worker takes records: a short synthetic market
and a few jobs run through every stage in memory, so the first forecast and the first decision
after a start do not wait for numba to load the forecasters' and the policy's compiled code
(close to a second on a loaded machine) while records queue behind them."""

from __future__ import annotations

import logging
import time

from solver.market import build_market_data
from solver.policies import PolicySpec
from solver.synthetic import SyntheticMarketSpec, synthetic_ticks
from solver.workload import WorkloadSpec, generate_jobs
from streams.pipeline.trace_events import trace_events
from streams.runners.memory import run_in_memory

log = logging.getLogger(__name__)

WARM_UP_SLOTS = 72
"""Slots of the synthetic market: its forecasters learn some and its jobs are decided."""
WARM_UP_JOBS = 3


def warm_up(slot_seconds: float, policy: PolicySpec) -> int:
    """Run ``policy`` at ``slot_seconds`` on a synthetic market of two zones through every
    stage; returns the decisions it made (logged with the seconds it took)."""
    began = time.perf_counter()
    ticks = synthetic_ticks(SyntheticMarketSpec(
        seed=0, n_markets=2, days=WARM_UP_SLOTS * slot_seconds / 86_400,
        tick_seconds=slot_seconds / 2))
    data = build_market_data(ticks, slot_seconds)
    jobs = generate_jobs(data, WARM_UP_JOBS, WorkloadSpec(seed=0, workload_range=(2.0, 8.0)))
    decisions = run_in_memory(trace_events(ticks, jobs), data.markets, slot_seconds, policy)
    log.info("warmed up: %d decisions on a synthetic market in %.1f s", len(decisions),
             time.perf_counter() - began)
    return len(decisions)
