"""Decisions, replayed workloads and Kafka plumbing shared by the connector tests."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from connectors.holding import Holding
from solver.job import Job
from solver.market import MarketData, MarketTicks
from streams.contract import Envelope, ProvisioningDecision, dump_event, parse_event
from streams.pipeline.trace_events import trace_events
from streams.runners.memory import run_in_memory
from streams.settings import Settings
from tests.scenarios import synthetic

SLOT = 3600.0
MARKET = "aws/us-east-1/us-east-1a/p3.2xlarge"
OTHER_MARKET = "aws/us-west-2/us-west-2a/p3.2xlarge"


def decision(job_id: str = "job-1", epoch: int = 480000, market: str = MARKET, spot: int = 0,
             on_demand: int = 0, revision: int = 0, release: str | None = None,
             slot_seconds: float = SLOT, reason: str = "") -> ProvisioningDecision:
    """A decision for slot ``epoch`` (slots since the Unix epoch): a release with cause
    ``release``, else a run or an idle by the counts."""
    action = "release" if release else "run" if spot + on_demand else "idle"
    start = epoch * slot_seconds
    return ProvisioningDecision(
        event_time=start, job_id=job_id, epoch=epoch, slot_start=start,
        slot_seconds=slot_seconds, market=market, spot=spot, on_demand=on_demand,
        revision=revision, policy="test", action=action, release_cause=release,
        expected_cost_usd=0.0, slack_seconds=3600.0, reason=reason)


@dataclass(frozen=True)
class Replay:
    """A synthetic market, a workload and the decisions ``policy`` makes for them."""

    ticks: list[MarketTicks]
    data: MarketData
    jobs: list[Job]
    policy: str

    @cached_property
    def decisions(self) -> list[ProvisioningDecision]:
        """The pipeline's decisions, run in memory on first use."""
        return run_in_memory(trace_events(self.ticks, self.jobs), self.data.markets, SLOT,
                             self.policy)


def replay(seed: int = 2, n_markets: int = 3, days: float = 3, n_jobs: int = 6,
           policy: str = "greedy", workload_range: tuple[float, float] = (4.0, 24.0),
           tick_seconds: float = 300.0) -> Replay:
    ticks, data, jobs = synthetic(seed, n_markets, days, n_jobs, tick_seconds, SLOT,
                                  workload_range=workload_range)
    return Replay(ticks, data, jobs, policy)


def final_holdings(decisions: Iterable[ProvisioningDecision]) -> dict[str, Holding]:
    """What every job should hold once all ``decisions`` are applied in order."""
    held: dict[str, Holding] = {}
    for d in decisions:
        holding = Holding.of(d)
        if holding is None:
            held.pop(d.job_id, None)
        else:
            held[d.job_id] = holding
    return held


async def publish(settings: Settings, topic: str, messages: Iterable[Envelope | bytes]) -> int:
    """Send events (keyed like the pipeline) or raw bytes to ``topic``, in order."""
    producer = AIOKafkaProducer(bootstrap_servers=settings.bootstrap_servers, acks="all")
    await producer.start()
    count = 0
    try:
        for message in messages:
            if isinstance(message, bytes):
                await producer.send_and_wait(topic, message, key=b"raw")
            else:
                await producer.send_and_wait(topic, dump_event(message),
                                             key=message.key.encode())
            count += 1
    finally:
        await producer.stop()
    return count


async def read_all(settings: Settings, topic: str) -> list[Envelope]:
    """Every event on ``topic`` now, in partition order."""
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=settings.bootstrap_servers,
                                group_id=None, enable_auto_commit=False,
                                auto_offset_reset="earliest")
    await consumer.start()
    try:
        await wait_until(lambda: bool(consumer.assignment()), 10, f"partitions of {topic}")
        partitions = sorted(consumer.assignment())
        ends = await consumer.end_offsets(partitions)
        events: list[Envelope] = []
        for tp in partitions:
            while await consumer.position(tp) < ends[tp]:
                batch = await consumer.getmany(tp, timeout_ms=1000)
                events.extend(parse_event(m.value) for m in batch.get(tp, []))
        return events
    finally:
        await consumer.stop()


async def committed(settings: Settings, group: str, partition: int = 0) -> int | None:
    """The offset ``group`` has committed on the decisions topic (``None``: nothing yet)."""
    consumer = AIOKafkaConsumer(bootstrap_servers=settings.bootstrap_servers, group_id=group,
                                enable_auto_commit=False)
    await consumer.start()
    try:
        return await consumer.committed(TopicPartition(settings.topics.decisions, partition))
    finally:
        await consumer.stop()


async def wait_until(condition: Callable[[], bool], timeout: float = 30.0,
                     what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached after {timeout} s")
        await asyncio.sleep(0.05)
