"""What the market-ticks topic already holds for a feed's markets.

A feed learns where it stopped from the topic itself, not from a local file: at start it reads
the partitions that hold its markets backwards from the end, in growing windows, until it has
found each market's last feed tick (a price tick or a ``probe`` availability tick) or reached
the beginning. It also keeps the latest event time of *any* tick of each market (connectors
publish refusals and preemptions to the same partitions), and keeps tailing the partitions so
that it never publishes a tick older than one already there, which the market stage would
reject as late.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from aiokafka import AIOKafkaConsumer, TopicPartition

from connectors.feeds.planner import Position, is_feed_tick, position
from streams.contract import AvailabilityTick, EventError, PriceTick, parse_event
from streams.kafka.partitions import partition_for
from streams.settings import Settings

log = logging.getLogger(__name__)

FIRST_WINDOW = 512
"""Messages per partition read in the first backward window (doubled after each)."""

POLL_MS = 200
"""How long :meth:`TopicView.poll` waits for messages when none are fetched yet."""


@dataclass
class MarketLog:
    """One market on the topic: its last feed tick and the time of its latest tick."""

    last_feed: Position | None = None
    latest: float | None = None


class TopicView:
    """The partitions of the market-ticks topic that hold a feed's markets."""

    def __init__(self, settings: Settings, markets: Sequence[str]) -> None:
        self.settings = settings
        self.topic = settings.topics.market_ticks
        self.markets = {key: MarketLog() for key in markets}
        self._by_partition: dict[TopicPartition, set[str]] = {}
        for key in markets:
            tp = TopicPartition(self.topic, partition_for(key, settings.market_partitions))
            self._by_partition.setdefault(tp, set()).add(key)
        self._consumer: AIOKafkaConsumer | None = None

    async def start(self) -> None:
        """Read the partitions back, then position them at their ends for :meth:`poll`."""
        consumer = AIOKafkaConsumer(**self.settings.kafka_options(), group_id=None,
                                    enable_auto_commit=False)
        await consumer.start()
        self._consumer = consumer
        partitions = sorted(self._by_partition)
        consumer.assign(partitions)
        ends = await consumer.end_offsets(partitions)
        for tp in partitions:
            await self._read_back(consumer, tp, ends[tp])
            consumer.seek(tp, ends[tp])
        found = sum(m.last_feed is not None for m in self.markets.values())
        log.info("read back %s: %d of %d markets have feed ticks", self.topic, found,
                 len(self.markets))

    async def _read_back(self, consumer: AIOKafkaConsumer, tp: TopicPartition,
                         end: int) -> None:
        keys = self._by_partition[tp]
        high, window = end, FIRST_WINDOW
        while high > 0 and any(self.markets[k].last_feed is None for k in keys):
            low = max(0, high - window)
            older = {k: MarketLog() for k in keys}
            consumer.seek(tp, low)
            while await consumer.position(tp) < high:
                batch = await consumer.getmany(tp, timeout_ms=1000)
                self._fold(older, (m.value for m in batch.get(tp, []) if m.offset < high))
            for key in keys:
                _merge(self.markets[key], older[key])
            high, window = low, 2 * window

    async def poll(self) -> None:
        """Take in what arrived since the last call (waiting at most ``POLL_MS`` for it)."""
        if self._consumer is None:
            raise RuntimeError("TopicView.poll before start")
        batch = await self._consumer.getmany(timeout_ms=POLL_MS)
        for messages in batch.values():
            newer = {k: MarketLog() for k in self.markets}
            self._fold(newer, (m.value for m in messages))
            for key, seen in newer.items():
                _merge(seen, self.markets[key])
                self.markets[key] = seen

    def _fold(self, logs: dict[str, MarketLog], values: Iterable[bytes | None]) -> None:
        """Update ``logs`` with messages in partition order."""
        for raw in values:
            try:
                tick = parse_event(raw or b"")
            except EventError:
                continue  # not a tick; the worker dead-letters it
            if not isinstance(tick, PriceTick | AvailabilityTick) or tick.market not in logs:
                continue
            seen = logs[tick.market]
            time = tick.event_time.timestamp()
            seen.latest = time if seen.latest is None else max(seen.latest, time)
            if is_feed_tick(tick):
                seen.last_feed = max(seen.last_feed or position(tick), position(tick))

    async def stop(self) -> None:
        if self._consumer is not None:
            await self._consumer.stop()
            self._consumer = None


def _merge(into: MarketLog, older: MarketLog) -> None:
    """Complete what a later stretch of the log says with an earlier stretch."""
    if into.last_feed is None:
        into.last_feed = older.last_feed
    if older.latest is not None:
        into.latest = older.latest if into.latest is None else max(into.latest, older.latest)
