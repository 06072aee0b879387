"""Throughput and decision latency of one worker on a real broker.

1. Throughput: a synthetic market is published first, then one worker consumes it; ticks/s is
   the number of tick events divided by the time between the worker's first and last market
   boundary (so worker start-up is excluded). The in-memory pipeline stages decoding the same
   bytes, timed in the same process once warmed up on a tenth of them (so loading the
   forecasters' compiled code is left out, as the worker's start-up is), are the baseline of
   the ratio: what the worker would do without Kafka and Faust. Both are also given per
   CPU-second (the bench's process time; the worker's CPU time, from ``/proc``), which other
   load on the machine changes far less than the wall-clock rates. The worker's CPU time is
   taken over the same window as its wall-clock rate, from its first to its last boundary
   (sampled every few milliseconds, read at the boundaries' timestamps); the CPU time from
   ready to done is printed too, but it also holds the worker joining its consumer groups and
   idling while the bench polls for the last boundary (an idle worker uses about 5 % of a
   core). The same code runs up to a fifth faster or slower from one minute to the next on a
   shared machine, so each of ``--repeat`` runs times the in-memory stages right before and
   right after its worker, takes the ratio against their mean, and the medians are reported.
2. Latency: a market with ``--jobs`` concurrent jobs is replayed paced like a live feed, each
   tick published at its event time, compressed so that an epoch lasts ``--epoch-seconds``;
   for each epoch, the latency is the time from the tick that closed it (the last market's
   first tick past the boundary, by Kafka timestamp) to the last decision of that epoch on
   the decisions topic. Prints p50/p99 against the 200 ms target, and where the time goes:
   from the closing tick to the epoch's last market boundary (the market stage), to its epoch
   marker (the coordinator), to its first decision (the scheduler deciding and encoding) and
   to its last (producing the decisions).

Run: ``python bench/bench_pipeline.py`` (starts its own broker unless
``KAFKA_BOOTSTRAP_SERVERS`` is set).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from aiokafka import AIOKafkaConsumer
from rich.console import Console

from solver.market import build_market_data
from solver.policies import PolicySpec
from solver.synthetic import SyntheticMarketSpec, synthetic_ticks
from solver.workload import WorkloadSpec, generate_jobs
from streams.contract import Envelope, EpochClosed, MarketBoundary, dump_event, parse_event
from streams.kafka.clients import publish_replay
from streams.kafka.topics import ensure_topics
from streams.pipeline.declaration import PipelineConfig
from streams.pipeline.trace_events import trace_events
from streams.runners.memory import MemoryPipeline
from streams.settings import Settings, Topics, env_name, write_catalogue

REPO = Path(__file__).resolve().parents[1]
console = Console()


def settings_for(bootstrap: str, workdir: Path, catalogue_json: str,
                 **options: object) -> Settings:
    """Settings of a pipeline on topics of its own (``options``: other settings)."""
    tag = uuid.uuid4().hex[:8]
    markets_file = workdir / f"markets-{tag}.json"
    markets_file.write_text(catalogue_json)
    topics = Topics(**{name: f"bench-{tag}.{name}" for name in Topics.model_fields})
    return Settings(**{"bootstrap_servers": bootstrap, "topics": topics,
                       "markets_file": markets_file, "app_id": f"bench-{tag}",
                       "policy": "greedy", "market_partitions": 2,
                       "snapshot_key": secrets.token_hex(32), **options})


def start_worker(settings: Settings, workdir: Path, name: str | None = None,
                 **options: object) -> subprocess.Popen[bytes]:
    """A worker process on ``settings``' topics, its log in ``workdir``; ``options`` are
    further settings by field name (e.g. ``metrics_port``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPOTSCHED_")}
    env.update({"SPOTSCHED_BOOTSTRAP_SERVERS": settings.bootstrap_servers,
                "SPOTSCHED_MARKET_PARTITIONS": str(settings.market_partitions),
                "SPOTSCHED_JOB_PARTITIONS": str(settings.job_partitions),
                "PYTHONPATH": str(REPO)})
    for field in Topics.model_fields:
        env[f"SPOTSCHED_TOPICS__{field.upper()}"] = getattr(settings.topics, field)
    if settings.snapshot_key is not None:
        env[env_name("snapshot_key")] = settings.snapshot_key.get_secret_value()
    env.update({env_name(field): str(value) for field, value in options.items()})
    name = name or settings.app_id
    log = (workdir / f"{name}.log").open("wb")
    return subprocess.Popen(
        [sys.executable, "-m", "streams", "worker", "--markets-file", str(settings.markets_file),
         "--policy", settings.policy, "--app-id", settings.app_id,
         "--data-dir", str(workdir / name), "--log-level", "INFO"],
        env=env, stdout=log, stderr=subprocess.STDOUT)


async def timestamps(settings: Settings, topic: str, idle: float) -> list[tuple[int, object]]:
    """``(kafka timestamp ms, event)`` of every message, once ``idle`` s pass without one."""
    consumer = AIOKafkaConsumer(topic, **settings.kafka_options(),
                                auto_offset_reset="earliest", enable_auto_commit=False)
    await consumer.start()
    out = []
    try:
        while True:
            batch = await consumer.getmany(timeout_ms=int(idle * 1000))
            if not batch:
                return out
            for messages in batch.values():
                out.extend((m.timestamp, parse_event(m.value)) for m in messages)
    finally:
        await consumer.stop()


def wait_for_epochs(settings: Settings, expected: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen = asyncio.run(timestamps(settings, settings.topics.market_boundaries, 2.0))
        boundaries = {e.event_time for _, e in seen}
        if len(boundaries) >= expected:
            return
        time.sleep(2.0)
    raise SystemExit(f"the worker closed fewer than {expected} boundaries in {timeout} s")


def throughput(bootstrap: str, workdir: Path, days: float, repeat: int) -> None:
    ticks = synthetic_ticks(SyntheticMarketSpec(seed=1, n_markets=4, days=days, tick_seconds=60))
    data = build_market_data(ticks, 3600)
    events = list(trace_events(ticks, []))
    wire = [(e.key.encode(), dump_event(e)) for e in events]
    config = PipelineConfig(data.markets, 3600, PolicySpec("greedy"))
    catalogue = write_catalogue(list(data.markets))
    ratios, cpu_ratios, memory_cpu = [], [], []
    for run in range(1, repeat + 1):
        before = in_memory_rates(config, wire)
        worker = worker_rates(bootstrap, workdir, catalogue, events, data.n_slots)
        after = in_memory_rates(config, wire)
        memory, memory_per_cpu = (before[0] + after[0]) / 2, (before[1] + after[1]) / 2
        ratios.append(worker.per_second / memory)
        cpu_ratios.append(worker.per_cpu_second / memory_per_cpu)
        memory_cpu.append(memory_per_cpu)
        console.print(
            f"run {run}/{repeat}: {len(events):,} tick events; the worker "
            f"{worker.per_second:,.0f} ticks/s, {worker.per_cpu_second:,.0f} per CPU-s "
            f"({worker.cpu_seconds:.1f} CPU-s from its first to its last boundary; "
            f"{worker.cpu_seconds_ready_to_done:.1f} CPU-s from ready to done); in-memory stages "
            f"{before[0]:,.0f} / {after[0]:,.0f} ticks/s and {before[1]:,.0f} / {after[1]:,.0f} "
            f"per CPU-s (before / after); worker / in-memory = {ratios[-1]:.2f}, per CPU-s "
            f"{cpu_ratios[-1]:.2f}")
    console.print(
        f"throughput, median of {repeat} runs (range): in-memory stages "
        f"{np.median(memory_cpu):,.0f} ticks per CPU-s ({min(memory_cpu):,.0f}-"
        f"{max(memory_cpu):,.0f}; target >= 50,000); worker / in-memory "
        f"{np.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}), per CPU-s "
        f"{np.median(cpu_ratios):.2f} ({min(cpu_ratios):.2f}-{max(cpu_ratios):.2f}; "
        "target >= 0.5)")


def in_memory_rates(config: PipelineConfig, wire: list[tuple[bytes, bytes]]
                    ) -> tuple[float, float]:
    """Ticks per second and per CPU-second of the in-memory stages taking ``wire``, once warmed
    up on a tenth of it in a pipeline of its own."""
    warm_up = MemoryPipeline(config)
    for key, raw in wire[:len(wire) // 10]:
        warm_up.send(warm_up.topics.market_ticks, raw, key)
    memory = MemoryPipeline(config)
    began, cpu = time.perf_counter(), time.process_time()
    for key, raw in wire:
        memory.send(memory.topics.market_ticks, raw, key)
    return (len(wire) / (time.perf_counter() - began),
            len(wire) / (time.process_time() - cpu))


@dataclass(frozen=True)
class WorkerRates:
    """A worker's throughput over the window from its first to its last boundary."""

    per_second: float
    per_cpu_second: float
    cpu_seconds: float
    cpu_seconds_ready_to_done: float
    """All the CPU time from the worker's ready line to the bench seeing its last boundary."""


class CpuTrace:
    """A process's CPU seconds, sampled every ``every`` seconds in a thread while in use, and
    read at any instant in between."""

    def __init__(self, pid: int, every: float = 0.005) -> None:
        self.pid, self.every = pid, every
        self.times: list[float] = []
        self.cpu: list[float] = []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> CpuTrace:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()

    def _sample(self) -> None:
        while True:
            self.times.append(time.time())
            self.cpu.append(cpu_seconds(self.pid))
            if self._done.wait(self.every):
                return

    def at(self, instant: float) -> float:
        """The CPU seconds used by ``instant`` (Unix seconds), between the samples around it."""
        return float(np.interp(instant, self.times, self.cpu))


def worker_rates(bootstrap: str, workdir: Path, catalogue: str, events: Sequence[Envelope],
                 n_slots: int) -> WorkerRates:
    """One worker taking ``events``, published first to topics of their own (module doc)."""
    settings = settings_for(bootstrap, workdir, catalogue)
    asyncio.run(ensure_topics(settings))
    asyncio.run(publish_replay(settings, iter(events)))
    worker = start_worker(settings, workdir)
    try:
        wait_until_ready(worker, workdir / f"{settings.app_id}.log")
        with CpuTrace(worker.pid) as cpu:
            wait_for_epochs(settings, n_slots, timeout=600)
    finally:
        stop(worker)
    seen = asyncio.run(timestamps(settings, settings.topics.market_boundaries, 2.0))
    first, last = (min(ts for ts, _ in seen) / 1000.0, max(ts for ts, _ in seen) / 1000.0)
    used = cpu.at(last) - cpu.at(first)
    return WorkerRates(len(events) / (last - first), len(events) / used, used,
                       cpu.cpu[-1] - cpu.cpu[0])


def wait_until_ready(worker: subprocess.Popen[bytes], log: Path, timeout: float = 300) -> None:
    """Until the worker has started (its log says so)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if worker.poll() is not None:
            raise SystemExit(f"the worker exited: {log.read_text(errors='replace')[-2000:]}")
        if "Worker ready" in log.read_text(errors="replace"):
            return
        time.sleep(0.5)
    raise SystemExit(f"the worker was not ready in {timeout:.0f} s")


def stop(worker: subprocess.Popen[bytes], grace: float = 300.0) -> None:
    """Stop the worker gracefully (it snapshots its stages first), killing it after
    ``grace`` seconds."""
    worker.terminate()
    try:
        worker.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        console.print(f"the worker did not stop within {grace:.0f} s of SIGTERM: killed")
        worker.kill()
        worker.wait()


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of a process so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def latency(bootstrap: str, workdir: Path, n_jobs: int, days: float,
            epoch_seconds: float) -> None:
    ticks = synthetic_ticks(SyntheticMarketSpec(seed=2, n_markets=4, days=days,
                                                tick_seconds=300))
    data = build_market_data(ticks, 3600)
    spec = WorkloadSpec(seed=2, workload_range=(20.0, 40.0), slack_range=(2.0, 2.5),
                        n_max_choices=(1, 2))
    jobs = generate_jobs(data, n_jobs, spec)
    settings = settings_for(bootstrap, workdir, write_catalogue(list(data.markets)))
    asyncio.run(ensure_topics(settings))
    worker = start_worker(settings, workdir)
    try:
        wait_until_ready(worker, workdir / f"{settings.app_id}.log")
        asyncio.run(publish_replay(settings, trace_events(ticks, jobs),
                                   speed=3600.0 / epoch_seconds))
        time.sleep(5.0)
    finally:
        stop(worker)
    tick_log = asyncio.run(timestamps(settings, settings.topics.market_ticks, 2.0))
    boundaries: dict[float, int] = {}
    for ts, event in asyncio.run(timestamps(settings, settings.topics.market_boundaries, 2.0)):
        if isinstance(event, MarketBoundary):
            at = event.event_time.timestamp()
            boundaries[at] = max(boundaries.get(at, 0), ts)
    epochs = {e.epoch: (ts, e) for ts, e in
              asyncio.run(timestamps(settings, settings.topics.job_events, 2.0))
              if isinstance(e, EpochClosed)}
    decisions = asyncio.run(timestamps(settings, settings.topics.decisions, 2.0))
    first_decision: dict[int, int] = {}
    last_decision: dict[int, int] = {}
    active: dict[int, int] = {}
    for ts, d in decisions:
        first_decision[d.epoch] = min(first_decision.get(d.epoch, ts), ts)
        last_decision[d.epoch] = max(last_decision.get(d.epoch, 0), ts)
        active[d.epoch] = active.get(d.epoch, 0) + 1
    by_market: dict[str, list[tuple[float, int]]] = {}
    for ts, tick in tick_log:
        by_market.setdefault(tick.market, []).append((tick.event_time.timestamp(), ts))
    steps = []  # per epoch, ms: closing tick -> boundary -> marker -> first -> last decision
    for number, (marked, epoch) in epochs.items():
        boundary = epoch.event_time.timestamp()
        if number not in last_decision or boundary not in boundaries:
            continue
        closing = max(next(ts for t, ts in series if t > boundary)
                      for series in by_market.values())
        times = (closing, boundaries[boundary], marked, first_decision[number],
                 last_decision[number])
        steps.append(np.diff(times))
    parts = np.array(steps, dtype=float)
    values = parts.sum(axis=1) / 1000.0
    busiest = max(active.values()) if active else 0
    console.print(f"latency over {len(values)} epochs with up to {busiest} jobs deciding per "
                  f"epoch: p50 {np.percentile(values, 50) * 1000:.0f} ms, p99 "
                  f"{np.percentile(values, 99) * 1000:.0f} ms (target p99 < 200 ms), an epoch "
                  f"every {epoch_seconds:g} s")
    for name, column in zip(("market stage (tick to boundary)", "coordinator (to the marker)",
                             "scheduler (to the first decision)",
                             "producing (first to last decision)"), parts.T, strict=True):
        console.print(f"  {name}: p50 {np.percentile(column, 50):.0f} ms, p99 "
                      f"{np.percentile(column, 99):.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=float, default=5.0, help="throughput market length")
    parser.add_argument("--repeat", type=int, default=3,
                        help="throughput runs, each worker between two in-memory runs")
    parser.add_argument("--jobs", type=int, default=1000, help="concurrent jobs for latency")
    parser.add_argument("--latency-days", type=float, default=6.0,
                        help="latency market length")
    parser.add_argument("--epoch-seconds", type=float, default=4.0,
                        help="latency replay pace: wall-clock seconds per hourly epoch")
    parser.add_argument("--skip", choices=("throughput", "latency"),
                        help="leave one of the two out")
    args = parser.parse_args()
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
        if bootstrap is None:
            from streams.cli.dev import load_devkafka

            kafka = load_devkafka()
            broker = stack.enter_context(
                kafka.KafkaBroker(kafka.fetch_jars(kafka.kafka_home()), workdir / "kafka"))
            bootstrap = broker.bootstrap
        if args.skip != "throughput":
            throughput(bootstrap, workdir, args.days, args.repeat)
        if args.skip != "latency":
            latency(bootstrap, workdir, args.jobs, args.latency_days, args.epoch_seconds)


if __name__ == "__main__":
    main()
