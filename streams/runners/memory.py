"""The worker's stages wired as on Kafka, over in-memory topics.

Every message is bytes with a key, partitioned by Kafka's partitioner and numbered by offset;
each stage is fed its partition through a :class:`~streams.pipeline.driver.Driver`, exactly as
the worker does, and its outputs go round as bytes to the next stage. Tests and
``run_in_memory`` use it to run the pipeline without a broker, poison included.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable, Sequence

from solver.market import Market
from solver.observation import Policy
from streams.contract.events import (
    DeadLetter,
    EpochClosed,
    MarketBoundary,
    MarketForecast,
    ProvisioningDecision,
    dump_event,
)
from streams.pipeline.coordinator import EpochCoordinator
from streams.pipeline.driver import Driver, Outcome, dead_letter
from streams.pipeline.market_stage import DEFAULT_MAX_FUTURE_SKEW_SECONDS, MarketStage
from streams.pipeline.scheduler import PartitionScheduler
from streams.pipeline.stage import Fault, Message
from streams.replay import partition_for
from streams.settings import Topics


class MemoryPipeline:
    """Market stages, one coordinator and schedulers, with what they published."""

    def __init__(
        self,
        catalogue: Sequence[Market],
        slot_seconds: float,
        policy_factory: Callable[[], Policy],
        job_partitions: int = 1,
        market_partitions: int = 1,
        topics: Topics | None = None,
        max_future_skew: float = DEFAULT_MAX_FUTURE_SKEW_SECONDS,
    ) -> None:
        self.topics = topics or Topics()
        self.partitions = {self.topics.market_ticks: market_partitions,
                           self.topics.market_boundaries: 1,
                           self.topics.job_events: job_partitions}
        self.drivers: dict[tuple[str, int], Driver] = {}
        for p in range(market_partitions):
            self.drivers[self.topics.market_ticks, p] = Driver(
                MarketStage(catalogue, slot_seconds, max_future_skew=max_future_skew))
        self.drivers[self.topics.market_boundaries, 0] = Driver(
            EpochCoordinator(catalogue, slot_seconds))
        for p in range(job_partitions):
            self.drivers[self.topics.job_events, p] = Driver(
                PartitionScheduler(catalogue, slot_seconds, policy_factory))
        self.decisions: list[ProvisioningDecision] = []
        self.forecasts: list[MarketForecast] = []
        self.dead_letters: list[DeadLetter] = []
        self.faults: list[Fault] = []
        self._offsets: defaultdict[tuple[str, int], int] = defaultdict(int)
        self._queue: deque[Message] = deque()

    def send(self, topic: str, value: bytes, key: bytes | None = None,
             partition: int | None = None) -> None:
        """Publish a message to ``topic`` (to the partition its key maps to unless given) and
        run the stages until every message they published was handled."""
        self._publish(topic, value, key, partition)
        while self._queue:
            message = self._queue.popleft()
            assert message.partition is not None
            self._route(self.drivers[message.topic, message.partition].process(message))

    def _publish(self, topic: str, value: bytes, key: bytes | None,
                 partition: int | None) -> None:
        if partition is None:
            partition = partition_for(key or b"", self.partitions[topic])
        offset = self._offsets[topic, partition]
        self._offsets[topic, partition] += 1
        self._queue.append(Message(topic, value, key, partition, offset))

    def _route(self, outcome: Outcome) -> None:
        self.dead_letters.extend(dead_letter(r) for r in outcome.rejections)
        self.faults.extend(outcome.faults)
        for out in outcome.outputs:
            value, key = dump_event(out), out.key.encode()
            if isinstance(out, MarketBoundary):
                self._publish(self.topics.market_boundaries, value, key, 0)
            elif isinstance(out, EpochClosed):
                for partition in range(self.partitions[self.topics.job_events]):
                    self._publish(self.topics.job_events, value, key, partition)
            elif isinstance(out, MarketForecast):
                self.forecasts.append(out)
            elif isinstance(out, ProvisioningDecision):
                self.decisions.append(out)
