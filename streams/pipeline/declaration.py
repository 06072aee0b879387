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

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from solver.market import Market
from solver.observation import Policy
from solver.policies import PolicySpec, make_policy
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
from streams.pipeline.stage import Stage
from streams.settings import Settings, Topics

FOREVER = "-1"
WEEK_MS = str(7 * 86_400 * 1000)


@dataclass(frozen=True, slots=True)
class TopicSpec:
    """A topic of the pipeline: its name, partition count and configuration."""

    name: str
    partitions: int
    config: dict[str, str] = field(default_factory=dict)


def topic_specs(t: Topics, market_partitions: int, job_partitions: int) -> list[TopicSpec]:
    """The pipeline's topics. Input logs are kept forever: a restarted stage rebuilds its
    state from them."""
    return [
        TopicSpec(t.market_ticks, market_partitions, {"retention.ms": FOREVER}),
        TopicSpec(t.job_events, job_partitions, {"retention.ms": FOREVER}),
        TopicSpec(t.market_boundaries, 1, {"retention.ms": FOREVER}),
        TopicSpec(t.decisions, job_partitions, {"retention.ms": WEEK_MS}),
        TopicSpec(t.forecasts, market_partitions, {"cleanup.policy": "compact"}),
        TopicSpec(t.dead_letters, 1, {"retention.ms": str(4 * int(WEEK_MS))}),
    ]


def settings_topics(settings: Settings) -> list[TopicSpec]:
    """:func:`topic_specs` of a worker's settings."""
    return topic_specs(settings.topics, settings.market_partitions, settings.job_partitions)


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


@dataclass(frozen=True, slots=True)
class Route:
    """Where a stage's outputs of type ``event`` go: the topic (a :class:`Topics` field) and
    whether every partition gets a copy."""

    event: type[Envelope]
    topic: str
    fan_out: bool = False


@dataclass(frozen=True)
class StageSpec:
    """A stage: the topic (a :class:`Topics` field) it consumes, how it is built (one per
    partition), and its routes. ``batched``: the Kafka runner reads its topic with the batched
    consumer rather than a Faust agent (the market ticks outnumber everything else)."""

    name: str
    topic: str
    make: Callable[[PipelineConfig], Stage]
    routes: tuple[Route, ...]
    batched: bool = False

    def targets(self, event: Envelope) -> list[Route]:
        return [route for route in self.routes if isinstance(event, route.event)]


PIPELINE: tuple[StageSpec, ...] = (
    StageSpec(
        "market", "market_ticks",
        lambda c: MarketStage(c.catalogue, c.slot_seconds, max_future_skew=c.max_future_skew),
        (Route(PublishedForecast, "forecasts"), Route(PublishedForecast, "market_boundaries"),
         Route(MarketBoundary, "market_boundaries")),
        batched=True),
    StageSpec(
        "coordinator", "market_boundaries",
        lambda c: EpochCoordinator(c.catalogue, c.slot_seconds),
        (Route(PublishedForecast, "job_events", fan_out=True),
         Route(EpochClosed, "job_events", fan_out=True))),
    StageSpec(
        "scheduler", "job_events",
        lambda c: PartitionScheduler(c.catalogue, c.slot_seconds, c.make_policy),
        (Route(ProvisioningDecision, "decisions"),)),
)
"""The stages, in the order data flows through them."""

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
          partitions: Mapping[str, int]) -> Iterator[Send]:
    """Every message ``handling`` writes, by ``spec``'s routes (``partitions``: each topic's
    partition count by name); rejected messages go to the dead letters."""
    for event in handling.outputs:
        yield from _routed(event, spec.name, [
            (getattr(topics, route.topic), route.fan_out) for route in spec.targets(event)],
            partitions)
    for rejected in handling.rejections:
        yield from _routed(dead_letter(rejected), spec.name,
                           [(getattr(topics, DEAD_LETTERS), False)], partitions)


def _routed(event: Envelope, stage: str, targets: Sequence[tuple[str, bool]],
            partitions: Mapping[str, int]) -> Iterator[Send]:
    value, key = dump_event(event), event.key.encode()
    headers = cloud_event_headers(event, source(stage))
    for topic, fan_out in targets:
        count = partitions[topic]
        for partition in range(count) if fan_out else (partition_for(key, count),):
            yield Send(topic, partition, key, value, headers)


def partition_counts(specs: Sequence[TopicSpec]) -> dict[str, int]:
    """Each topic's partition count, by name."""
    return {spec.name: spec.partitions for spec in specs}
