"""A trace and a workload as the events a live system would publish, and an in-memory run.

:func:`trace_events` orders everything by event time (a job's submission before ticks at the
same instant), exactly what ``spotsched replay --broker`` publishes. :func:`run_in_memory`
pushes those events through the pipeline stages without Kafka, partitioning jobs the way the
producer does, so tests can compare it with a Kafka run and with :func:`solver.simulator.simulate`.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Sequence

from aiokafka.partitioner import murmur2

from solver.job import Job
from solver.market import Market, MarketTicks
from solver.policy import Policy
from streams.events import (
    AvailabilityTick,
    EpochClosed,
    JobSubmitted,
    MarketBoundary,
    PriceTick,
    ProvisioningDecision,
)
from streams.pipeline import EpochCoordinator, MarketStage, PartitionScheduler, utc

ReplayEvent = PriceTick | AvailabilityTick | JobSubmitted


def partition_for(key: str, partitions: int) -> int:
    """Kafka's default partitioner (murmur2 of the key), so every client agrees."""
    return (murmur2(key.encode()) & 0x7FFFFFFF) % partitions


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
        ((job.release, 0, job.id, JobSubmitted.from_job(job, job.release)) for job in jobs),
        key=lambda e: e[:3],
    )
    streams = [market_events(s) for s in ticks] + [iter(submissions)]
    for _, _, _, event in heapq.merge(*streams, key=lambda e: e[:3]):
        yield event


def run_in_memory(
    events: Iterator[ReplayEvent],
    catalogue: Sequence[Market],
    slot_seconds: float,
    policy_factory: Callable[[], Policy],
    partitions: int = 1,
) -> list[ProvisioningDecision]:
    """All decisions of a ``partitions``-way scheduler fed ``events`` in order."""
    markets = MarketStage(catalogue, slot_seconds)
    coordinator = EpochCoordinator(catalogue, slot_seconds)
    schedulers = [PartitionScheduler(catalogue, slot_seconds, policy_factory)
                  for _ in range(partitions)]
    decisions: list[ProvisioningDecision] = []

    def close(epochs: list[EpochClosed]) -> None:
        for epoch in epochs:
            for scheduler in schedulers:
                decisions.extend(scheduler.handle(epoch))

    for event in events:
        if isinstance(event, JobSubmitted):
            schedulers[partition_for(event.job_id, partitions)].handle(event)
        else:
            for boundary in markets.handle(event):
                if isinstance(boundary, MarketBoundary):
                    close(coordinator.handle(boundary))
    return decisions
