"""The market-ticks path commits a batch while the next one is handled, one commit at a time,
and a rebalance or a stop waits for the commit in flight (no broker: a consumer in memory)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping

from aiokafka import ConsumerRecord, TopicPartition

from streams.runners.tick_consumer import TickConsumer, _Handover
from streams.settings import Settings
from tests.streams.ready_stages import ReadyStages

TP = TopicPartition("market-ticks", 0)


def records(first: int, count: int) -> list[ConsumerRecord]:
    return [ConsumerRecord(TP.topic, 0, offset, 0, 0, None, b"tick", None, 0, 4, [])
            for offset in range(first, first + count)]


class Consumer:
    """Hands out the given batches, then nothing; each commit lands when the test says."""

    def __init__(self, batches: list[list[ConsumerRecord]], log: list[str]) -> None:
        self.batches, self.log = batches, log
        self.landing: list[asyncio.Future[None]] = []

    async def getmany(self, timeout_ms: int, max_records: int
                      ) -> dict[TopicPartition, list[ConsumerRecord]]:
        if self.batches:
            return {TP: self.batches.pop(0)}
        await asyncio.sleep(0.01)
        return {}

    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        self.log.append(f"commit {offsets[TP]} sent")
        self.landing.append(asyncio.get_running_loop().create_future())
        await self.landing[-1]
        self.log.append(f"commit {offsets[TP]} landed")

    def highwater(self, tp: TopicPartition) -> int | None:
        return None

    async def stop(self) -> None:
        self.log.append("stopped")


def handler(log: list[str]) -> Callable[[list[ConsumerRecord]],
                                       Awaitable[list[asyncio.Future[None]]]]:
    """Handles a batch by logging its offsets; it delivers nothing."""
    async def handle(batch: list[ConsumerRecord]) -> list[asyncio.Future[None]]:
        log.append(f"handled {batch[0].offset}..{batch[-1].offset}")
        return []
    return handle


async def until(condition: Callable[[], bool], seconds: float = 5.0) -> None:
    async with asyncio.timeout(seconds):
        while not condition():
            await asyncio.sleep(0.005)


async def test_a_commit_lands_while_the_next_batch_is_handled_and_is_waited_for():
    log: list[str] = []

    consumer = Consumer([records(0, 3), records(3, 2)], log)
    ticks = TickConsumer(Settings(), handler(log), ReadyStages())
    consuming = asyncio.ensure_future(ticks._consume(consumer))
    try:
        await until(lambda: len(log) == 3)
        # The second batch is handled while the first batch's commit is in flight, and its
        # own commit waits for that one to land.
        assert log[0] == "handled 0..2"
        assert sorted(log[1:]) == ["commit 3 sent", "handled 3..4"]
        await asyncio.sleep(0.05)
        assert len(log) == 3
        consumer.landing[0].set_result(None)
        await until(lambda: "commit 5 sent" in log)
        assert log[3:] == ["commit 3 landed", "commit 5 sent"]
        # A rebalance waits for the commit in flight before the partitions go.
        revoking = asyncio.ensure_future(
            _Handover(ticks._batch, ticks._committed).on_partitions_revoked({TP}))
        await asyncio.sleep(0.05)
        assert not revoking.done()
        consumer.landing[1].set_result(None)
        await asyncio.wait_for(revoking, 5)
        assert log[-1] == "commit 5 landed"
    finally:
        consuming.cancel()
        await asyncio.gather(consuming, return_exceptions=True)


async def test_a_stop_waits_for_the_commit_in_flight():
    log: list[str] = []

    consumer = Consumer([records(0, 3)], log)
    ticks = TickConsumer(Settings(), handler(log), ReadyStages())
    ticks._consumer = consumer
    ticks._consuming = asyncio.ensure_future(ticks._consume(consumer))
    await until(lambda: "commit 3 sent" in log)
    stopping = asyncio.ensure_future(ticks.on_stop())
    await asyncio.sleep(0.05)
    assert not stopping.done()
    assert "stopped" not in log
    consumer.landing[0].set_result(None)
    await asyncio.wait_for(stopping, 5)
    assert log[-2:] == ["commit 3 landed", "stopped"]
