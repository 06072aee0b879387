"""A broker outage in the middle of a replay and of a connector run: the clients wait it out,
nothing is lost and no decision is applied twice. The outage lasts ``--outage-seconds``: 90 s
in CI (``deploy/test.sh``), shorter by default. Each test has a broker of its own, so the
session's broker stays up."""

from __future__ import annotations

import asyncio
import dataclasses
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from connectors.base import Applied
from connectors.metrics import ConnectorMetrics
from connectors.runtime import ConnectorRuntime, RuntimeOptions
from connectors.store import AppliedKeys
from deploy.kafka.devkafka import KafkaBroker, fetch_jars, kafka_home
from solver.synthetic import SyntheticMarketSpec, synthetic_ticks
from streams.contract import JobProgress, ProvisioningDecision, dump_event
from streams.kafka.topics import ensure_topics
from streams.settings import Settings, Topics
from tests.connectors.helpers import committed, publish, read_all, replay
from tests.connectors.memory_connector import MemoryConnector
from tests.kafka.pipeline_harness import Pipeline, rows_from_jsonl

pytestmark = pytest.mark.kafka

SPEC = SyntheticMarketSpec(seed=6, n_markets=2, days=4)


class Outage:
    """A broker of its own that can crash and come back on the same port and data."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.broker = KafkaBroker(fetch_jars(kafka_home()), data_dir)
        self.broker.start()
        self.port = self.broker.port

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def crash(self) -> None:
        assert self.broker.process is not None
        self.broker.process.kill()
        self.broker.process.wait()

    def restart(self) -> None:
        self.broker = KafkaBroker(fetch_jars(kafka_home()), self.data_dir, self.port)
        self.broker.start(timeout=120)

    def stop(self) -> None:
        self.broker.stop()


@pytest.fixture
def outage_seconds(request: pytest.FixtureRequest) -> float:
    """How long an outage lasts (``--outage-seconds``)."""
    return request.config.getoption("--outage-seconds")


@pytest.fixture
def outage(tmp_path_factory: pytest.TempPathFactory):
    broker = Outage(tmp_path_factory.mktemp("outage-kafka"))
    yield broker
    broker.stop()


@pytest.mark.slow  # an outage, and a replay through a worker process
def test_a_replay_rides_out_a_broker_outage(outage, outage_seconds, tmp_path):
    catalogue = tuple(t.market for t in synthetic_ticks(SPEC))
    pipeline = Pipeline(outage.bootstrap, tmp_path, catalogue, policy="greedy")
    replay_args = ["--synthetic-markets", str(SPEC.n_markets), "--days", str(SPEC.days), "--seed",
                   str(SPEC.seed), "--n-jobs", "8", "--policy", "greedy"]
    inproc = tmp_path / "inproc.jsonl"
    pipeline.spotsched("replay", *replay_args, "--decisions", str(inproc))
    expected = rows_from_jsonl(inproc)
    log = tmp_path / "replay.log"
    try:
        pipeline.wait_until_joined(pipeline.start_worker())
        # Four days of event time in about 80 s: the outage hits the middle of the replay,
        # also when a busy machine slows the worker down.
        publisher = subprocess.Popen(
            [sys.executable, "-m", "streams", "replay", *replay_args, "--bootstrap-servers",
             outage.bootstrap, "--speed", "4320"],
            env=pipeline.env(), cwd=tmp_path, stdout=log.open("wb"), stderr=subprocess.STDOUT)
        _wait(lambda: len(pipeline.decisions()) >= 10, 120, "decisions before the outage")
        worker_log = tmp_path / "worker-0.log"
        lines = worker_log.read_text(errors="replace").count("\n")
        outage.crash()
        started = time.monotonic()
        time.sleep(outage_seconds)
        assert publisher.poll() is None, log.read_text()[-3000:]
        during = worker_log.read_text(errors="replace").splitlines()[lines:]
        outage.restart()
        print(f"broker down for {time.monotonic() - started:.0f} s; the worker logged "
              f"{len(during)} lines meanwhile")
        assert publisher.wait(timeout=300) == 0, log.read_text()[-3000:]
        rows = pipeline.wait_for_rows(expected, timeout=300)
    finally:
        pipeline.stop_workers()
    assert rows == expected  # nothing lost, nothing decided twice
    assert pipeline.dead_letters() == []
    text = log.read_text()
    assert "waiting for the broker" in text and text.count("\n") < 40, text[-3000:]
    assert not any("Logging error" in line or "Traceback" in line for line in during), during
    repeats = Counter(re.sub(r"\d+", "", line) for line in during)
    assert max(repeats.values()) <= 6, repeats.most_common(3)  # one per kind per 30 s


class Gated(MemoryConnector):
    """Holds the decision ``key`` until ``gate`` opens, then reports progress for it."""

    def __init__(self, key: str) -> None:
        super().__init__()
        self.key = key
        self.reached = asyncio.Event()
        self.gate = asyncio.Event()

    async def apply(self, decision: ProvisioningDecision) -> Applied:
        applied = await super().apply(decision)
        if decision.idempotency_key != self.key:
            return applied
        self.reached.set()
        await self.gate.wait()
        progress = JobProgress(event_time=decision.slot_start, job_id=decision.job_id,
                               work_done=1.0)
        return dataclasses.replace(applied, events=(progress,))


@pytest.mark.slow  # an outage
async def test_a_connector_rides_out_a_broker_outage_applying_each_decision_once(
        outage, outage_seconds, tmp_path):
    names = {name: f"outage.{name}" for name in ("decisions", "job_events", "market_ticks",
                                                 "dead_letters")}
    settings = Settings(bootstrap_servers=outage.bootstrap, topics=Topics(**names),
                        job_partitions=1, market_partitions=1)
    await ensure_topics(settings)
    decisions = replay().decisions
    await publish(settings, settings.topics.decisions, decisions)
    middle = decisions[len(decisions) // 2]
    connector = Gated(middle.idempotency_key)
    keys = AppliedKeys(tmp_path / "applied.sqlite3")
    registry = CollectorRegistry()
    runtime = ConnectorRuntime(connector, settings,
                               RuntimeOptions(group_id="outage", poll_seconds=0.1), keys,
                               ConnectorMetrics(registry, connector.name))
    stop = asyncio.Event()
    task = asyncio.create_task(runtime.run(stop))
    try:
        await asyncio.wait_for(connector.reached.wait(), 60)
        await asyncio.to_thread(outage.crash)
        connector.gate.set()  # its progress and its commit now wait for the broker
        await asyncio.sleep(outage_seconds)
        assert not task.done()
        await asyncio.to_thread(outage.restart)
        applied = "spotsched_connector_decisions_total"
        deadline = time.monotonic() + 180
        while (registry.get_sample_value(applied, {"connector": "memory", "outcome": "applied"})
               or 0) < len(decisions):
            assert not task.done() and time.monotonic() < deadline, task
            await asyncio.sleep(0.2)
        stop.set()
        await asyncio.wait_for(task, 60)
    finally:
        stop.set()
        keys.close()
    assert connector.decisions == decisions  # each applied once, in order
    assert await committed(settings, "outage") == len(decisions)
    progress = await read_all(settings, settings.topics.job_events)
    assert [dump_event(e) for e in progress] == [dump_event(JobProgress(
        event_time=middle.slot_start, job_id=middle.job_id, work_done=1.0))]


def _wait(done, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"{what}: not reached after {timeout} s"
        time.sleep(1.0)


@pytest.mark.slow  # a broker down until submit has retried
def test_submit_waits_for_a_broker_that_comes_back(outage, tmp_path):
    pipeline = Pipeline(outage.bootstrap, tmp_path, tuple(
        t.market for t in synthetic_ticks(SPEC)))
    asyncio.run(ensure_topics(pipeline.settings))
    jobs = tmp_path / "jobs.json"
    jobs.write_text('[{"id": "j", "workload": 1.0, "release": 1.9e9, "soft_deadline": 1.90001e9,'
                    ' "hard_deadline": 1.90002e9}]')
    outage.crash()
    log = tmp_path / "submit.log"
    submit = subprocess.Popen(
        [sys.executable, "-m", "streams", "submit", str(jobs), "--no-wait"],
        env={**pipeline.env(), "SPOTSCHED_BROKER_TIMEOUT_SECONDS": "300"}, cwd=tmp_path,
        stdout=log.open("wb"), stderr=subprocess.STDOUT)
    _wait(lambda: "retrying" in log.read_text() or submit.poll() is not None, 120,
          "submit retrying")
    assert submit.poll() is None, log.read_text()
    outage.restart()
    submit.wait(timeout=120)
    output = log.read_text()
    assert submit.returncode == 0, output
    assert f"published 1 job submission to {pipeline.topics.job_events}" in output
    assert "retrying" in output and "Traceback" not in output
    (event,) = pipeline.read(pipeline.topics.job_events)
    assert event.job_id == "j"


def test_a_broker_that_stays_away_is_one_line_after_the_timeout(tmp_path):
    env = {**Pipeline("127.0.0.1:1", tmp_path, ()).env(),
           "SPOTSCHED_BROKER_TIMEOUT_SECONDS": "3"}
    done = subprocess.run([sys.executable, "-m", "streams", "cancel", "j"], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 3 and done.stdout == ""
    error = done.stderr.strip().splitlines()[-1]  # after the retries' warnings
    assert error.startswith("error: reading ")
    assert "bootstrap_servers (SPOTSCHED_BOOTSTRAP_SERVERS) 127.0.0.1:1: cannot connect" in error
    assert "gave up after" in error and "`spotsched dev kafka`" in error
    assert "Traceback" not in done.stderr
