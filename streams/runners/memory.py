"""The in-memory runner: the pipeline declaration (:mod:`streams.pipeline.declaration`) over
in-memory topics.

Every message is bytes with a key and headers, partitioned by Kafka's partitioner and numbered
by offset; each stage is fed its partition through a :class:`~streams.pipeline.driver.Driver`
exactly as the Kafka runner does, and its outputs go round as bytes to the next stage. Tests,
``run_in_memory`` and the benchmarks run the pipeline without a broker with it, poison
included.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable, Sequence
from typing import Protocol, TypeGuard, TypeVar

from solver.market import Market
from solver.policies import PolicySpec
from streams.contract import (
    DeadLetter,
    Envelope,
    JobSubmitted,
    ProvisioningDecision,
    PublishedForecast,
    dump_event,
    parse_event,
)
from streams.contract.headers import Headers
from streams.kafka.partitions import partition_for
from streams.pipeline.declaration import (
    PIPELINE,
    PipelineConfig,
    StageSpec,
    partition_counts,
    sends,
    topic_specs,
)
from streams.pipeline.driver import Batch, Driver
from streams.pipeline.stage import Fault, Message
from streams.pipeline.trace_events import ReplayEvent
from streams.pipeline.written import Written
from streams.settings import Topics

E = TypeVar("E", bound=Envelope)


class Observer(Protocol):
    """Watches what messages made a stage do (e.g. :class:`streams.metrics.PipelineMetrics`),
    told once per batch of messages."""

    def observe(self, batch: Batch) -> None: ...


class MemoryPipeline:
    """Every stage of :data:`~streams.pipeline.declaration.PIPELINE`, one per partition, and
    what the stages wrote to the topics no stage reads (decisions, forecasts, dead letters),
    decoded, with their headers. What the stages write for one another is kept in
    :attr:`between_stages`, this pipeline's own."""

    def __init__(self, config: PipelineConfig, job_partitions: int = 1,
                 market_partitions: int = 1, topics: Topics | None = None,
                 observers: Sequence[Observer] = ()) -> None:
        self.topics = topics or Topics()
        self.partitions = partition_counts(
            topic_specs(self.topics, market_partitions, job_partitions))
        self.observers = tuple(observers)
        self.stages: dict[str, StageSpec] = {getattr(self.topics, s.topic): s for s in PIPELINE}
        self.between_stages = Written()
        self.drivers: dict[tuple[str, int], Driver] = {
            (topic, p): Driver(spec.make(config, self.between_stages))
            for topic, spec in self.stages.items() for p in range(self.partitions[topic])}
        self._written: defaultdict[str, list[Envelope]] = defaultdict(list)
        self._unread: defaultdict[str, list[bytes]] = defaultdict(list)
        self.headers: defaultdict[str, list[Headers]] = defaultdict(list)
        self.faults: list[Fault] = []
        self._offsets: defaultdict[tuple[str, int], int] = defaultdict(int)
        self._queue: deque[Message] = deque()

    def send(self, topic: str, value: bytes | None, key: bytes | None = None,
             partition: int | None = None) -> None:
        """Publish a message to ``topic`` (to the partition its key maps to unless given; a
        ``None`` value is a tombstone) and run the stages until every message they published
        was handled."""
        if partition is None:
            partition = partition_for(key or b"", self.partitions[topic])
        self._enqueue(topic, partition, key, value)
        while self._queue:
            message = self._queue.popleft()
            assert message.partition is not None
            spec = self.stages[message.topic]
            handling = self.drivers[message.topic, message.partition].process(message)
            if self.observers:
                batch = Batch(spec.name, message.topic)
                batch.add(message, handling)
                for observer in self.observers:
                    observer.observe(batch)
            self.faults.extend(handling.faults)
            if not (handling.outputs or handling.rejections):
                continue
            for out in sends(spec, handling, self.topics, self.partitions,
                                   self.between_stages):
                self._enqueue(out.topic, out.partition, out.key, out.value)
                self.headers[out.topic].append(out.headers)
                if out.topic not in self.stages:
                    self._unread[out.topic].append(out.value)

    def _enqueue(self, topic: str, partition: int, key: bytes | None,
                 value: bytes | None) -> None:
        if topic in self.stages:
            offset = self._offsets[topic, partition]
            self._offsets[topic, partition] += 1
            self._queue.append(Message(topic, value, key, partition, offset))

    @property
    def written(self) -> defaultdict[str, list[Envelope]]:
        """The events written to each topic no stage reads, decoded when first looked at (as a
        consumer of the topic would: the Kafka runner does not decode what it writes)."""
        for topic, values in self._unread.items():
            self._written[topic].extend(map(parse_event, values))
            values.clear()
        return self._written

    @property
    def decisions(self) -> list[ProvisioningDecision]:
        return self._written_as(self.topics.decisions, ProvisioningDecision)

    @property
    def forecasts(self) -> list[PublishedForecast]:
        return self._written_as(self.topics.forecasts, PublishedForecast)

    @property
    def dead_letters(self) -> list[DeadLetter]:
        """The dead letters written so far (a consumer may clear the list)."""
        return self._written_as(self.topics.dead_letters, DeadLetter)

    def _written_as(self, topic: str, kind: type[E]) -> list[E]:
        """The list of events written to ``topic`` itself, each checked to be a ``kind``."""
        written = self.written[topic]
        if not _all_of(written, kind):
            raise TypeError(f"topic {topic}: expected only {kind.__name__} events")
        return written


def run_in_memory(
    events: Iterable[ReplayEvent],
    catalogue: Sequence[Market],
    slot_seconds: float,
    policy: PolicySpec | str,
    partitions: int = 1,
    market_partitions: int = 1,
) -> list[ProvisioningDecision]:
    """All decisions of a ``partitions``-way scheduler fed ``events`` in order, through the
    pipeline on in-memory topics."""
    pipeline = MemoryPipeline(
        PipelineConfig(tuple(catalogue), slot_seconds, _spec(policy)), partitions,
        market_partitions)
    for event in events:
        topic = (pipeline.topics.job_events if isinstance(event, JobSubmitted)
                 else pipeline.topics.market_ticks)
        pipeline.send(topic, dump_event(event), event.key.encode())
    return pipeline.decisions


def _spec(policy: PolicySpec | str) -> PolicySpec:
    return policy if isinstance(policy, PolicySpec) else PolicySpec.parse(policy)


def _all_of(events: list[Envelope], kind: type[E]) -> TypeGuard[list[E]]:
    return all(isinstance(event, kind) for event in events)
