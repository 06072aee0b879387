"""The feed loop: price history in, market ticks out, resumable from the topic alone.

At start the runner reads back the market-ticks topic (:class:`~connectors.feeds.topic.TopicView`)
and continues each market after its last feed tick; a market without one starts at the slot
boundary at or before ``since`` (default: now). Then, until ``until`` or a stop:

1. the watermark is ``now - lag_seconds`` (at most ``until``): clouds may list a change a
   little after it happened, and nothing later than the watermark is published;
2. the source gives the price history from the earliest market position to the watermark (at
   most ``chunk_seconds`` at a time, so a long backfill goes in steps), with retries;
3. :func:`~connectors.feeds.planner.plan` gives each market's ticks up to there; ticks older
   than the market's latest tick on the topic (a connector's report, say) are skipped, since
   the market stage would reject them as late, and the next heartbeat carries the price;
4. the ticks are published in time order, keyed and partitioned like every market tick, and
   acknowledged by all replicas before the next round; then the runner waits
   ``poll_seconds`` unless it is still catching up.

A crash anywhere leaves each market's ticks on the topic as a prefix of its sequence (one
partition per market, an idempotent producer), so the restarted feed neither repeats nor
skips a tick.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from aiokafka import AIOKafkaProducer
from prometheus_client import CollectorRegistry

from connectors.feeds.base import PriceChange, PriceSource
from connectors.feeds.metrics import FeedMetrics
from connectors.feeds.planner import FeedGrid, FeedTick, Position, plan, position
from connectors.feeds.retry import FeedStopped, RateLimitedLog, RetryPolicy, retrying
from connectors.feeds.topic import TopicView
from solver.market import Market
from streams.contract import PriceTick, utc
from streams.kafka.clients import send_event
from streams.settings import Settings

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class FeedOptions:
    """How often and how far the feed publishes (docs/operations.md, "Live market feed").

    ``crash_after_ticks`` is a test hook: the process kills itself (SIGKILL) once that many
    ticks are acknowledged; 0 turns it off.
    """

    grid: FeedGrid
    poll_seconds: float = 60.0
    lag_seconds: float = 30.0
    since: float | None = None
    until: float | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    chunk_seconds: float = 86400.0
    crash_after_ticks: int = 0

    def __post_init__(self) -> None:
        for name, expected in (("poll_seconds", "> 0"), ("chunk_seconds", "> 0"),
                               ("lag_seconds", ">= 0")):
            value = getattr(self, name)
            if not (value > 0 if expected == "> 0" else value >= 0):
                flag = "--" + name.replace("_", "-")
                raise ValueError(f"{flag} {value!r}: expected a number of seconds {expected}")
        if self.since is not None and self.until is not None and self.until <= self.since:
            raise ValueError(f"--until {utc(self.until).isoformat()}: expected a time after "
                             f"--since {utc(self.since).isoformat()}")


class FeedRunner:
    """One price source feeding the market-ticks topic for a set of markets."""

    def __init__(self, settings: Settings, markets: Sequence[Market], source: PriceSource,
                 options: FeedOptions, registry: CollectorRegistry | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        if not markets:
            raise ValueError("markets: expected at least one market to feed")
        self.settings = settings
        self.markets = tuple(markets)
        self.source = source
        self.options = options
        self.clock = clock
        self.metrics = FeedMetrics(registry or CollectorRegistry(), source.name)
        self.warnings = RateLimitedLog(log)
        self.positions: dict[str, Position] = {}
        self.published = 0

    async def run(self, stop: asyncio.Event) -> None:
        """Publish until ``until`` is reached or ``stop`` is set."""
        view = TopicView(self.settings, [m.key for m in self.markets])
        producer = AIOKafkaProducer(**self.settings.kafka_options(), acks="all",
                                    enable_idempotence=True, linger_ms=5)
        try:
            await view.start()
            await producer.start()
            self._resume(view)
            while not stop.is_set():
                end, watermark = await self._round(view, producer, stop)
                if self.options.until is not None and end >= self.options.until:
                    log.info("%s feed reached until=%s", self.source.name, utc(end).isoformat())
                    return
                if end < watermark:
                    continue  # still catching up
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.options.poll_seconds)
        except FeedStopped:
            log.info("%s feed stopped while waiting to retry", self.source.name)
        finally:
            await producer.stop()
            await view.stop()
            self.source.close()

    def _resume(self, view: TopicView) -> None:
        since = self.options.since
        start = self.options.grid.slot_start(
            since if since is not None else self.clock() - self.options.lag_seconds)
        for market in self.markets:
            last = view.markets[market.key].last_feed
            self.positions[market.key] = last if last is not None else (start, -1)
            log.info("%s: %s", market.key, f"resuming after {utc(last[0]).isoformat()}" if last
                     else f"starting at {utc(start).isoformat()}")

    async def _round(self, view: TopicView, producer: AIOKafkaProducer,
                     stop: asyncio.Event) -> tuple[float, float]:
        """Publish one step; returns how far it went and the watermark."""
        watermark = self.clock() - self.options.lag_seconds
        if self.options.until is not None:
            watermark = min(watermark, self.options.until)
        low = min(time for time, _ in self.positions.values())
        end = min(watermark, low + self.options.chunk_seconds)
        if end < low:
            return end, watermark
        history = await retrying(
            lambda: asyncio.to_thread(self.source.changes, self.markets, low, end),
            self.options.retry, stop, self.warnings, f"{self.source.name} spot price history",
            self.metrics.fetch_failures.inc)
        await view.poll()
        ticks: list[FeedTick] = []
        for market in self.markets:
            ticks += self._planned(market, history.get(market.key, []), end,
                                   view.markets[market.key].latest)
        ticks.sort(key=lambda t: (*position(t), t.market))
        await self._publish(producer, ticks)
        self.metrics.watermark.set(end)
        log.info("published %d ticks of %d markets up to %s", len(ticks), len(self.markets),
                 utc(end).isoformat())
        return end, watermark

    def _planned(self, market: Market, changes: list[PriceChange], end: float,
                 latest: float | None) -> list[FeedTick]:
        """The market's next ticks up to ``end``, without those older than ``latest``."""
        after = self.positions[market.key]
        if not changes or changes[0].time > after[0]:
            self.warnings.warning(f"no price {market.key}", (
                f"{market.key}: {self.source.name} lists no spot price at "
                f"{utc(after[0]).isoformat()}; the market's epochs cannot close until it "
                "does (is the instance type offered in that zone?)"))
        planned = plan(market, changes, after, end, self.options.grid)
        if planned:
            self.positions[market.key] = position(planned[-1])
        kept = [t for t in planned if latest is None or t.event_time.timestamp() >= latest]
        self.metrics.skipped.inc(len(planned) - len(kept))
        return kept

    async def _publish(self, producer: AIOKafkaProducer, ticks: list[FeedTick]) -> None:
        topic = self.settings.topics.market_ticks
        pending = []
        for tick in ticks:
            pending.append(await send_event(producer, topic, tick, "feed/aws",
                                            self.settings.market_partitions))
            self.metrics.published["price" if isinstance(tick, PriceTick)
                                   else "availability"].inc()
            self.published += 1
            if self.published == self.options.crash_after_ticks:
                await asyncio.gather(*pending)
                os.kill(os.getpid(), signal.SIGKILL)
        await asyncio.gather(*pending)

