"""The pipeline, declared once: its topics, its stages, which topic feeds which stage, where
each output goes and how it is keyed and partitioned. The Kafka runner
(:mod:`streams.runners.kafka`) and the in-memory runner (:mod:`streams.runners.memory`)
both execute this declaration; neither wires a stage of its own.

::

    market-ticks ──▶ market stage ──┬─▶ forecasts (by market)
     (by market)                    └─▶ market-boundaries (forecast, then boundary report)
    market-boundaries ──▶ coordinator ──▶ job-events, every partition
                                          (the boundary's forecasts, then the epoch marker)
    job-events ──▶ scheduler ──▶ decisions (by job)
     (by job)
    every stage: a message it cannot take ──▶ dead-letters

An output goes to the partition Kafka's default partitioner picks for its key (the market, the
job id, the epoch), or with ``fan_out`` to every partition of its topic. Every message carries
its event's CloudEvents headers, with the stage as ``ce_source``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from solver.market import Market
from solver.policies import PolicySpec, make_policy
from solver.policies.protocol import Policy
from streams.contract import (
    Envelope,
    EpochClosed,
    MarketBoundary,
    ProvisioningDecision,
    PublishedForecast,
    cloud_event_headers,
    dump_event,
    source,
)
from streams.contract.headers import Headers
from streams.kafka.partitions import partition_for
from streams.pipeline.coordinator import EpochCoordinator
from streams.pipeline.driver import Handling, dead_letter
from streams.pipeline.market_stage import DEFAULT_MAX_FUTURE_SKEW_SECONDS, MarketStage
from streams.pipeline.scheduler import PartitionScheduler
from streams.pipeline.stage import AnyStage, Relayed, encoded
from streams.pipeline.written import Written
from streams.settings import Settings, Topics

FOREVER = -1
WEEK_MS = 7 * 86_400 * 1000
INPUT_SEGMENT_BYTES = 64 * 1024 * 1024
"""Segment size of the input topics: trimmed records leave the disk a whole segment at a time."""
SNAPSHOT_TOPIC_CONFIG = {
    "cleanup.policy": "compact", "segment.bytes": str(16 * 1024 * 1024),
    "segment.ms": str(86_400 * 1000), "min.cleanable.dirty.ratio": "0.5"}
"""Snapshot topics keep the newest record of each key; a segment rolls at 16 MiB or a day, so
the snapshots replaced are compacted away."""


@dataclass(frozen=True, slots=True)
class TopicSpec:
    """A topic of the pipeline: its name, partition count and configuration."""

    name: str
    partitions: int
    config: dict[str, str] = field(default_factory=dict)


def topic_specs(t: Topics, market_partitions: int, job_partitions: int,
                input_retention_ms: int = FOREVER) -> list[TopicSpec]:
    """The pipeline's topics. The inputs of the stages are trimmed as their snapshots cover
    them (:mod:`streams.runners.recovery`), and bounded by ``input_retention_ms`` whatever
    happens; each stage's snapshots have a compacted topic partitioned like its input."""
    inputs = {"retention.ms": str(input_retention_ms),
              "segment.bytes": str(INPUT_SEGMENT_BYTES)}
    return [
        TopicSpec(t.market_ticks, market_partitions, inputs),
        TopicSpec(t.job_events, job_partitions, inputs),
        TopicSpec(t.market_boundaries, 1, inputs),
        TopicSpec(t.decisions, job_partitions, {"retention.ms": str(WEEK_MS)}),
        TopicSpec(t.forecasts, market_partitions, {"cleanup.policy": "compact"}),
        TopicSpec(t.dead_letters, 1, {"retention.ms": str(4 * WEEK_MS)}),
        TopicSpec(t.market_snapshots, market_partitions, SNAPSHOT_TOPIC_CONFIG),
        TopicSpec(t.coordinator_snapshots, 1, SNAPSHOT_TOPIC_CONFIG),
        TopicSpec(t.scheduler_snapshots, job_partitions, SNAPSHOT_TOPIC_CONFIG),
    ]


def settings_topics(settings: Settings) -> list[TopicSpec]:
    """:func:`topic_specs` of a worker's settings."""
    return topic_specs(settings.topics, settings.market_partitions, settings.job_partitions,
                       round(settings.input_retention_hours * 3_600_000))


@dataclass(frozen=True)
class PipelineConfig:
    """What the stages are built from: the catalogue, the slot length, the policy (its spec;
    ``build`` makes one, the registry's :func:`~solver.policies.make_policy` but in tests, and
    ``timed`` wraps it, e.g. to observe its solve time) and the tick skew allowed."""

    catalogue: tuple[Market, ...]
    slot_seconds: float
    policy: PolicySpec
    max_future_skew: float = DEFAULT_MAX_FUTURE_SKEW_SECONDS
    build: Callable[[PolicySpec], Policy] = make_policy
    timed: Callable[[Policy], Policy] = lambda policy: policy

    def make_policy(self) -> Policy:
        return self.timed(self.build(self.policy))

    def fingerprint(self, fields: Sequence[str]) -> str:
        """A digest of the configuration ``fields`` a stage is built from: a snapshot of the
        stage taken under another one is refused (:mod:`streams.pipeline.snapshot`)."""
        described = {name: self._described(name) for name in sorted(fields)}
        return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()[:16]

    def _described(self, name: str) -> object:
        value = getattr(self, name)
        if name == "catalogue":
            return [[m.key, m.on_demand_price] for m in value]
        return str(value) if name == "policy" else value


@dataclass(frozen=True, slots=True)
class Route:
    """Where a stage's outputs of type ``event`` go: the topic (a :class:`Topics` field) and
    whether every partition gets a copy."""

    event: type[Envelope]
    topic: str
    fan_out: bool = False


StageFactory = Callable[[PipelineConfig, Written], AnyStage]
"""Builds the stage of one partition from the configuration and what the runner's stages
write for one another (the runner's :class:`~streams.pipeline.written.Written`)."""


def market_stage(config: PipelineConfig, written: Written) -> MarketStage:
    """The market stage of a market-ticks partition: the catalogue's slots cut from the ticks,
    held to the configured skew; the outlooks it makes are remembered in ``written``."""
    return MarketStage(config.catalogue, config.slot_seconds,
                       max_future_skew=config.max_future_skew, written=written)


def coordinator_stage(config: PipelineConfig, written: Written) -> EpochCoordinator:
    """The epoch coordinator of the catalogue, reading back the forecasts and boundary reports
    the market stages wrote to ``written``."""
    return EpochCoordinator(config.catalogue, config.slot_seconds, written=written)


def scheduler_stage(config: PipelineConfig, written: Written) -> PartitionScheduler:
    """The scheduler of a job-events partition, its engine driven by the configured policy
    (built when its first epoch comes), planning on the outlooks in ``written``."""
    return PartitionScheduler(config.catalogue, config.slot_seconds, config.make_policy,
                              written=written)


@dataclass(frozen=True)
class StageSpec:
    """A stage: the topic (a :class:`Topics` field) it consumes, its factory (one stage per
    partition), its routes, the topic of its snapshots (a :class:`Topics` field, one
    partition per partition of its input) and the configuration its state depends on.
    ``batched``: the Kafka runner reads its topic with the batched consumer rather than a
    Faust agent (the market ticks outnumber everything else)."""

    name: str
    topic: str
    make: StageFactory
    routes: tuple[Route, ...]
    snapshots: str
    depends_on: tuple[str, ...]
    """The :class:`PipelineConfig` fields its state depends on: changing one makes its
    snapshots unusable."""
    batched: bool = False

    def targets(self, event: Envelope) -> list[Route]:
        return [route for route in self.routes if isinstance(event, route.event)]


PIPELINE: tuple[StageSpec, ...] = (
    StageSpec(
        "market", "market_ticks", market_stage,
        (Route(PublishedForecast, "forecasts"), Route(PublishedForecast, "market_boundaries"),
         Route(MarketBoundary, "market_boundaries")),
        "market_snapshots", ("catalogue", "slot_seconds", "max_future_skew"), batched=True),
    StageSpec(
        "coordinator", "market_boundaries", coordinator_stage,
        (Route(PublishedForecast, "job_events", fan_out=True),
         Route(EpochClosed, "job_events", fan_out=True)),
        "coordinator_snapshots", ("catalogue", "slot_seconds")),
    StageSpec(
        "scheduler", "job_events", scheduler_stage,
        (Route(ProvisioningDecision, "decisions"),), "scheduler_snapshots",
        ("catalogue", "slot_seconds", "policy")),
)
"""The stages, in the order data flows through them."""

READ_BY_STAGES = frozenset(spec.topic for spec in PIPELINE)
"""The :class:`Topics` fields of the topics a stage reads: what a stage encodes for one of them
is remembered (:mod:`streams.pipeline.written`), for the stages of the same runner to read
back without decoding."""

DEAD_LETTERS = "dead_letters"
"""The :class:`Topics` field of the topic every rejected message goes to."""


@dataclass(frozen=True, slots=True)
class Send:
    """One message to write: topic, partition, key, value and headers."""

    topic: str
    partition: int
    key: bytes
    value: bytes
    headers: Headers


def sends(spec: StageSpec, handling: Handling, topics: Topics,
          partitions: Mapping[str, int], written: Written) -> Iterator[Send]:
    """Every message ``handling`` writes, by ``spec``'s routes (``partitions``: each topic's
    partition count by name); rejected messages go to the dead letters. What it encodes for a
    topic a stage reads is put in ``written``, the runner's."""
    for output in handling.outputs:
        event = output.event if isinstance(output, Relayed) else output
        routes = spec.targets(event)
        value = encoded(output)
        if output is event and any(route.topic in READ_BY_STAGES for route in routes):
            written.events.put(value, event)
        yield from _routed(event, value, spec.name, [
            (getattr(topics, route.topic), route.fan_out) for route in routes], partitions)
    for rejected in handling.rejections:
        letter = dead_letter(rejected)
        yield from _routed(letter, dump_event(letter), spec.name,
                           [(getattr(topics, DEAD_LETTERS), False)], partitions)


def _routed(event: Envelope, value: bytes, stage: str, targets: Sequence[tuple[str, bool]],
            partitions: Mapping[str, int]) -> Iterator[Send]:
    key = event.key.encode()
    headers = cloud_event_headers(event, source(stage))
    for topic, fan_out in targets:
        count = partitions[topic]
        for partition in range(count) if fan_out else (partition_for(key, count),):
            yield Send(topic, partition, key, value, headers)


def partition_counts(specs: Sequence[TopicSpec]) -> dict[str, int]:
    """Each topic's partition count, by name."""
    return {spec.name: spec.partitions for spec in specs}
