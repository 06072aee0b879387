"""A trace and a workload as the events a live system would publish.

:func:`trace_events` orders everything by event time (a job's submission before ticks at the
same instant), exactly what ``spotsched replay --bootstrap-servers`` publishes and what the
in-memory runner (:func:`streams.runners.memory.run_in_memory`) is fed to compare a pipeline
run with :func:`solver.simulator.simulate`.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Iterator, Sequence

from solver.job import Job
from solver.market import MarketTicks
from streams.contract import AvailabilityTick, JobSubmitted, PriceTick, utc

ReplayEvent = PriceTick | AvailabilityTick | JobSubmitted


def submission(job: Job, event_time: float) -> JobSubmitted:
    """The event announcing ``job`` at ``event_time`` (times rounded to microseconds)."""
    return JobSubmitted.from_job_fields(dataclasses.asdict(job), event_time)


def trace_events(ticks: Sequence[MarketTicks], jobs: Sequence[Job]) -> Iterator[ReplayEvent]:
    """Job submissions at their release and each tick as a price and an availability event."""
    def market_events(series: MarketTicks) -> Iterator[tuple[float, int, str, ReplayEvent]]:
        key, od = series.market.key, series.market.on_demand_price
        for time, price, available in zip(series.times.tolist(), series.prices.tolist(),
                                           series.available.tolist(), strict=True):
            at = utc(time)
            yield time, 1, key, PriceTick(event_time=at, market=key, spot_price=price,
                                          on_demand_price=od)
            yield time, 1, key, AvailabilityTick(event_time=at, market=key, available=available,
                                                 reason="probe")

    submissions = sorted(
        ((job.release, 0, job.id, submission(job, job.release)) for job in jobs),
        key=lambda e: e[:3],
    )
    streams = [market_events(s) for s in ticks] + [iter(submissions)]
    for _, _, _, event in heapq.merge(*streams, key=lambda e: e[:3]):
        yield event
