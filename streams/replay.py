"""A trace and a workload as the events a live system would publish, and an in-memory run.

:func:`trace_events` orders everything by event time (a job's submission before ticks at the
same instant), exactly what ``spotsched replay --broker`` publishes. :func:`run_in_memory`
pushes those events through the worker's stages without Kafka, partitioned the way the producer
does, so tests can compare it with a Kafka run and with :func:`solver.simulator.simulate`.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Sequence

from aiokafka.partitioner import murmur2

from solver.job import Job
from solver.market import Market, MarketTicks
from solver.observation import Policy
from streams.contract.events import (
    AvailabilityTick,
    JobSubmitted,
    PriceTick,
    ProvisioningDecision,
    dump_event,
)
from streams.pipeline.stage import utc

ReplayEvent = PriceTick | AvailabilityTick | JobSubmitted


def partition_for(key: str | bytes, partitions: int) -> int:
    """Kafka's default partitioner (murmur2 of the key), so every client agrees."""
    data = key if isinstance(key, bytes) else key.encode()
    return (murmur2(data) & 0x7FFFFFFF) % partitions


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
    market_partitions: int = 1,
) -> list[ProvisioningDecision]:
    """All decisions of a ``partitions``-way scheduler fed ``events`` in order, through the
    worker's stages on in-memory topics (:class:`streams.runners.memory.MemoryPipeline`)."""
    from streams.runners.memory import MemoryPipeline

    pipeline = MemoryPipeline(catalogue, slot_seconds, policy_factory, partitions,
                              market_partitions)
    for event in events:
        topic = (pipeline.topics.job_events if isinstance(event, JobSubmitted)
                 else pipeline.topics.market_ticks)
        pipeline.send(topic, dump_event(event), event.key.encode())
    return pipeline.decisions
