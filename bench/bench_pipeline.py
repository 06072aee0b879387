"""Throughput and decision latency of one worker on a real broker.

1. Throughput: a synthetic market is published first, then one worker consumes it; ticks/s is
   the number of tick events divided by the time between the worker's first and last market
   boundary (so worker start-up is excluded). The in-memory pipeline stages decoding the same
   bytes, timed in the same process, are the baseline of the ratio: what the worker would do
   without Kafka and Faust.
2. Latency: a market with ``--jobs`` concurrent jobs is replayed at a steady pace; for each
   epoch, the latency is the time from the tick that closed it (the last market's first tick
   past the boundary, by Kafka timestamp) to the last decision of that epoch on the decisions
   topic. Prints p50/p99 against the 500 ms target.

Run: ``python bench/bench_pipeline.py`` (starts its own broker unless
``KAFKA_BOOTSTRAP_SERVERS`` is set).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from pathlib import Path

import numpy as np
from aiokafka import AIOKafkaConsumer
from rich.console import Console

from solver.market import build_market_data
from solver.policies import PolicySpec
from solver.synthetic import SyntheticMarketSpec, synthetic_ticks
from solver.workload import WorkloadSpec, generate_jobs
from streams.contract import EpochClosed, dump_event, parse_event
from streams.kafka.clients import publish_replay
from streams.pipeline import PipelineConfig
from streams.replay import trace_events
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
                       "policy": "greedy", "market_partitions": 2, **options})


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


def throughput(bootstrap: str, workdir: Path, days: float) -> None:
    ticks = synthetic_ticks(SyntheticMarketSpec(seed=1, n_markets=4, days=days, tick_seconds=60))
    data = build_market_data(ticks, 3600)
    events = list(trace_events(ticks, []))
    wire = [(e.key.encode(), dump_event(e)) for e in events]
    memory = MemoryPipeline(PipelineConfig(data.markets, 3600, PolicySpec("greedy")))
    began = time.perf_counter()
    for key, raw in wire:
        memory.send(memory.topics.market_ticks, raw, key)
    in_memory = len(events) / (time.perf_counter() - began)
    settings = settings_for(bootstrap, workdir, write_catalogue(list(data.markets)))
    from streams.kafka.topics import ensure_topics

    asyncio.run(ensure_topics(settings))
    asyncio.run(publish_replay(settings, iter(events)))
    worker = start_worker(settings, workdir)
    try:
        wait_for_epochs(settings, data.n_slots, timeout=600)
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    seen = asyncio.run(timestamps(settings, settings.topics.market_boundaries, 2.0))
    span = (max(ts for ts, _ in seen) - min(ts for ts, _ in seen)) / 1000.0
    rate = len(events) / span
    console.print(f"throughput: {len(events):,} tick events through one worker in {span:.1f} s "
                  f"= {rate:,.0f} ticks/s (target >= 10,000); in-memory stages "
                  f"{in_memory:,.0f} ticks/s; worker / in-memory = {rate / in_memory:.2f}")


def latency(bootstrap: str, workdir: Path, n_jobs: int, speed: float) -> None:
    ticks = synthetic_ticks(SyntheticMarketSpec(seed=2, n_markets=4, days=6, tick_seconds=300))
    data = build_market_data(ticks, 3600)
    spec = WorkloadSpec(seed=2, workload_range=(20.0, 40.0), slack_range=(2.0, 2.5),
                        n_max_choices=(1, 2))
    jobs = generate_jobs(data, n_jobs, spec)
    settings = settings_for(bootstrap, workdir, write_catalogue(list(data.markets)))
    from streams.kafka.topics import ensure_topics

    asyncio.run(ensure_topics(settings))
    worker = start_worker(settings, workdir)
    try:
        time.sleep(8.0)
        asyncio.run(publish_replay(settings, trace_events(ticks, jobs), speed=speed))
        time.sleep(5.0)
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    tick_log = asyncio.run(timestamps(settings, settings.topics.market_ticks, 2.0))
    epochs = [e for _, e in asyncio.run(timestamps(settings, settings.topics.job_events, 2.0))
              if isinstance(e, EpochClosed)]
    decisions = asyncio.run(timestamps(settings, settings.topics.decisions, 2.0))
    last_decision: dict[int, int] = {}
    active: dict[int, int] = {}
    for ts, d in decisions:
        last_decision[d.epoch] = max(last_decision.get(d.epoch, 0), ts)
        active[d.epoch] = active.get(d.epoch, 0) + 1
    by_market: dict[str, list[tuple[float, int]]] = {}
    for ts, tick in tick_log:
        by_market.setdefault(tick.market, []).append((tick.event_time.timestamp(), ts))
    latencies = []
    for epoch in {e.epoch: e for e in epochs}.values():
        boundary = epoch.event_time.timestamp()
        if epoch.epoch not in last_decision:
            continue
        closing = max(next(ts for t, ts in series if t > boundary)
                      for series in by_market.values())
        latencies.append((last_decision[epoch.epoch] - closing) / 1000.0)
    values = np.array(latencies)
    busiest = max(active.values()) if active else 0
    console.print(f"latency over {len(values)} epochs with up to {busiest} jobs deciding per "
                  f"epoch: p50 {np.percentile(values, 50) * 1000:.0f} ms, p99 "
                  f"{np.percentile(values, 99) * 1000:.0f} ms (target p99 <= 500 ms)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=float, default=5.0, help="throughput market length")
    parser.add_argument("--jobs", type=int, default=100, help="concurrent jobs for latency")
    parser.add_argument("--speed", type=float, default=3600.0,
                        help="latency replay pace, event-time seconds per second")
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
        throughput(bootstrap, workdir, args.days)
        latency(bootstrap, workdir, args.jobs, args.speed)


if __name__ == "__main__":
    main()
