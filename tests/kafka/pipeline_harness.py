"""Running real workers against the session broker: fresh topics, worker processes, readers."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from aiokafka import AIOKafkaProducer

from solver.market import Market
from solver.synthetic import SyntheticMarketSpec
from streams.contract import DeadLetter, Envelope, ProvisioningDecision
from streams.kafka.clients import read_events
from streams.kafka.partitions import partition_for
from streams.pipeline.decision_encoder import allocation_rows
from streams.pipeline.trace_events import ReplayEvent, trace_events
from streams.settings import Settings, Topics, env_name, write_catalogue
from tests.scenarios import synthetic

REPO = Path(__file__).resolve().parents[2]
SNAPSHOT_KEY = "test-snapshot-key-0123456789"
"""The workers' snapshot key, unless a test gives its own (or runs them without one)."""


@dataclass
class Pipeline:
    """One isolated pipeline: its own topics, consumer group and catalogue."""

    bootstrap: str
    workdir: Path
    catalogue: tuple[Market, ...]
    policy: str = "greedy"
    job_partitions: int = 1
    market_partitions: int = 2
    options: dict[str, object] = field(default_factory=dict)
    """Further worker settings, by field name (e.g. ``snapshot_every_epochs``)."""
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def __post_init__(self) -> None:
        tag = uuid.uuid4().hex[:8]
        self.topics = Topics(**{name: f"{tag}.{name}" for name in Topics.model_fields})
        self.app_id = f"spotsched-test-{tag}"
        self.markets_file = self.workdir / "markets.json"
        self.markets_file.write_text(write_catalogue(list(self.catalogue)))
        if not self.options.get("insecure_unsigned_snapshots"):
            self.options.setdefault("snapshot_key", SNAPSHOT_KEY)

    @property
    def settings(self) -> Settings:
        return Settings(bootstrap_servers=self.bootstrap, topics=self.topics,
                        job_partitions=self.job_partitions,
                        market_partitions=self.market_partitions,
                        markets_file=self.markets_file, policy=self.policy, app_id=self.app_id,
                        **self.options)

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SPOTSCHED_")}
        env.update({
            "SPOTSCHED_BOOTSTRAP_SERVERS": self.bootstrap,
            "SPOTSCHED_JOB_PARTITIONS": str(self.job_partitions),
            "SPOTSCHED_MARKET_PARTITIONS": str(self.market_partitions),
            "SPOTSCHED_APP_ID": self.app_id,
            "PYTHONPATH": str(REPO),
        })
        for name in Topics.model_fields:
            env[f"SPOTSCHED_TOPICS__{name.upper()}"] = getattr(self.topics, name)
        env.update({env_name(name): str(value) for name, value in self.options.items()})
        return env

    def spotsched(self, *args: str, timeout: float = 300) -> str:
        done = subprocess.run([sys.executable, "-m", "streams", *args], env=self.env(),
                              cwd=self.workdir, capture_output=True, text=True,
                              timeout=timeout, check=False)
        if done.returncode != 0:
            raise AssertionError(f"spotsched {' '.join(args)} failed:\n{done.stdout}\n"
                                 f"{done.stderr}")
        return done.stdout

    def start_worker(self) -> subprocess.Popen[bytes]:
        n = len(self.workers)
        log = (self.workdir / f"worker-{n}.log").open("wb")
        process = subprocess.Popen(
            [sys.executable, "-m", "streams", "worker", "--markets-file", str(self.markets_file),
             "--policy", self.policy, "--app-id", self.app_id,
             "--data-dir", str(self.workdir / f"worker-{n}")],
            env=self.env(), cwd=self.workdir, stdout=log, stderr=subprocess.STDOUT)
        self.workers.append(process)
        return process

    def wait_until_joined(self, process: subprocess.Popen[bytes], timeout: float = 60) -> None:
        log = self.workdir / f"worker-{self.workers.index(process)}.log"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise AssertionError(f"worker exited early:\n{log.read_text()[-3000:]}")
            if "Worker ready" in log.read_text(errors="replace"):
                return
            time.sleep(0.2)
        raise AssertionError(f"worker not ready after {timeout} s:\n{log.read_text()[-3000:]}")

    def stop_workers(self) -> None:
        for process in self.workers:
            if process.poll() is None:
                process.terminate()
        for process in self.workers:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()

    def worker_logs(self) -> str:
        return "\n".join(self.worker_log(n)[-4000:] for n in range(len(self.workers)))

    def worker_log(self, n: int) -> str:
        return (self.workdir / f"worker-{n}.log").read_text(errors="replace")

    def read(self, topic: str, idle: float = 3.0) -> list[Envelope]:
        async def collect() -> list[Envelope]:
            return [e async for e in read_events(self.settings, topic, idle_timeout=idle)]
        return asyncio.run(collect())

    def decisions(self) -> list[ProvisioningDecision]:
        return [e for e in self.read(self.topics.decisions)
                if isinstance(e, ProvisioningDecision)]

    def dead_letters(self) -> list[DeadLetter]:
        return [e for e in self.read(self.topics.dead_letters) if isinstance(e, DeadLetter)]

    def wait_for_rows(self, expected: Iterable[tuple], timeout: float = 180) -> list[tuple]:
        """Poll the decisions topic until it holds every expected row (or time runs out)."""
        want = set(expected)
        deadline = time.monotonic() + timeout
        rows: list[tuple] = []
        while time.monotonic() < deadline:
            rows = allocation_rows(self.decisions())
            if want <= set(rows):
                return rows
            for process in self.workers:
                if process.poll() not in (None, -9, -15, 0):
                    raise AssertionError(f"a worker died:\n{self.worker_logs()}")
            time.sleep(1.0)
        missing = sorted(want - set(rows))[:5]
        raise AssertionError(f"{len(want - set(rows))} decisions missing, e.g. {missing}\n"
                             f"{self.worker_logs()}")


async def publish_raw(pipeline: Pipeline, messages: Iterable[tuple[str, str, bytes]]) -> None:
    """Raw bytes to the partition their key maps to, as any producer would send them."""
    counts = {pipeline.topics.market_ticks: pipeline.market_partitions,
              pipeline.topics.job_events: pipeline.job_partitions}
    producer = AIOKafkaProducer(**pipeline.settings.kafka_options(), max_request_size=2**21)
    await producer.start()
    try:
        for topic, key, raw in messages:
            await producer.send_and_wait(topic, raw, key=key.encode(),
                                         partition=partition_for(key, counts[topic]))
    finally:
        await producer.stop()


def synthetic_events(spec: SyntheticMarketSpec, n_jobs: int) -> list[ReplayEvent]:
    """The events of a synthetic market and ``n_jobs`` jobs on it, as a replay sends them."""
    market = synthetic(spec.seed, spec.n_markets, spec.days, n_jobs,
                       tick_seconds=spec.tick_seconds)
    return list(trace_events(market.ticks, market.jobs))


def synthetic_expectation(pipeline: Pipeline, workdir: Path, spec: SyntheticMarketSpec,
                          n_jobs: int) -> list[tuple]:
    """The decision rows of the same synthetic market and jobs replayed in-process."""
    out = workdir / "inproc.jsonl"
    pipeline.spotsched("replay", "--synthetic-markets", str(spec.n_markets), "--days",
                       str(spec.days), "--seed", str(spec.seed), "--n-jobs", str(n_jobs),
                       "--policy", pipeline.policy, "--job-partitions",
                       str(pipeline.job_partitions), "--decisions", str(out))
    return rows_from_jsonl(out)


def rows_from_jsonl(path: Path) -> list[tuple]:
    import json

    return sorted((d["epoch"], d["job_id"], d["market"], d["spot"], d["on_demand"])
                  for d in map(json.loads, path.read_text().splitlines()))


def wait_for(read, done, timeout: float = 90.0):
    """``read()`` once a second until ``done`` accepts its value (asserted after ``timeout``)."""
    deadline = time.monotonic() + timeout
    value = read()
    while not done(value) and time.monotonic() < deadline:
        time.sleep(1.0)
        value = read()
    assert done(value), value
    return value
