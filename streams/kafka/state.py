"""What a worker keeps of its stages on the broker: their snapshots on compacted topics, the
input partitions it replays after a snapshot, and the trimming of those inputs.

**Snapshot topics.** Each stage has one (:data:`streams.pipeline.declaration.PIPELINE`), with
as many partitions as its input topic: partition ``p`` holds the snapshots of the stage's
partition ``p``. A snapshot (:mod:`streams.pipeline.snapshot`) is written in chunks of at most
:data:`CHUNK_BYTES` keyed ``<slot>/<i>``, then a manifest keyed ``<slot>`` that lists the
chunks' offsets, the input offset the snapshot covers and its sequence number, signed like
the snapshot (its MAC, then its JSON: the MAC covers the topic, the partition and the JSON,
and is checked before any field is read). Snapshots alternate between two
slots, ``a`` and ``b``, so compaction keeps the newest two: a worker killed while writing one
leaves the other whole, and a manifest whose chunks were overwritten since is seen to be
incomplete. A worker finds the manifests by reading its partition backwards from the end, and
orders them by their sequence numbers.

**Trimming.** Once a snapshot is written, the input partition's records before the previous
snapshot (the fallback, should the newest one be unreadable) and older than the retention
margin are deleted (Kafka's DeleteRecords): the inputs hold what the snapshots do not cover,
plus the margin.
"""

from __future__ import annotations

import asyncio
import builtins
import itertools
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, RecordsToDelete

from streams.kafka.connect import retrying, start_client
from streams.pipeline.snapshot import (
    SnapshotKeys,
    SnapshotRefused,
    checked_fields,
    mac_of,
    printable,
)
from streams.settings import Settings

log = logging.getLogger(__name__)

CHUNK_BYTES = 512 * 1024
"""Largest snapshot record, well under the broker's default message size limit (1 MiB)."""
SLOTS = ("a", "b")
MANIFEST_SCAN = 16
"""Records read at once while looking for manifests backwards from a partition's end."""
FETCH_BYTES = 8 * 1024 * 1024
"""Bytes one fetch of a partition may return while replaying or reading snapshots."""
LOG_BATCH = 2000
"""Records of an input partition handed over at once while replaying it."""


MANIFEST_FIELDS = {"slot": "text", "offset": "count", "sequence": "count", "chunks": "counts",
                   "bytes": "count", "taken": "time"}
"""Each manifest field and its kind (:func:`~streams.pipeline.snapshot.checked_fields`)."""


@dataclass(frozen=True, slots=True)
class Manifest:
    """A complete snapshot's place: its slot, the input offset it covers (the stage has taken
    the records before it), its sequence number, its chunks' offsets, its size, when it was
    taken, and where the manifest itself is (``at``, -1 until written)."""

    slot: str
    offset: int
    sequence: int
    chunks: tuple[int, ...]
    bytes: int
    taken: float
    at: int = -1

    def to_wire(self, topic: str, partition: int, keys: SnapshotKeys
                ) -> builtins.bytes:  # the field ``bytes`` shadows the type here
        fields = json.dumps({"slot": self.slot, "offset": self.offset,
                             "sequence": self.sequence, "chunks": self.chunks,
                             "bytes": self.bytes, "taken": self.taken}, sort_keys=True).encode()
        return keys.sign(_signed(topic, partition, fields)).encode() + b" " + fields

    @staticmethod
    def from_record(record: ConsumerRecord, keys: SnapshotKeys, max_chunks: int,
                    max_bytes: int) -> Manifest:
        """The manifest of a record, its MAC verified before its fields are read; a
        :class:`SnapshotRefused` saying why not."""
        what = f"snapshot manifest {record.topic}[{record.partition}]@{record.offset}"
        value = record.value if isinstance(record.value, builtins.bytes) else b""
        token, _, raw = value[:64 * 1024].partition(b" ")
        keys.verify(mac_of(token, what), _signed(record.topic, record.partition, raw), what)
        fields = checked_fields(raw, MANIFEST_FIELDS, what)
        chunks = fields["chunks"]
        problem = (
            f"slot {fields['slot']!r} under key {record.key!r}"
            if fields["slot"] not in SLOTS or record.key != fields["slot"].encode() else
            f"{len(chunks):,} chunks, more than {max_chunks:,} (SPOTSCHED_SNAPSHOT_MAX_CHUNKS)"
            if len(chunks) > max_chunks else
            "chunks not in increasing order before the manifest"
            if any(b <= a for a, b in itertools.pairwise(chunks))
            or chunks[-1] >= record.offset else
            f"chunks spread over {chunks[-1] - chunks[0] + 1:,} records"
            if chunks[-1] - chunks[0] >= 2 * max_chunks else
            f"{fields['bytes']:,} bytes in {len(chunks)} chunks"
            if not len(chunks) <= fields["bytes"] <= min(len(chunks) * CHUNK_BYTES,
                                                         max_bytes) else None)
        if problem is not None:
            raise SnapshotRefused(f"{what}: {problem}")
        return Manifest(fields["slot"], fields["offset"], fields["sequence"], tuple(chunks),
                        fields["bytes"], float(fields["taken"]), record.offset)


def _signed(topic: str, partition: int, fields: builtins.bytes) -> builtins.bytes:
    """What a manifest's MAC covers: where it is, and its fields as written."""
    return f"{topic}[{partition}]\n".encode() + fields


class KafkaState:
    """The broker side of recovery: snapshots, input replay and trimming (module doc). Its
    clients start on first use; :meth:`stop` closes them."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._producer: AIOKafkaProducer | None = None
        self._admin: AIOKafkaAdminClient | None = None
        self._lookup: AIOKafkaConsumer | None = None
        self._starting = asyncio.Lock()
        self._trimmed: dict[TopicPartition, int] = {}

    async def stop(self) -> None:
        for client in (self._producer, self._lookup):
            if client is not None:
                await client.stop()
        if self._admin is not None:
            await self._admin.close()
        self._producer = self._admin = self._lookup = None

    # -- snapshots ------------------------------------------------------------------------

    async def manifests(self, topic: str, partition: int) -> list[Manifest]:
        """The newest readable manifest of each slot, the highest sequence first; one that
        cannot be read (malformed, or not signed with the workers' keys) is skipped with a
        warning."""
        keys = SnapshotKeys(self.settings.snapshot_keys())
        tp = TopicPartition(topic, partition)
        async with self._reader(tp) as consumer:
            start = (await consumer.beginning_offsets([tp]))[tp]
            high = (await consumer.end_offsets([tp]))[tp]
            found: dict[str, Manifest] = {}
            while high > start and len(found) < len(SLOTS):
                low = max(start, high - MANIFEST_SCAN)
                window: dict[str, Manifest] = {}
                for record in await _read_range(consumer, tp, low, high):
                    if record.key is not None and b"/" not in record.key:
                        try:
                            manifest = Manifest.from_record(
                                record, keys, self.settings.snapshot_max_chunks,
                                self.settings.snapshot_max_bytes)
                        except Exception as exc:  # whatever a stranger's record raises
                            log.warning("%s[%d]@%d: unreadable snapshot manifest skipped (%s)",
                                        topic, partition, record.offset,
                                        printable(str(exc)[:300]))
                            continue
                        window[manifest.slot] = manifest
                for slot, manifest in window.items():
                    found.setdefault(slot, manifest)
                high = low
        return sorted(found.values(), key=lambda m: (m.sequence, m.at), reverse=True)

    async def read_snapshot(self, topic: str, partition: int, manifest: Manifest) -> bytes:
        """The snapshot a manifest lists; :class:`SnapshotRefused` when a chunk was
        overwritten or deleted since (the snapshot is incomplete)."""
        tp = TopicPartition(topic, partition)
        if not manifest.chunks:
            raise SnapshotRefused(f"snapshot manifest {topic}[{partition}]@{manifest.at} lists "
                                  "no chunks")
        wanted = set(manifest.chunks)
        async with self._reader(tp) as consumer:
            records = {r.offset: r for r in await _read_range(
                consumer, tp, min(manifest.chunks), max(manifest.chunks) + 1, wanted)}
        parts = []
        for i, offset in enumerate(manifest.chunks):
            record = records.get(offset)
            if record is None or record.key != f"{manifest.slot}/{i}".encode() \
                    or not isinstance(record.value, bytes) or not record.value:
                raise SnapshotRefused(
                    f"snapshot {topic}[{partition}] slot {manifest.slot} at input offset "
                    f"{manifest.offset:,}: chunk {i} is no longer at offset {offset} "
                    "(overwritten by a later snapshot): incomplete")
            parts.append(record.value)
        blob = b"".join(parts)
        if len(blob) != manifest.bytes:
            raise SnapshotRefused(
                f"snapshot {topic}[{partition}] slot {manifest.slot}: {len(blob):,} bytes, "
                f"expected {manifest.bytes:,}: incomplete")
        return blob

    async def write_snapshot(self, topic: str, partition: int, blob: bytes, offset: int,
                             sequence: int, taken: float, newest: Manifest | None) -> Manifest:
        """Write snapshot number ``sequence``, covering the input before ``offset``, into the
        slot that does not hold ``newest`` (the partition's newest manifest, if any); returns
        its manifest."""
        producer = await self._started_producer()
        slot = SLOTS[1] if newest is not None and newest.slot == SLOTS[0] else SLOTS[0]
        sent = [await producer.send(topic, blob[start:start + CHUNK_BYTES],
                                    key=f"{slot}/{i}".encode(), partition=partition)
                for i, start in enumerate(range(0, len(blob), CHUNK_BYTES))]
        chunks = tuple(meta.offset for meta in await asyncio.gather(*sent))
        manifest = Manifest(slot, offset, sequence, chunks, len(blob), taken)
        wire = manifest.to_wire(topic, partition, SnapshotKeys(self.settings.snapshot_keys()))
        meta = await producer.send_and_wait(topic, wire, key=slot.encode(), partition=partition)
        return replace(manifest, at=meta.offset)

    # -- input partitions -----------------------------------------------------------------

    async def log_start(self, topic: str, partition: int) -> int:
        """The first offset the input partition still holds."""
        tp = TopicPartition(topic, partition)
        lookup = await self._started_lookup()
        return (await lookup.beginning_offsets([tp]))[tp]

    async def read_log(self, topic: str, partition: int, start: int,
                       until: int) -> AsyncIterator[list[ConsumerRecord]]:
        """The records of an input partition from ``start`` up to ``until`` (excluded), in
        batches of at most :data:`LOG_BATCH`."""
        if start >= until:
            return
        tp = TopicPartition(topic, partition)
        async with self._reader(tp) as consumer:
            consumer.seek(tp, start)
            position = start
            while position < until:
                batch = await consumer.getmany(tp, timeout_ms=1000, max_records=LOG_BATCH)
                records = [r for r in batch.get(tp, []) if r.offset < until]
                position = await consumer.position(tp)
                if records:
                    yield records

    async def trim(self, topic: str, partition: int, keep_from: int, margin_seconds: float
                   ) -> int | None:
        """Delete the input partition's records before ``keep_from`` that are older than
        ``margin_seconds`` (by their Kafka timestamp); returns the new start, if it moved."""
        tp = TopicPartition(topic, partition)
        lookup = await self._started_lookup()
        if margin_seconds > 0:
            since = int((time.time() - margin_seconds) * 1000)
            recent = (await lookup.offsets_for_times({tp: since}))[tp]
            if recent is not None:  # else nothing that recent: keep what the fallback needs
                keep_from = min(keep_from, recent.offset)
        if keep_from <= self._trimmed.get(tp, 0):
            return None
        admin = await self._started_admin()
        await retrying(lambda: admin.delete_records({tp: RecordsToDelete(keep_from)}),
                       self.settings, f"trimming {topic}[{partition}]")
        self._trimmed[tp] = keep_from
        return keep_from

    # -- clients --------------------------------------------------------------------------

    def _reader(self, tp: TopicPartition) -> _Reader:
        return _Reader(self.settings, tp)

    async def _started_producer(self) -> AIOKafkaProducer:
        timeout_ms = int(self.settings.broker_timeout_seconds * 1000)
        return await self._started("_producer", lambda: AIOKafkaProducer(
            **self.settings.kafka_options(), acks="all", enable_idempotence=True,
            request_timeout_ms=timeout_ms), "writing snapshots")

    async def _started_admin(self) -> AIOKafkaAdminClient:
        return await self._started("_admin", lambda: AIOKafkaAdminClient(
            **self.settings.kafka_options()), "trimming input topics")

    async def _started_lookup(self) -> AIOKafkaConsumer:
        return await self._started("_lookup", lambda: AIOKafkaConsumer(
            **self.settings.kafka_options(), enable_auto_commit=False),
            "looking up input offsets")

    async def _started(self, attribute: str, make: Callable[[], Any], what: str) -> Any:
        """The client kept in ``attribute``, started on first use."""
        async with self._starting:
            if getattr(self, attribute) is None:
                setattr(self, attribute, await start_client(make, self.settings, what))
        return getattr(self, attribute)


class _Reader:
    """A consumer of one partition, outside any group, for as long as a read takes."""

    def __init__(self, settings: Settings, tp: TopicPartition) -> None:
        self.settings, self.tp = settings, tp
        self._consumer: AIOKafkaConsumer | None = None

    async def __aenter__(self) -> AIOKafkaConsumer:
        self._consumer = await start_client(
            lambda: AIOKafkaConsumer(**self.settings.kafka_options(), enable_auto_commit=False,
                                     max_partition_fetch_bytes=FETCH_BYTES),
            self.settings, f"reading {self.tp.topic}[{self.tp.partition}]")
        self._consumer.assign([self.tp])
        await asyncio.sleep(0)  # lets the consumer's tasks start: stopping one that has not
        return self._consumer   # started yet raises CancelledError (aiokafka 0.14)

    async def __aexit__(self, *exc: Any) -> None:
        if self._consumer is not None:
            await self._consumer.stop()


async def _read_range(consumer: AIOKafkaConsumer, tp: TopicPartition, low: int,
                      high: int, wanted: set[int] | None = None) -> list[ConsumerRecord]:
    """The records at offsets ``low .. high - 1`` that the partition still holds (only those
    at the ``wanted`` offsets, if given)."""
    consumer.seek(tp, low)
    out: list[ConsumerRecord] = []
    while await consumer.position(tp) < high:
        batch = await consumer.getmany(tp, timeout_ms=1000)
        records = batch.get(tp, [])
        if not records and await consumer.position(tp) < high:
            end = (await consumer.end_offsets([tp]))[tp]
            if end <= await consumer.position(tp):
                break
        out.extend(r for r in records
                   if r.offset < high and (wanted is None or r.offset in wanted))
    return out
