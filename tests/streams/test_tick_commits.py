"""The market-ticks loop commits a batch while the next one is handled, one commit at a time,
and a rebalance or a stop waits for the commit in flight (no broker: a consumer in memory)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence

from aiokafka import ConsumerRebalanceListener, ConsumerRecord, TopicPartition

from streams.runners.tick_consumer import TickLoop
from streams.settings import Settings
from tests.streams.ready_stages import ReadyStages

TP = TopicPartition("spotsched.market-ticks", 0)


def records(first: int, count: int) -> list[ConsumerRecord]:
    return [ConsumerRecord(TP.topic, 0, offset, 0, 0, None, b"tick", None, 0, 4, [])
            for offset in range(first, first + count)]


class Consumer:
    """A consumer in memory: hands out the given batches, then polls idle until stopped; a
    commit lands when the test says. Each step is logged, and whoever waits on the log is
    told."""

    def __init__(self, batches: list[list[ConsumerRecord]]) -> None:
        self.batches = batches
        self.log: list[str] = []
        self.listener: ConsumerRebalanceListener | None = None
        self.landing: list[asyncio.Future[None]] = []
        self.overlapping = False
        """Whether a commit was sent while another was in flight."""
        self._changed = asyncio.Condition()

    async def record(self, line: str) -> None:
        async with self._changed:
            self.log.append(line)
            self._changed.notify_all()

    async def until(self, logged: Callable[[list[str]], bool]) -> None:
        """Until the log satisfies ``logged``."""
        async with asyncio.timeout(10), self._changed:
            await self._changed.wait_for(lambda: logged(self.log))

    async def start(self) -> None:
        pass

    def subscribe(self, topics: Sequence[str], listener: ConsumerRebalanceListener) -> None:
        assert list(topics) == [TP.topic]
        self.listener = listener

    async def getmany(self, timeout_ms: int, max_records: int
                      ) -> dict[TopicPartition, list[ConsumerRecord]]:
        if self.batches:
            return {TP: self.batches.pop(0)}
        await asyncio.Event().wait()  # an idle poll, until the loop stops
        return {}

    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        self.overlapping |= any(not landing.done() for landing in self.landing)
        self.landing.append(asyncio.get_running_loop().create_future())
        await self.record(f"commit {offsets[TP]} sent")
        await self.landing[-1]
        await self.record(f"commit {offsets[TP]} landed")

    def land(self) -> None:
        """The oldest commit in flight lands."""
        next(landing for landing in self.landing if not landing.done()).set_result(None)

    def highwater(self, tp: TopicPartition) -> int | None:
        return None

    async def stop(self) -> None:
        await self.record("stopped")

    async def handle(self, batch: Sequence[ConsumerRecord]) -> list[asyncio.Future[None]]:
        """The loop's handler: logs the batch's offsets, delivers nothing."""
        await self.record(f"handled {batch[0].offset}..{batch[-1].offset}")
        return []


def loop_over(consumer: Consumer) -> TickLoop:
    return TickLoop(Settings(), consumer.handle, ReadyStages(), consumer=lambda: consumer)


async def settled() -> None:
    """Once every task that can run has run as far as it can."""
    for _ in range(20):
        await asyncio.sleep(0)


async def test_a_commit_lands_while_the_next_batch_is_handled_and_is_waited_for():
    consumer = Consumer([records(0, 3), records(3, 2)])
    ticks = loop_over(consumer)
    await ticks.start()
    try:
        # The second batch is handled while the first batch's commit is in flight, and its
        # own commit waits for that one to land.
        await consumer.until(lambda log: len(log) == 3)
        await settled()
        assert consumer.log[0] == "handled 0..2"
        assert sorted(consumer.log[1:]) == ["commit 3 sent", "handled 3..4"]
        consumer.land()
        await consumer.until(lambda log: "commit 5 sent" in log)
        assert consumer.log[3:] == ["commit 3 landed", "commit 5 sent"]
        # A rebalance waits for the commit in flight before the partitions go.
        assert consumer.listener is not None
        revoking = asyncio.ensure_future(consumer.listener.on_partitions_revoked({TP}))
        await settled()
        assert not revoking.done()
        consumer.land()
        await asyncio.wait_for(revoking, 10)
        assert consumer.log[-1] == "commit 5 landed"
        assert not consumer.overlapping
    finally:
        for landing in consumer.landing:
            if not landing.done():
                landing.set_result(None)
        await ticks.stop()


async def test_a_stop_waits_for_the_commit_in_flight():
    consumer = Consumer([records(0, 3)])
    ticks = loop_over(consumer)
    await ticks.start()
    await consumer.until(lambda log: "commit 3 sent" in log)
    stopping = asyncio.ensure_future(ticks.stop())
    await settled()
    assert not stopping.done()
    consumer.land()
    await asyncio.wait_for(stopping, 10)
    assert consumer.log[-2:] == ["commit 3 landed", "stopped"]
