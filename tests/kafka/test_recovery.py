"""Recovery on a real broker: snapshots written, cut short, corrupted and restored; workers
killed and replaced; the decisions always those of the uninterrupted in-process run."""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import pickle
import re
import signal
import zlib
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer, TopicPartition

from solver.synthetic import SyntheticMarketSpec, synthetic_ticks
from streams.contract import dump_event
from streams.kafka.clients import publish_replay
from streams.kafka.state import CHUNK_BYTES, KafkaState, Manifest
from streams.pipeline.declaration import PIPELINE
from streams.pipeline.snapshot import SnapshotKeys, SnapshotRefused, read_header, seal
from streams.settings import Settings
from tests.kafka.pipeline_harness import (
    Pipeline,
    synthetic_events,
    synthetic_expectation,
    wait_for,
)
from tests.kafka_fixture import TopicFactory
from tests.streams.snapshot_runs import RunsACommand

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

SPEC = SyntheticMarketSpec(seed=7, n_markets=3, days=8)
N_JOBS = 12
SNAPSHOTS = {"snapshot_every_epochs": 3, "snapshot_min_interval_seconds": 0}
"""Snapshots every few slots, however fast the worker passes them."""


def snapshot_topics(pipeline: Pipeline) -> dict[str, tuple[str, int]]:
    """Each stage's snapshot topic and its partition count."""
    return {spec.name: (getattr(pipeline.topics, spec.snapshots), count)
            for spec, count in stage_partitions(pipeline)}


def stage_partitions(pipeline: Pipeline) -> list[tuple]:
    counts = {"market_ticks": pipeline.market_partitions, "market_boundaries": 1,
              "job_events": pipeline.job_partitions}
    return [(spec, counts[spec.topic]) for spec in PIPELINE]


async def newest_manifests(settings: Settings, topic: str, partitions: int
                           ) -> list[list[Manifest]]:
    state = KafkaState(settings)
    try:
        return [await state.manifests(topic, p) for p in range(partitions)]
    finally:
        await state.stop()


async def unsnapshotted(settings: Settings, pipeline: Pipeline) -> list[str]:
    """The stage partitions that took records and have no snapshot yet."""
    from aiokafka import AIOKafkaConsumer

    state = KafkaState(settings)
    consumer = AIOKafkaConsumer(**settings.kafka_options())
    await consumer.start()
    missing = []
    try:
        for spec, count in stage_partitions(pipeline):
            tps = [TopicPartition(getattr(pipeline.topics, spec.topic), p) for p in range(count)]
            for tp, end in (await consumer.end_offsets(tps)).items():
                snapshots = getattr(pipeline.topics, spec.snapshots)
                if end and not await state.manifests(snapshots, tp.partition):
                    missing.append(f"{spec.name}[{tp.partition}]")
    finally:
        await consumer.stop()
        await state.stop()
    return missing


def every_partition_snapshotted(pipeline: Pipeline) -> bool:
    return not asyncio.run(unsnapshotted(pipeline.settings, pipeline))


def run_then_kill(pipeline: Pipeline, events: list, share: float = 0.6) -> None:
    """One worker takes the first ``share`` of the events until every stage partition has a
    snapshot, and is killed (SIGKILL)."""
    worker = pipeline.start_worker()
    pipeline.wait_until_joined(worker)
    asyncio.run(publish_replay(pipeline.settings, iter(events[:math.ceil(len(events) * share)])))
    wait_for(lambda: every_partition_snapshotted(pipeline), bool, timeout=180)
    wait_for(pipeline.decisions, lambda ds: len(ds) >= 20)
    worker.send_signal(signal.SIGKILL)
    worker.wait(timeout=30)


def assert_no_conflicting_decisions(pipeline: Pipeline) -> None:
    versions: dict[str, set[bytes]] = {}
    for decision in pipeline.decisions():
        versions.setdefault(decision.idempotency_key, set()).add(dump_event(decision))
    assert all(len(v) == 1 for v in versions.values())


async def log_starts(settings: Settings, topic: str, partitions: int) -> list[int]:
    state = KafkaState(settings)
    try:
        return [await state.log_start(topic, p) for p in range(partitions)]
    finally:
        await state.stop()


def test_a_killed_worker_is_restored_from_snapshots_and_decides_as_in_process(
        pipelines, tmp_path):
    catalogue = [t.market for t in synthetic_ticks(SPEC)]
    pipeline = pipelines(catalogue, job_partitions=2,
                         options={**SNAPSHOTS, "retention_margin_hours": 0})
    expected = synthetic_expectation(pipeline, tmp_path, SPEC, N_JOBS)
    events = synthetic_events(SPEC, N_JOBS)
    run_then_kill(pipeline, events)
    asyncio.run(publish_replay(pipeline.settings, iter(events[math.ceil(len(events) * 0.6):])))
    pipeline.wait_until_joined(pipeline.start_worker())
    rows = pipeline.wait_for_rows(expected)
    assert sorted(set(rows)) == expected
    assert_no_conflicting_decisions(pipeline)
    log = pipeline.worker_log(1)
    for stage in ("market", "coordinator", "scheduler"):
        assert re.search(rf"restored the {stage} stage in [\d.]+ s from the snapshot at offset",
                         log), log[-3000:]
    assert "rebuilding" not in log and "refused" not in log
    # The inputs were trimmed behind the snapshots, and what was kept sufficed.
    starts = asyncio.run(log_starts(pipeline.settings, pipeline.topics.market_ticks,
                                    pipeline.market_partitions))
    assert all(start > 0 for start in starts), starts


KEY = "test-snapshot-key-0123456789"
OTHER_KEY = b"another-key-0123456789"


def flipped(blob: bytes, marker: Path) -> bytes:
    """One byte of the body flipped."""
    return blob[:-1] + bytes([blob[-1] ^ 0xFF])


def truncated(blob: bytes, marker: Path) -> bytes:
    return blob[:-100]


def resealed(blob: bytes, pickled: bytes, keys: SnapshotKeys) -> bytes:
    header, _ = read_header(blob)
    return seal(pickled, stage=header.stage, partition=header.partition, offset=header.offset,
                sequence=header.sequence, settings=header.settings, taken=header.taken,
                keys=keys)


def signed_with_another_key(blob: bytes, marker: Path) -> bytes:
    body = blob[blob.index(b"\n") + 1:]
    return resealed(blob, zlib.decompress(body), SnapshotKeys((OTHER_KEY,)))


def running_a_command(blob: bytes, marker: Path) -> bytes:
    """A snapshot that would run a command, signed with the workers' own key."""
    return resealed(blob, pickle.dumps(RunsACommand(marker)), SnapshotKeys((KEY.encode(),)))


async def overwrite(settings: Settings, topic: str, partition: int, which: int,
                    alter: Callable[[bytes, Path], bytes], marker: Path) -> None:
    """Overwrite a partition's newest snapshot (``which`` 0) or the one before (1), in its
    slot, with ``alter`` of it."""
    state = KafkaState(settings)
    try:
        manifests = await state.manifests(topic, partition)
        target = manifests[which]
        blob = alter(await state.read_snapshot(topic, partition, target), marker)
        other = "b" if target.slot == "a" else "a"
        await state.write_snapshot(topic, partition, blob, target.offset, target.sequence,
                                   target.taken, replace(target, slot=other))
    finally:
        await state.stop()


def test_a_worker_restarted_with_its_instance_id_takes_its_partitions_straight_back(
        pipelines, tmp_path):
    """Static membership: the killed worker's session (a minute here) is not waited out."""
    catalogue = [t.market for t in synthetic_ticks(SPEC)]
    session = 60.0
    pipeline = pipelines(catalogue, options={**SNAPSHOTS, "instance_id": "worker-a",
                                             "session_timeout_seconds": session})
    expected = synthetic_expectation(pipeline, tmp_path, SPEC, N_JOBS)
    events = synthetic_events(SPEC, N_JOBS)
    run_then_kill(pipeline, events)
    asyncio.run(publish_replay(pipeline.settings, iter(events[math.ceil(len(events) * 0.6):])))
    worker = pipeline.start_worker()
    wait_for(lambda: pipeline.worker_log(1),  # the dynamic default waits the session out
             lambda log: "market-ticks partitions assigned" in log, timeout=session / 2)
    assert worker.poll() is None
    rows = pipeline.wait_for_rows(expected)
    assert sorted(set(rows)) == expected
    assert_no_conflicting_decisions(pipeline)


def test_refused_snapshots_leave_the_stages_to_the_one_before_or_the_log(pipelines, tmp_path):
    catalogue = [t.market for t in synthetic_ticks(SPEC)]
    pipeline = pipelines(catalogue, options={**SNAPSHOTS, "snapshot_key": KEY})
    expected = synthetic_expectation(pipeline, tmp_path, SPEC, N_JOBS)
    events = synthetic_events(SPEC, N_JOBS)
    run_then_kill(pipeline, events)
    topics = snapshot_topics(pipeline)
    marker = tmp_path / "command-ran"
    # The coordinator's newest snapshot would run a command, the one before is signed with
    # another key: it rebuilds from the log. The newest one of every market partition is
    # corrupt, of every scheduler partition truncated (their MACs no longer match): they
    # restore the one before.
    coordinator, _ = topics["coordinator"]
    for which, alter in ((0, running_a_command), (1, signed_with_another_key)):
        asyncio.run(overwrite(pipeline.settings, coordinator, 0, which, alter, marker))
    for stage, alter in (("market", flipped), ("scheduler", truncated)):
        topic, partitions = topics[stage]
        for partition in range(partitions):
            asyncio.run(overwrite(pipeline.settings, topic, partition, 0, alter, marker))
    asyncio.run(publish_replay(pipeline.settings, iter(events[math.ceil(len(events) * 0.6):])))
    pipeline.wait_until_joined(pipeline.start_worker())
    assert sorted(set(pipeline.wait_for_rows(expected))) == expected
    assert_no_conflicting_decisions(pipeline)
    assert not marker.exists()
    log = pipeline.worker_log(1)
    refusals = [re.fullmatch(r"snapshot of (\w+)\[\d+\] at offset [\d,]+: (corrupt|truncated|"
                             r"its MAC matches none|cannot be read by this worker) .*",
                             line.strip()) for line in re.findall(r"snapshot refused, (.*)", log)]
    assert all(refusals), log
    assert Counter(found.groups() for found in refusals if found) == {
        ("coordinator", "cannot be read by this worker"): 1,
        ("coordinator", "its MAC matches none"): 1,
        ("market", "its MAC matches none"): pipeline.market_partitions,
        ("scheduler", "its MAC matches none"): pipeline.job_partitions}
    assert f"it names {os.system.__module__}.system, which is not among" in log
    assert "no snapshot to restore, rebuilding the coordinator stage from the log" in log
    for stage in ("market", "scheduler"):
        assert re.search(rf"restored the {stage} stage in [\d.]+ s from the snapshot", log)


def test_a_worker_stopped_gracefully_snapshots_so_its_successor_replays_no_tail(
        pipelines, tmp_path):
    catalogue = [t.market for t in synthetic_ticks(SPEC)]
    never = {"snapshot_every_epochs": 10**6, "snapshot_every_records": 10**9}
    pipeline = pipelines(catalogue, job_partitions=2, options=never)
    expected = synthetic_expectation(pipeline, tmp_path, SPEC, N_JOBS)
    events = synthetic_events(SPEC, N_JOBS)
    worker = pipeline.start_worker()
    pipeline.wait_until_joined(worker)
    asyncio.run(publish_replay(pipeline.settings, iter(events[:math.ceil(len(events) * 0.6)])))
    wait_for(pipeline.decisions, lambda ds: len(ds) >= 20)
    assert not every_partition_snapshotted(pipeline)
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=60) == 0
    assert every_partition_snapshotted(pipeline), pipeline.worker_log(0)[-3000:]
    asyncio.run(publish_replay(pipeline.settings, iter(events[math.ceil(len(events) * 0.6):])))
    pipeline.wait_until_joined(pipeline.start_worker())
    assert sorted(set(pipeline.wait_for_rows(expected))) == expected
    assert_no_conflicting_decisions(pipeline)
    log = pipeline.worker_log(1)
    restoring = re.findall(r"restoring the (\w+) stage from the snapshot .*, replaying (\d+) "
                           r"records", log)
    assert {stage for stage, _ in restoring} == {"market", "coordinator", "scheduler"}, log
    assert all(tail == "0" for _, tail in restoring), restoring
    assert "rebuilding" not in log and "refused" not in log


async def test_a_snapshot_cut_short_by_a_kill_leaves_the_one_before_to_restore(
        kafka_bootstrap: str, fresh_topic_factory: TopicFactory) -> None:
    topic = await fresh_topic_factory(partitions=1)
    settings = Settings(bootstrap_servers=kafka_bootstrap, snapshot_key=KEY)
    state = KafkaState(settings)
    first, second, third = (os.urandom(2 * CHUNK_BYTES + n) for n in (1, 2, 3))
    try:
        a = await state.write_snapshot(topic, 0, first, 10, 0, 1.0, None)
        b = await state.write_snapshot(topic, 0, second, 20, 1, 2.0, a)
        assert (a.slot, b.slot, len(a.chunks)) == ("a", "b", 3)
        # A worker killed while writing the next snapshot wrote some of its chunks (slot a),
        # not its manifest.
        async with AIOKafkaProducer(**settings.kafka_options()) as producer:
            for i in range(2):
                await producer.send_and_wait(topic, third[i * CHUNK_BYTES:(i + 1) * CHUNK_BYTES],
                                             key=f"a/{i}".encode(), partition=0)
        assert await state.manifests(topic, 0) == [b, a]
        assert await state.read_snapshot(topic, 0, b) == second
        # A manifest whose chunks are no longer where it says is refused as incomplete.
        torn = Manifest("a", 30, 2, b.chunks, b.bytes, 3.0)
        with pytest.raises(SnapshotRefused, match=r"chunk 0 is no longer at offset .*incomplete"):
            await state.read_snapshot(topic, 0, torn)
        # The next snapshot goes to the slot of the older one and is restored whole.
        c = await state.write_snapshot(topic, 0, third, 30, 2, 3.0, b)
        assert [m.slot for m in await state.manifests(topic, 0)] == ["a", "b"]
        assert await state.read_snapshot(topic, 0, c) == third
    finally:
        await state.stop()


async def test_trimming_keeps_what_the_fallback_snapshot_needs(
        kafka_bootstrap: str, fresh_topic_factory: TopicFactory) -> None:
    topic = await fresh_topic_factory(partitions=1)
    settings = Settings(bootstrap_servers=kafka_bootstrap)
    async with AIOKafkaProducer(**settings.kafka_options()) as producer:
        for n in range(50):
            await producer.send(topic, b"%d" % n, partition=0)
        await producer.flush()
    state = KafkaState(settings)
    try:
        assert await state.trim(topic, 0, 30, margin_seconds=3600) is None  # all too recent
        assert await state.trim(topic, 0, 30, margin_seconds=0) == 30
        assert await state.log_start(topic, 0) == 30
        assert await state.trim(topic, 0, 20, margin_seconds=0) is None  # never backwards
        replayed = [r.offset async for batch in state.read_log(topic, 0, 30, 45) for r in batch]
        assert replayed == list(range(30, 45))
    finally:
        await state.stop()


def test_the_coordinators_worker_killed_the_other_takes_over_and_decides_as_in_process(
        pipelines, tmp_path):
    catalogue = [t.market for t in synthetic_ticks(SPEC)]
    pipeline = pipelines(catalogue, job_partitions=4, market_partitions=4, options=SNAPSHOTS)
    expected = synthetic_expectation(pipeline, tmp_path, SPEC, N_JOBS)
    events = synthetic_events(SPEC, N_JOBS)
    workers = [pipeline.start_worker(), pipeline.start_worker()]
    for worker in workers:
        pipeline.wait_until_joined(worker)
    half = math.ceil(len(events) / 2)
    asyncio.run(publish_replay(pipeline.settings, iter(events[:half])))
    holder = wait_for(
        lambda: [n for n in range(2) if "a new coordinator stage" in pipeline.worker_log(n)],
        lambda found: len(found) == 1)[0]
    wait_for(lambda: every_partition_snapshotted(pipeline), bool, timeout=180)
    workers[holder].send_signal(signal.SIGKILL)
    workers[holder].wait(timeout=30)
    asyncio.run(publish_replay(pipeline.settings, iter(events[half:])))
    assert sorted(set(pipeline.wait_for_rows(expected))) == expected
    assert_no_conflicting_decisions(pipeline)
    survivor = pipeline.worker_log(1 - holder)
    assert re.search(r"restored the coordinator stage in [\d.]+ s from the snapshot", survivor)


async def test_a_partition_recovers_while_the_consumer_keeps_polling_and_its_group(
        kafka_bootstrap: str, fresh_topic_factory: TopicFactory, unique_name, caplog) -> None:
    from collections.abc import Sequence

    from aiokafka import ConsumerRecord

    from streams.runners.tick_consumer import TickLoop
    from streams.settings import Topics

    topic = await fresh_topic_factory(partitions=2)
    settings = Settings(bootstrap_servers=kafka_bootstrap, app_id=unique_name("app"),
                        topics=Topics(market_ticks=topic), session_timeout_seconds=6,
                        heartbeat_seconds=1, max_poll_interval_seconds=3)
    async with AIOKafkaProducer(bootstrap_servers=kafka_bootstrap) as producer:
        for n in range(20):
            await producer.send(topic, b"%d" % n, partition=n % 2)
        await producer.flush()

    class SlowToRecover:
        """Partition 1 must be recovered first, which takes twice the poll limit."""

        def __init__(self) -> None:
            self.next: dict[int, int] = {0: 0}
            self.recovered_at: int | None = None

        def ready(self, partition: int, offset: int) -> bool:
            return partition in self.next

        async def recover(self, partition: int, offset: int) -> None:
            await asyncio.sleep(2 * settings.max_poll_interval_seconds)
            self.recovered_at = len(handled)
            self.next[partition] = offset

        async def checkpoint(self, log_ends: Mapping[int, int | None]) -> None:
            checkpoints.append(len(handled))

        def batch(self) -> contextlib.nullcontext[None]:
            return contextlib.nullcontext()

    handled: list[tuple[int, int]] = []
    checkpoints: list[int] = []

    async def handle(records: Sequence[ConsumerRecord]) -> list[asyncio.Future[None]]:
        handled.extend((r.partition, r.offset) for r in records)
        return []

    stages = SlowToRecover()
    consumer = TickLoop(settings, handle, stages)
    with caplog.at_level("INFO", logger="streams.runners.tick_consumer"):
        await consumer.start()
        try:
            async with asyncio.timeout(60):
                while len(handled) < 20:
                    await asyncio.sleep(0.1)
            assignments = [r.message for r in caplog.records if "assigned" in r.message]
        finally:
            await consumer.stop()
    assert [o for p, o in handled if p == 0] == list(range(10))
    assert [o for p, o in handled if p == 1] == list(range(10))
    assert stages.recovered_at == 10  # partition 0 flowed meanwhile
    assert checkpoints and checkpoints[-1] == 20  # after every batch handled
    assert len(assignments) == 1, assignments  # the consumer never left its group
    committed = await _committed(settings, topic)
    assert committed == {0: 10, 1: 10}


async def _committed(settings: Settings, topic: str) -> dict[int, int | None]:
    from aiokafka import AIOKafkaConsumer

    from streams.runners.tick_consumer import group_id

    consumer = AIOKafkaConsumer(**settings.kafka_options(), group_id=group_id(settings),
                                enable_auto_commit=False)
    await consumer.start()
    try:
        return {p: await consumer.committed(TopicPartition(topic, p)) for p in (0, 1)}
    finally:
        await consumer.stop()
