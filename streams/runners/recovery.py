"""The stages a worker holds for the partitions of one input topic: recovered when a partition
is taken over, snapshotted as they go.

Warnings are formatted before they are logged, so that the log's rate limit
(:mod:`streams.runtime`) holds back repeats of one line, never the lines of other partitions.

A stage is a deterministic function of its partition's log, so the worker keeps, for each
partition it has owned, the stage and the next offset the stage expects. A message at that
offset is taken; one before it was taken already, its outputs delivered, and is skipped; one
after it means the partition was processed elsewhere meanwhile (a restart, a rebalance), and
the stage is recovered first (:meth:`PartitionStages.recover`):

1. from the newest base: the stage in memory, or the newest snapshot this worker can read
   (:mod:`streams.pipeline.snapshot`; a refused one is logged in one line and the other slot
   tried). Whatever reading a snapshot raises refuses it, without stopping the worker; a
   snapshot older than the one before the newest the worker knows of for the partition (by
   the signed sequence numbers of the manifests it has read and the snapshots it has
   written) is refused too: an old snapshot appended again is not restored;
2. with neither, from a fresh stage at the start of the partition's log — a rebuild from the
   log; when the log no longer starts at offset 0, what came before is missing and the log
   line says so;
3. then the log from the base up to the message is replayed, its outputs discarded (they were
   written when the messages were first processed).

Replay runs in worker threads, a batch at a time, so the worker's consumers keep polling;
the market-ticks consumer pauses a partition while it recovers
(:mod:`streams.runners.tick_consumer`).

After a batch's outputs are delivered, a stage that has taken ``snapshot_every_records``
records, or moved ``snapshot_every_epochs`` slots of event time over at least
``snapshot_min_interval_seconds``, since its last snapshot is snapshotted
(:mod:`streams.kafka.state`), and its input before the previous snapshot (and older than
``retention_margin_hours``) is trimmed. The interval holds back only a stage whose partition
lags behind its log's end: a worker catching up on a backlog passes many slots a second, and
snapshots by records; one that has caught up is snapshotted as it would be live, so it is
not left with a tail to replay. Live, the batch that makes a stage due by slots is the one
that closed a slot, and the epoch's decisions are still on their way through the worker's
other stages: its snapshot is taken ``snapshot_delay_seconds`` later, between two batches.

On a graceful stop, once the batch in flight is delivered, every stage that took records since
its last snapshot is snapshotted (:meth:`PartitionStages.snapshot_all`), so that the worker
taking its partitions over restores them and replays no tail.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime

from aiokafka import ConsumerRecord

from streams.kafka.state import KafkaState, Manifest
from streams.metrics import RecoveryMetrics
from streams.pipeline.declaration import PipelineConfig, StageSpec
from streams.pipeline.driver import Driver, Handling
from streams.pipeline.snapshot import (
    SnapshotKeys,
    SnapshotRefused,
    pickle_state,
    printable,
    restore,
    seal,
)
from streams.pipeline.stage import AnyStage, Message
from streams.pipeline.written import Written
from streams.settings import Settings

log = logging.getLogger(__name__)

WRITTEN_NAME = "written"
"""The name snapshots give the runner's :class:`~streams.pipeline.written.Written`."""


@dataclass
class _Held:
    """A partition's stage, the next offset it expects, and what is known of its snapshots."""

    driver: Driver
    next: int
    newest: Manifest | None = None
    """The partition's newest snapshot manifest on the topic (the next one takes the other
    slot)."""
    readable: Manifest | None = None
    """The newest snapshot known to restore (written or restored here): the input is kept
    from it."""
    records: int = 0
    """Records taken since the last snapshot."""
    latest: datetime | None = None
    """The latest event time taken."""
    since: int | None = None
    """The slot of the latest event time taken at the last snapshot (or of the first event
    time taken after it, when there was none)."""
    snapshotted: float = -math.inf
    """When the stage was last snapshotted (monotonic seconds)."""
    deferred: bool = False
    """Due by slots, to be snapshotted after the delay."""

    def epochs(self, slot_seconds: float) -> int:
        """Slots of event time passed since the last snapshot."""
        if self.latest is None or self.since is None:
            return 0
        return _slot(self.latest, slot_seconds) - self.since


@dataclass(frozen=True, slots=True)
class RecoveryConfig:
    """How often a stage is snapshotted, and how much input is kept beyond its snapshots."""

    every_epochs: int
    every_records: int
    min_interval_seconds: float
    delay_seconds: float
    margin_seconds: float

    @staticmethod
    def of(settings: Settings) -> RecoveryConfig:
        return RecoveryConfig(settings.snapshot_every_epochs, settings.snapshot_every_records,
                              settings.snapshot_min_interval_seconds,
                              settings.snapshot_delay_seconds,
                              settings.retention_margin_hours * 3600.0)

    def due_in(self, records: int, epochs: int, seconds: float, caught_up: bool
               ) -> float | None:
        """In how many seconds a stage that took ``records`` records spanning ``epochs`` slots
        of event time in the ``seconds`` since its last snapshot is to be snapshotted,
        ``caught_up`` or not with its partition's log; ``None`` when it is not due (module
        doc)."""
        if records >= self.every_records:
            return 0.0
        if records == 0 or epochs < self.every_epochs:
            return None
        if caught_up:
            return self.delay_seconds
        return 0.0 if seconds >= self.min_interval_seconds else None


class PartitionStages:
    """One stage per partition of ``spec``'s input topic (module doc)."""

    def __init__(self, spec: StageSpec, settings: Settings, config: PipelineConfig,
                 state: KafkaState, written: Written, environment: Mapping[str, object],
                 metrics: RecoveryMetrics, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[object]] = asyncio.sleep) -> None:
        self.name = spec.name
        self.topic = getattr(settings.topics, spec.topic)
        self.snapshots = getattr(settings.topics, spec.snapshots)
        self.make_stage: Callable[[], AnyStage] = lambda: spec.make(config, written)
        self.fingerprint = config.fingerprint(spec.depends_on)
        self.slot_seconds = config.slot_seconds
        self.cadence = RecoveryConfig.of(settings)
        self.keys = SnapshotKeys(settings.snapshot_keys())
        self.max_bytes = settings.snapshot_max_bytes
        self._known: dict[int, int] = {}
        """The highest snapshot sequence known of each partition (read or written)."""
        self.state = state
        self.environment = {**environment, WRITTEN_NAME: written}
        """The objects a snapshot names rather than holds: ``environment`` and ``written``,
        what the runner's stages write for one another (the restoring runner's own)."""
        self.metrics = metrics
        self.clock = clock
        """Seconds, for the snapshot interval."""
        self.sleep = sleep
        """Waits seconds, for the snapshot delay."""
        self._held: dict[int, _Held] = {}
        self._recovering: dict[int, asyncio.Task[None]] = {}
        self._batch = asyncio.Lock()
        self._settled = True
        """Whether every message taken had its outputs delivered (no batch was cut short)."""
        self._stopping = False
        self._later: asyncio.Task[None] | None = None
        """The snapshots deferred by the delay (module doc), once it has passed."""

    def ready(self, partition: int, offset: int) -> bool:
        """Whether the partition's stage can take the message at ``offset`` now (not while it
        is being recovered)."""
        held = self._held.get(partition)
        return held is not None and held.next >= offset and partition not in self._recovering

    def process(self, message: Message) -> Handling | None:
        """The message through its partition's stage; ``None`` when the stage took it
        already."""
        assert message.partition is not None and message.offset is not None
        held = self._held[message.partition]
        if message.offset < held.next:
            return None
        if message.offset != held.next:
            raise RuntimeError(f"{self.topic}[{message.partition}]: offset {message.offset} "
                               f"before the stage was recovered to it (at {held.next})")
        handling = held.driver.process(message)
        self._took(held, handling)
        return handling

    async def recover(self, partition: int, offset: int) -> None:
        """Bring the partition's stage to ``offset`` (module doc); concurrent calls share the
        work."""
        while not self.ready(partition, offset):
            task = self._recovering.get(partition)
            if task is None:
                task = self._recovering[partition] = asyncio.ensure_future(
                    self._recover(partition, offset))
            await task

    async def checkpoint(self, log_ends: Mapping[int, int | None]) -> None:
        """Snapshot the stages due (call once their outputs are delivered); none once
        :meth:`snapshot_all` has run. ``log_ends``: the next offset of each partition's log,
        where the consumer knows it (a stage that reached it has caught up)."""
        if self._stopping:
            return
        now = self.clock()

        def due_now(partition: int, held: _Held) -> bool:
            end = log_ends.get(partition)
            due_in = self.cadence.due_in(held.records, held.epochs(self.slot_seconds),
                                         now - held.snapshotted,
                                         caught_up=end is not None and held.next >= end)
            held.deferred = held.deferred or (due_in is not None and due_in > 0)
            return due_in == 0

        await self._snapshot_where(due_now)
        if self._later is None and any(held.deferred for held in self._held.values()):
            self._later = asyncio.ensure_future(self._snapshot_deferred())

    async def _snapshot_deferred(self) -> None:
        """Once the delay has passed, between two batches: snapshot the stages deferred."""
        await self.sleep(self.cadence.delay_seconds)
        async with self._batch:
            self._later = None
            if self._settled and not self._stopping:
                await self._snapshot_where(lambda _, held: held.deferred)

    @contextlib.asynccontextmanager
    async def batch(self) -> AsyncIterator[None]:
        """Wrap a batch, from its first message until its outputs are delivered and the stages
        checkpointed: :meth:`snapshot_all` waits for it, and skips stages whose batch was
        cut short."""
        async with self._batch:
            self._settled = False
            yield
            self._settled = True

    async def snapshot_all(self) -> None:
        """Snapshot every stage that took records since its last snapshot (a graceful stop),
        once the batch in flight is delivered."""
        async with self._batch:
            self._stopping = True
            if self._later is not None:  # waiting for the delay or for this lock
                self._later.cancel()
            if not self._settled:
                log.warning(f"{self.topic}: not snapshotted on stop: a batch was cut short "
                            "before its outputs were delivered (its records will be replayed)")
                return
            written = await self._snapshot_where(lambda _, held: held.records > 0)
            if written:
                log.info("%s: snapshotted the %s stage of partitions %s on stop", self.snapshots,
                         self.name, written)

    async def _snapshot_where(self, due: Callable[[int, _Held], bool]) -> list[int]:
        """Snapshot the partitions ``due`` (not being recovered); returns those written."""
        written = []
        for partition, held in list(self._held.items()):
            if due(partition, held) and partition not in self._recovering:
                try:
                    await self._snapshot(partition, held)
                    written.append(partition)
                except Exception as exc:  # the stage goes on; the next checkpoint tries again
                    self.metrics.failed(self.name)
                    log.error(f"{self.snapshots}[{partition}]: snapshot failed: "
                              f"{type(exc).__name__}: {exc}")
        return written

    # -- recovery -------------------------------------------------------------------------

    async def _recover(self, partition: int, target: int) -> None:
        began = time.monotonic()
        where = f"{self.topic}[{partition}]"
        self.metrics.restore_started(self.name, partition)
        held = self._held.pop(partition, None)  # out of sight while it is replayed
        try:
            base, source, described, manifests = await self._base(partition, held, target)
            start = await self.state.log_start(self.topic, partition)
            if base is None:
                base = _Held(Driver(self.make_stage()), start)
                if target <= start:
                    log.info("%s: a new %s stage at offset %d", where, self.name, start)
                else:
                    missing = (f"; the log starts at offset {start:,}: what came before is "
                               "missing") if start > 0 else ""
                    log.warning(f"{where}: no snapshot to restore, rebuilding the {self.name} "
                                f"stage from the log{missing}")
            elif base.next < start:
                log.warning(f"{where}: the log no longer holds offsets {base.next}..{start - 1} "
                            f"after {described}; they are missing from the {self.name} stage's "
                            "state")
                base.next = start
            if manifests:
                base.newest = manifests[0]
            tail = max(0, target - base.next)
            if tail or source != "log":
                log.info("%s: restoring the %s stage from %s, replaying %d records "
                         "(offsets %d..%d)", where, self.name, described, tail, base.next,
                         target - 1)
            replayed = await self._replay(partition, base, target, tail)
            self._held[partition] = base
            if tail or source != "log":
                self.metrics.restored(self.name, source)
                log.info("%s: restored the %s stage in %.1f s from %s, %d records replayed; "
                         "next offset %d", where, self.name, time.monotonic() - began,
                         described, replayed, base.next)
        finally:
            self._recovering.pop(partition, None)
            self.metrics.restore_ended(self.name, partition)

    async def _base(self, partition: int, held: _Held | None, target: int
                    ) -> tuple[_Held | None, str, str, list[Manifest]]:
        """Where to start: the stage in memory (``held``), or the newest readable snapshot
        beyond it."""
        base = held if held is not None and held.next <= target else None
        manifests = await self.state.manifests(self.snapshots, partition)
        known = self._known[partition] = max(
            [self._known.get(partition, -1), *(m.sequence for m in manifests)])
        for manifest in manifests:
            if base is not None and manifest.offset <= base.next:
                break
            try:
                if manifest.sequence < known - 1:
                    raise SnapshotRefused(
                        f"snapshot of {self.name}[{partition}] at offset {manifest.offset:,}: "
                        f"number {manifest.sequence}, older than the one before the newest "
                        f"known for the partition (number {known})")
                blob = await self.state.read_snapshot(self.snapshots, partition, manifest)
                header, stage = await asyncio.to_thread(
                    restore, blob, stage=self.name, partition=partition,
                    settings=self.fingerprint, environment=self.environment, keys=self.keys,
                    max_bytes=self.max_bytes, offset=manifest.offset,
                    sequence=manifest.sequence)
            except Exception as exc:  # whatever a stranger's snapshot makes reading it raise
                self.metrics.refused(self.name)
                reason = str(exc) if isinstance(exc, SnapshotRefused) else printable(
                    f"snapshot at offset {manifest.offset:,}: unreadable "
                    f"({type(exc).__name__}: {str(exc)[:300]})")
                log.warning(f"{self.snapshots}[{partition}]: snapshot refused, {reason}")
                continue
            self.metrics.snapshot_known(self.name, partition, header.taken)
            described = (f"the snapshot at offset {header.offset:,} ({manifest.bytes:,} bytes, "
                         f"taken {time.time() - header.taken:,.0f} s ago)")
            return (_Held(Driver(stage), header.offset, readable=manifest), "snapshot",
                    described, manifests)
        if base is not None:
            return base, "memory", f"the stage in memory at offset {base.next:,}", manifests
        return None, "log", "the log", manifests

    async def _replay(self, partition: int, held: _Held, target: int, tail: int) -> int:
        replayed = 0
        self.metrics.restore_progress(self.name, partition, tail)
        async for records in self.state.read_log(self.topic, partition, held.next, target):
            messages = [record_message(r) for r in records if r.offset >= held.next]
            await asyncio.to_thread(self._take_all, held, messages)
            replayed += len(messages)
            self.metrics.restore_progress(self.name, partition, max(0, target - held.next),
                                          len(messages))
        return replayed

    def _take_all(self, held: _Held, messages: list[Message]) -> None:
        for message in messages:
            self._took(held, held.driver.process(message))

    def _took(self, held: _Held, handling: Handling) -> None:
        """Count a message taken (per message: the epochs are worked out when asked)."""
        held.next += 1
        held.records += 1
        event = handling.event
        if event is not None and (held.latest is None or event.event_time > held.latest):
            if held.since is None:
                held.since = _slot(event.event_time, self.slot_seconds)
            held.latest = event.event_time

    # -- snapshots ------------------------------------------------------------------------

    async def _snapshot(self, partition: int, held: _Held) -> None:
        began = time.perf_counter()
        pickled = pickle_state(held.driver.stage, self.environment)
        offset, taken = held.next, time.time()
        newest = -1 if held.newest is None else held.newest.sequence
        sequence = self._known[partition] = max(self._known.get(partition, -1), newest) + 1
        held.records = 0
        held.since = None if held.latest is None else _slot(held.latest, self.slot_seconds)
        held.deferred = False
        held.snapshotted = self.clock()
        blob = await asyncio.to_thread(seal, pickled, stage=self.name, partition=partition,
                                       offset=offset, sequence=sequence,
                                       settings=self.fingerprint, taken=taken, keys=self.keys)
        manifest = await self.state.write_snapshot(self.snapshots, partition, blob, offset,
                                                   sequence, taken, held.newest)
        previous, held.newest, held.readable = held.readable, manifest, manifest
        self.metrics.snapshot_written(self.name, partition, taken, len(blob),
                                      time.perf_counter() - began)
        log.debug("%s[%d]: snapshot at offset %d, %d bytes, in %.3f s", self.snapshots,
                  partition, offset, len(blob), time.perf_counter() - began)
        if previous is not None:
            start = await self.state.trim(self.topic, partition, previous.offset,
                                          self.cadence.margin_seconds)
            if start is not None:
                log.debug("%s[%d]: trimmed before offset %d", self.topic, partition, start)


def _slot(time: datetime, slot_seconds: float) -> int:
    return math.floor(time.timestamp() / slot_seconds)


def record_message(record: ConsumerRecord) -> Message:
    """An aiokafka record as a stage's message (Kafka timestamps are in milliseconds)."""
    return Message(record.topic, record.value, record.key, record.partition, record.offset,
                   record.timestamp / 1000.0 if record.timestamp else None)
