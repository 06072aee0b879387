"""Recovery of a killed worker on a real broker: time to the next decision, what was restored
and replayed, the decisions, and what the topics keep.

1. History: ``--markets`` synthetic markets over ``--days`` days (a tick every
   ``--tick-seconds``) and jobs at the fine-tune scenario's density (8 a week), published as
   fast as the broker takes them; ``--workers`` workers take it all and snapshot as they go.
2. Kill: once the workers' consumer groups have caught up, a worker is killed with SIGKILL
   (with two, the one holding the coordinator).
3. Recovery: with one worker, a new one is started; then a probe job per job partition is
   submitted and the ticks that close its first epoch are published. Printed: the time from
   the new worker's start (with two workers: from the kill) to each partition's first probe
   decision, and what each stage restored from, how many records it replayed and in how long
   (the recovering worker's log).
4. Decisions: every decision on the topic against the same events run in-process (missing,
   extra, conflicting); ``--no-compare`` skips the in-process run (long for large markets).
5. Sizes: the snapshots (bytes, write seconds) and the input topics (records kept; bytes on
   disk when the bench runs its own broker).

``--runs N`` repeats 1-3 on one broker and prints the median time.

``--in-process`` measures what a restore costs without a broker or workers: the history runs
through the in-memory pipeline, then each stage partition is snapshotted and restored
(:mod:`streams.pipeline.snapshot`) and the seconds, bytes and the rate at which the
pipeline took the history are printed, with their scaling to ``--scale-to`` markets: the
market stage's snapshot grows with the markets (a clock and a forecaster each), and a
restart replays at most ``--snapshot-every-records`` records, or ``--snapshot-every-epochs``
slots of ticks, per market partition.

Run: ``python bench/bench_recovery.py`` (6 markets, 5 days), ``--days 45``,
``--markets 1000 --days 30 --no-compare``, ``--workers 2 --job-partitions 4
--market-partitions 4``, ``--in-process --markets 24 --days 30 --tick-seconds 3600``. It
starts its own broker unless ``KAFKA_BOOTSTRAP_SERVERS`` is set.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import ExitStack
from dataclasses import replace
from datetime import datetime
from itertools import pairwise
from pathlib import Path

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import GroupCoordinatorNotAvailableError
from bench_pipeline import REPO, console, settings_for, start_worker

from solver.evaluation.scenarios import FineTuneSpec
from solver.market import MarketTicks, build_market_data
from solver.policies.spec import RECOMMENDED, PolicySpec
from solver.synthetic import ZONES, SyntheticMarketSpec, synthetic_ticks
from solver.workload import generate_jobs
from streams.contract import JobSubmitted, ProvisioningDecision, dump_event, parse_event, utc
from streams.kafka.clients import publish_replay
from streams.kafka.partitions import partition_for
from streams.kafka.state import KafkaState
from streams.kafka.topics import ensure_topics
from streams.pipeline.decision_encoder import allocation_rows
from streams.pipeline.declaration import PIPELINE, PipelineConfig
from streams.pipeline.snapshot import SnapshotKeys, pickle_state, restore, seal
from streams.pipeline.trace_events import trace_events
from streams.runners.memory import MemoryPipeline, run_in_memory
from streams.runners.tick_consumer import group_id
from streams.settings import Settings, write_catalogue

JOBS_PER_WEEK = FineTuneSpec().jobs_per_window
RESTORED = re.compile(r"(\S+)\[(\d+)\]: restored the (\w+) stage in ([\d.]+) s from (the \w+)"
                      r".*?, (\d+) records replayed")


def logged_at(text: str, words: str, last: bool = False) -> float | None:
    """Unix time of the first (``last``: the last) line of a worker's log that has ``words``
    (the log's times are the machine's local time)."""
    found = re.findall(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+)\].*" + re.escape(words), text,
                       re.MULTILINE)
    if not found:
        return None
    return datetime.strptime(found[-1 if last else 0], "%Y-%m-%d %H:%M:%S,%f").timestamp()


def history(markets: int, days: float, tick_seconds: float, seed: int):
    """The events of the history, the probe's time (the last boundary but one), and the
    ticks after it, which close the probe's first epoch."""
    ticks = many_markets(markets, days, tick_seconds, seed)
    data = build_market_data(ticks, 3600.0)
    jobs = generate_jobs(data, max(1, round(days * JOBS_PER_WEEK / 7)),
                         replace(FineTuneSpec().workload, seed=seed))
    probe_at = data.slot_start(data.n_slots - 2)
    events = list(trace_events(ticks, [j for j in jobs if j.release < probe_at]))
    cut = next(i for i, e in enumerate(events)
               if not isinstance(e, JobSubmitted) and e.event_time.timestamp() >= probe_at)
    return data, events[:cut], probe_at, events[cut:]


def many_markets(count: int, days: float, tick_seconds: float, seed: int) -> list[MarketTicks]:
    """``count`` synthetic markets: the generator's zones, with one instance type per batch of
    them (each batch seeded on its own)."""
    zones = len(ZONES)
    out: list[MarketTicks] = []
    for batch in range(math.ceil(count / zones)):
        ticks = synthetic_ticks(SyntheticMarketSpec(
            seed=seed + batch, n_markets=min(zones, count - batch * zones), days=days,
            tick_seconds=tick_seconds))
        out += ticks if batch == 0 else [
            replace(t, market=replace(t.market, instance_type=f"g{batch}.xlarge"))
            for t in ticks]
    return out


def probes(at: float, job_partitions: int) -> list[JobSubmitted]:
    """One small on-demand-able job per job partition, submitted at ``at``."""
    out, n = {}, 0
    while len(out) < job_partitions:
        job_id = f"probe-{n}"
        out.setdefault(partition_for(job_id, job_partitions), job_id)
        n += 1
    return [JobSubmitted(event_time=utc(at), job_id=job_id, workload=1.0, release=utc(at),
                         soft_deadline=utc(at + 12 * 3600), hard_deadline=utc(at + 24 * 3600))
            for job_id in out.values()]


async def lag(settings: Settings) -> int:
    """Records of the input topics the workers' groups have not committed yet."""
    admin = AIOKafkaAdminClient(**settings.kafka_options())
    consumer = AIOKafkaConsumer(**settings.kafka_options())
    await admin.start()
    await consumer.start()
    try:
        behind = 0
        groups = {group_id(settings): [settings.topics.market_ticks],
                  settings.app_id: [settings.topics.market_boundaries,
                                    settings.topics.job_events]}
        for group, topics in groups.items():
            committed = await admin.list_consumer_group_offsets(group)
            tps = [TopicPartition(t, p) for t in topics
                   for p in range(settings.market_partitions if t == settings.topics.market_ticks
                                  else 1 if t == settings.topics.market_boundaries
                                  else settings.job_partitions)]
            for tp, end in (await consumer.end_offsets(tps)).items():
                done = committed.get(tp)
                behind += end - (done.offset if done is not None else 0)
        return behind
    finally:
        await consumer.stop()
        await admin.close()


def wait_caught_up(settings: Settings, timeout: float) -> float:
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        try:
            if asyncio.run(lag(settings)) == 0:
                return time.monotonic() - began
        except GroupCoordinatorNotAvailableError:  # a new broker's offsets topic: ask again
            pass
        time.sleep(2.0)
    raise SystemExit(f"the workers did not catch up with the history in {timeout:.0f} s")


async def first_decisions(settings: Settings, jobs: set[str], timeout: float
                          ) -> dict[str, float]:
    """Kafka timestamp (s) of the first decision of each job in ``jobs``."""
    consumer = AIOKafkaConsumer(settings.topics.decisions, **settings.kafka_options(),
                                auto_offset_reset="earliest")
    await consumer.start()
    seen: dict[str, float] = {}
    try:
        deadline = time.monotonic() + timeout
        while set(seen) != jobs and time.monotonic() < deadline:
            for records in (await consumer.getmany(timeout_ms=500)).values():
                for record in records:
                    decision = parse_event(record.value)
                    if decision.job_id in jobs and decision.job_id not in seen:
                        seen[decision.job_id] = record.timestamp / 1000.0
        return seen
    finally:
        await consumer.stop()


async def all_decisions(settings: Settings) -> list[ProvisioningDecision]:
    consumer = AIOKafkaConsumer(settings.topics.decisions, **settings.kafka_options(),
                                auto_offset_reset="earliest")
    await consumer.start()
    out = []
    try:
        while batch := await consumer.getmany(timeout_ms=3000):
            out += [parse_event(r.value) for records in batch.values() for r in records]
        return out
    finally:
        await consumer.stop()


async def snapshot_sizes(settings: Settings) -> dict[str, list[int]]:
    state = KafkaState(settings)
    counts = {"market_ticks": settings.market_partitions, "market_boundaries": 1,
              "job_events": settings.job_partitions}
    try:
        return {spec.name: [m[0].bytes for p in range(counts[spec.topic])
                            if (m := await state.manifests(getattr(settings.topics,
                                                                   spec.snapshots), p))]
                for spec in PIPELINE}
    finally:
        await state.stop()


async def kept(settings: Settings, topic: str, partitions: int
               ) -> tuple[int, int, dict[int, int]]:
    """Records an input topic keeps, records ever written to it, and each partition's log
    start offset."""
    consumer = AIOKafkaConsumer(**settings.kafka_options())
    await consumer.start()
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        starts, ends = await consumer.beginning_offsets(tps), await consumer.end_offsets(tps)
        return (sum(ends[tp] - starts[tp] for tp in tps), sum(ends.values()),
                {tp.partition: starts[tp] for tp in tps})
    finally:
        await consumer.stop()


def disk_bytes(data_dir: Path, topic: str, starts: dict[int, int]) -> tuple[int, int]:
    """Bytes the topic's files take on the broker's disk (blocks allocated: a segment's
    indexes are sparse files of 10 MiB), and how many of them belong to
    segments wholly before their partition's log start offset: trimmed, and freed at the
    broker's next retention check (``log.retention.check.interval.ms``, 5 minutes by
    default)."""
    total = trimmed = 0
    for partition, start in starts.items():
        files = list((data_dir / "kraft" / f"{topic}-{partition}").iterdir())
        bases = sorted(int(f.name.split(".")[0]) for f in files if f.name.endswith(".log"))
        before = {base for base, after in pairwise(bases) if after <= start}
        for f in files:
            try:
                size, head = f.stat().st_blocks * 512, f.name.split(".")[0]
            except FileNotFoundError:  # the broker deleted it meanwhile
                continue
            total += size
            if f.name.endswith(".deleted") or (head.isdigit() and int(head) in before):
                trimmed += size
    return total, trimmed


def scrape(port: int) -> str:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as page:
            return page.read().decode()
    except OSError:
        return ""


def snapshot_write_seconds(metrics: str) -> dict[str, float]:
    """Mean seconds to take and write a snapshot, by stage."""
    sums = dict(re.findall(r'spotsched_snapshot_write_seconds_sum\{stage="(\w+)"\} (\S+)',
                           metrics))
    counts = dict(re.findall(r'spotsched_snapshot_write_seconds_count\{stage="(\w+)"\} (\S+)',
                             metrics))
    return {s: float(sums[s]) / float(counts[s]) for s in sums if float(counts.get(s, 0))}


def holder_of_the_coordinator(logs: list[Path]) -> int:
    for n, log in enumerate(logs):
        if "a new coordinator stage" in log.read_text(errors="replace"):
            return n
    raise SystemExit("no worker reports the coordinator stage")


def run(args: argparse.Namespace, bootstrap: str, workdir: Path, data_dir: Path | None
        ) -> float:
    """One history, kill and recovery; returns the seconds to the last partition's first probe
    decision."""
    began = time.perf_counter()
    data, events, probe_at, closing = history(args.markets, args.days, args.tick_seconds,
                                              args.seed)
    options = {"snapshot_every_epochs": args.snapshot_every_epochs,
               "snapshot_every_records": args.snapshot_every_records,
               "snapshot_min_interval_seconds": args.snapshot_min_interval_seconds,
               "snapshot_delay_seconds": args.snapshot_delay_seconds,
               "retention_margin_hours": args.margin_hours}
    settings = settings_for(bootstrap, workdir, write_catalogue(list(data.markets)),
                            job_partitions=args.job_partitions,
                            market_partitions=args.market_partitions, policy=args.policy,
                            **options)
    ticks = sum(not isinstance(e, JobSubmitted) for e in events)
    console.print(f"history: {args.markets} markets x {args.days:g} days, {ticks:,} ticks, "
                  f"{len(events) - ticks} jobs (made in {time.perf_counter() - began:.0f} s)")
    asyncio.run(ensure_topics(settings))
    ports = [free_port() for _ in range(args.workers)]
    static = [{"instance_id": f"worker-{n}"} if args.static else {} for n in range(args.workers)]
    workers = [start_worker(settings, workdir, f"worker-{n}", metrics_port=ports[n], **options,
                            **static[n])
               for n in range(args.workers)]
    logs = [workdir / f"worker-{n}.log" for n in range(args.workers)]
    try:
        began = time.perf_counter()
        asyncio.run(publish_replay(settings, iter(events)))
        published = time.perf_counter() - began
        caught_up = wait_caught_up(settings, args.timeout)
        console.print(f"published in {published:.0f} s; the workers caught up "
                      f"{caught_up:.0f} s later")
        time.sleep(3.0)  # the last batches' snapshots
        metrics = [scrape(port) for port in ports]
        victim = holder_of_the_coordinator(logs) if args.workers > 1 else 0
        written = snapshot_write_seconds(metrics[victim])
        # Read before the kill, so that the new worker starts right after it, as an
        # operator's restart would: the dead member's session expires a fixed time after the
        # kill, and any work in between would shorten the wait the bench reports.
        sizes = asyncio.run(snapshot_sizes(settings))
        workers[victim].send_signal(signal.SIGKILL)
        workers[victim].wait(timeout=30)
        killed = time.time()
        for stage, found in sizes.items():
            console.print(f"snapshots of the {stage} stage: {len(found)} partitions, "
                          f"{sum(found):,} bytes in all (largest {max(found, default=0):,}), "
                          f"{written.get(stage, math.nan) * 1000:.0f} ms to take and write "
                          "one on average")
        probe_jobs = probes(probe_at, args.job_partitions)
        started = killed
        recovering = 1 - victim if args.workers > 1 else len(workers)
        if args.workers == 1:
            started = time.time()
            workers.append(start_worker(settings, workdir, "worker-new",
                                        metrics_port=free_port(), **options, **static[victim]))
            logs.append(workdir / "worker-new.log")
        asyncio.run(publish_replay(settings, iter([*probe_jobs, *closing])))
        firsts = asyncio.run(first_decisions(settings, {j.job_id for j in probe_jobs},
                                             args.timeout))
        if len(firsts) < len(probe_jobs):
            raise SystemExit(f"no decision for {len(probe_jobs) - len(firsts)} probe job(s) "
                             f"in {args.timeout:.0f} s; see {logs[recovering]}")
        since = "the new worker's start" if args.workers == 1 else "the kill"
        times = sorted(t - started for t in firsts.values())
        console.print(f"first probe decision of every job partition {times[-1]:.1f} s after "
                      f"{since} (each: {', '.join(f'{t:.1f}' for t in times)} s)")
        text = logs[recovering].read_text(errors="replace")
        for _, partition, stage, seconds, source, replayed in RESTORED.findall(text):
            console.print(f"  {stage}[{partition}] restored from {source} in {seconds} s, "
                          f"{int(replayed):,} records replayed")
        ready = logged_at(text, "Worker ready")
        restored = logged_at(text, "restored the", last=True)
        if restored is not None:
            # With two workers the recovering one was ready before the kill.
            was_ready = (f" was ready {ready - started:.1f} s after {since}, its stages "
                         if ready is not None and ready > started else "'s stages were ")
            console.print(f"  the recovering worker{was_ready}restored "
                          f"{restored - started:.1f} s after {since}; the rest is the probe's "
                          "epoch")
        if args.compare:
            compare(settings, data, [*events, *probe_jobs, *closing], args)
        for topic, partitions in ((settings.topics.market_ticks, args.market_partitions),
                                  (settings.topics.job_events, args.job_partitions),
                                  (settings.topics.market_boundaries, 1)):
            have, ever, starts = asyncio.run(kept(settings, topic, partitions))
            line = f"{topic}: keeps {have:,} of {ever:,} records"
            if data_dir is not None:
                on_disk, trimmed = disk_bytes(data_dir, topic, starts)
                line += (f", {on_disk / 2**20:,.1f} MiB on disk, of which "
                         f"{trimmed / 2**20:,.1f} MiB trimmed and awaiting the broker's "
                         "retention check")
            console.print(line)
        return times[-1]
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.terminate()
        for worker in workers:
            try:
                worker.wait(timeout=60)
            except subprocess.TimeoutExpired:
                worker.kill()


def in_process(args: argparse.Namespace) -> None:
    """The restore costs of the history's stages, measured in process (module doc)."""
    data, events, _, _ = history(args.markets, args.days, args.tick_seconds, args.seed)
    config = PipelineConfig(data.markets, 3600.0, PolicySpec.parse(args.policy))
    pipeline = MemoryPipeline(config, args.job_partitions, args.market_partitions)
    began = time.process_time()
    for event in events:
        topic = (pipeline.topics.job_events if isinstance(event, JobSubmitted)
                 else pipeline.topics.market_ticks)
        pipeline.send(topic, dump_event(event), event.key.encode())
    rate = len(events) / (time.process_time() - began)
    console.print(f"history: {args.markets} markets x {args.days:g} days, {len(events):,} "
                  f"records taken at {rate:,.0f} records per CPU-s (ticks, and the forecasts "
                  "and boundaries they make)")
    names = {getattr(pipeline.topics, spec.topic): spec.name for spec in PIPELINE}
    keys = SnapshotKeys((os.urandom(32).hex().encode(),))
    restore_seconds: dict[str, float] = {}
    for (topic, partition), driver in pipeline.drivers.items():
        stage = names[topic]
        began = time.perf_counter()
        environment = {"config": config, "written": pipeline.between_stages}
        blob = seal(pickle_state(driver.stage, environment), stage=stage,
                    partition=partition, offset=0, sequence=0, settings="", taken=0.0,
                    keys=keys)
        sealed = time.perf_counter() - began
        began = time.perf_counter()
        restore(blob, stage=stage, partition=partition, settings="",
                environment=environment, keys=keys,
                max_bytes=Settings.model_fields["snapshot_max_bytes"].default)
        restored = time.perf_counter() - began
        restore_seconds[stage] = restore_seconds.get(stage, 0.0) + restored
        console.print(f"  {stage}[{partition}]: {len(blob):,} bytes, taken in {sealed:.2f} s, "
                      f"restored in {restored:.2f} s")
    scale = args.scale_to / args.markets
    per_partition = math.ceil(args.scale_to / args.market_partitions) * (
        args.snapshot_every_epochs * 3600.0 / args.tick_seconds)
    tail = args.market_partitions * min(args.snapshot_every_records, per_partition)
    console.print(
        f"scaled to {args.scale_to:,} markets: restoring the market stage "
        f"{restore_seconds['market'] * scale:.1f} s (x {scale:g}), the others "
        f"{sum(v for k, v in restore_seconds.items() if k != 'market'):.1f} s; a tail of at "
        f"most {tail:,.0f} records (every market partition's) replayed in {tail / rate:.1f} "
        "CPU-s at this history's rate")


def compare(settings: Settings, data, events, args: argparse.Namespace) -> None:
    expected = allocation_rows(run_in_memory(events, data.markets, 3600.0, args.policy,
                                           args.job_partitions, args.market_partitions))
    decisions = [d for d in asyncio.run(all_decisions(settings))
                 if isinstance(d, ProvisioningDecision)]
    got = allocation_rows(decisions)
    versions: dict[str, set[bytes]] = {}
    for decision in decisions:
        versions.setdefault(decision.idempotency_key, set()).add(dump_event(decision))
    conflicting = sum(len(v) > 1 for v in versions.values())
    console.print(f"decisions: {len(set(got)):,} distinct against {len(expected):,} in-process;"
                  f" {len(set(expected) - set(got))} missing, {len(set(got) - set(expected))} "
                  f"extra, {conflicting} conflicting")


def free_port() -> int:
    from streams.cli.dev import load_devkafka

    return load_devkafka().free_port()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markets", type=int, default=6)
    parser.add_argument("--days", type=float, default=5.0)
    parser.add_argument("--tick-seconds", type=float, default=300.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, choices=(1, 2), default=1)
    parser.add_argument("--job-partitions", type=int, default=1)
    parser.add_argument("--market-partitions", type=int, default=4)
    parser.add_argument("--policy", default=RECOMMENDED)
    for field, kind in (("snapshot_every_epochs", int), ("snapshot_every_records", int),
                        ("snapshot_min_interval_seconds", float),
                        ("snapshot_delay_seconds", float)):
        parser.add_argument(f"--{field.replace('_', '-')}", type=kind,
                            default=Settings.model_fields[field].default)
    parser.add_argument("--margin-hours", type=float, default=0.0,
                        help="retention margin: 0 trims the inputs right behind the snapshots")
    parser.add_argument("--timeout", type=float, default=3600.0)
    parser.add_argument("--static", action="store_true",
                        help="static group membership: each worker has an instance id, and the "
                        "new worker takes the killed one's")
    parser.add_argument("--no-compare", dest="compare", action="store_false")
    parser.add_argument("--runs", type=int, default=1,
                        help="runs on one broker, each on topics of its own; prints the median")
    parser.add_argument("--in-process", action="store_true",
                        help="measure the restore costs in process, without a broker")
    parser.add_argument("--scale-to", type=int, default=1000,
                        help="markets the in-process restore costs are scaled to")
    args = parser.parse_args()
    if args.in_process:
        in_process(args)
        return
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        bootstrap, data_dir = os.environ.get("KAFKA_BOOTSTRAP_SERVERS"), None
        if bootstrap is None:
            from streams.cli.dev import load_devkafka

            kafka = load_devkafka()
            broker = stack.enter_context(kafka.KafkaBroker(kafka.fetch_jars(kafka.kafka_home()),
                                                           workdir / "kafka"))
            bootstrap, data_dir = broker.bootstrap, broker.data_dir
        times = [run(args, bootstrap, workdir, data_dir) for _ in range(args.runs)]
        if args.runs > 1:
            console.print(f"{args.markets} markets x {args.days:g} days, {args.runs} runs: "
                          f"start to first probe decision {', '.join(f'{t:.1f}' for t in times)}"
                          f" s, median {statistics.median(times):.1f} s")


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    main()
