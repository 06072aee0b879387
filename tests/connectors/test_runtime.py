"""The connector runtime on a real broker: once-only application, commits after applying,
retries, dead letters, crash points, observations, signals and metrics."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from connectors.base import Applied, FatalError, PermanentError, TransientError
from connectors.metrics import OUTCOMES
from streams.contract import (
    AvailabilityTick,
    DeadLetter,
    JobProgress,
    PriceTick,
    ProvisioningDecision,
)
from tests.connectors.helpers import (
    MARKET,
    committed,
    decision,
    final_holdings,
    publish,
    read_all,
    wait_until,
)
from tests.connectors.memory_connector import MemoryConnector
from tests.connectors.runtime_harness import (
    group_of,
    outcome_count,
    run_until_handled,
    sample,
)

pytestmark = pytest.mark.kafka

REPO = Path(__file__).resolve().parents[2]
DECISIONS = [decision(f"job-{n % 3}", epoch=480000 + n // 3, spot=n % 2, on_demand=1)
             for n in range(12)]


class Crash(Exception):
    """Stands for the process dying at a step of the runtime."""


def crash_at(step: str, key: str):
    def hook(at: str, d: ProvisioningDecision) -> None:
        if at == step and d.idempotency_key == key:
            raise Crash(f"{step} {key}")
    return hook


async def test_each_decision_is_applied_once_in_order_and_committed(kafka_settings, tmp_path,
                                                                   caplog):
    topic = kafka_settings.topics.decisions
    await publish(kafka_settings, topic, DECISIONS)
    connector = MemoryConnector()
    registry = await run_until_handled(kafka_settings, connector, len(DECISIONS), tmp_path)
    assert connector.decisions == DECISIONS
    assert outcome_count(registry, "memory", "applied") == 12
    assert sample(registry, "spotsched_connector_apply_seconds_count", "memory") == 12
    # Every decision again (new offsets, same keys): all skipped, nothing re-applied.
    await publish(kafka_settings, topic, DECISIONS)
    caplog.set_level(logging.WARNING, "connectors.runtime")
    again = await run_until_handled(kafka_settings, connector, len(DECISIONS), tmp_path)
    assert connector.decisions == DECISIONS
    assert outcome_count(again, "memory", "skipped") == 12
    assert outcome_count(again, "memory", "applied") == 0
    skips = [r.getMessage() for r in caplog.records if "skipped" in r.getMessage()]
    assert len(skips) == 12  # each a warning; the log's rate limit samples them
    assert skips[0] == f"decision {DECISIONS[0].idempotency_key} skipped: already applied " \
        f"(recorded in {tmp_path / group_of(kafka_settings)}.applied.sqlite3)"


async def test_a_record_made_on_another_topic_is_set_aside_not_taken_for_this_ones(
        kafka_settings, fresh_topic_factory, tmp_path, caplog):
    await publish(kafka_settings, kafka_settings.topics.decisions, DECISIONS)
    first = MemoryConnector()
    await run_until_handled(kafka_settings, first, len(DECISIONS), tmp_path, group="origin")
    # The same decisions on another topic (as after a fresh broker, or the topic created
    # again): same group, same data directory, so the same record of applied keys.
    topics = kafka_settings.topics.model_copy(
        update={"decisions": await fresh_topic_factory(prefix="decisions")})
    moved = kafka_settings.model_copy(update={"topics": topics})
    await publish(moved, moved.topics.decisions, DECISIONS)
    caplog.set_level(logging.WARNING, "connectors.runtime")
    second = MemoryConnector()
    registry = await run_until_handled(moved, second, len(DECISIONS), tmp_path, group="origin")
    assert second.decisions == DECISIONS
    assert outcome_count(registry, "memory", "applied") == 12
    assert outcome_count(registry, "memory", "skipped") == 0
    (line,) = [r.getMessage() for r in caplog.records if "set aside" in r.getMessage()]
    (aside,) = tmp_path.glob("origin.applied.sqlite3.set-aside-*[0-9]")
    assert line.startswith(f"records not made on topic {moved.topics.decisions} (id ")
    assert f": {tmp_path / 'origin.applied.sqlite3'} (made on topic " \
        f"{kafka_settings.topics.decisions} (id " in line
    assert line.endswith(f" as {aside.name}")


async def test_retries_then_dead_letters_keep_the_stream_flowing(kafka_settings, tmp_path):
    flaky, broken, hopeless = DECISIONS[:3]
    connector = MemoryConnector({
        flaky.idempotency_key: [TransientError("throttled"), TransientError("throttled")],
        broken.idempotency_key: [PermanentError("market='x': expected an aws market")],
        hopeless.idempotency_key: [TransientError("endpoint down")] * 3,
    })
    tick = PriceTick(event_time=1.7e9, market=MARKET, spot_price=1.0)
    messages = [flaky, broken, hopeless, b"{not json", tick, DECISIONS[3]]
    await publish(kafka_settings, kafka_settings.topics.decisions, messages)
    registry = await run_until_handled(kafka_settings, connector, len(messages), tmp_path)
    assert connector.decisions == [flaky, DECISIONS[3]]
    count = lambda name, **labels: sample(registry, name, "memory", **labels)  # noqa: E731
    assert count("spotsched_connector_retries_total") == 2 + 2
    assert count("spotsched_connector_decisions_failed_total", kind="permanent") == 1
    assert count("spotsched_connector_decisions_failed_total", kind="exhausted") == 1
    assert count("spotsched_connector_decisions_failed_total", kind="invalid") == 2
    assert [outcome_count(registry, "memory", outcome) for outcome in OUTCOMES] == [2, 0, 4]
    letters = await read_all(kafka_settings, kafka_settings.topics.dead_letters)
    assert all(isinstance(d, DeadLetter) for d in letters)
    assert [(d.offset, d.error_type) for d in letters] == [
        (1, "PermanentError"), (2, "TransientError"), (3, "EventError"), (4, "EventError")]
    reasons = [d.reason for d in letters]
    assert reasons[0] == "market='x': expected an aws market"
    assert reasons[1] == "gave up after 3 attempts: endpoint down"
    assert "not valid JSON" in reasons[2]
    assert reasons[3] == "type='price_tick': expected 'provisioning_decision' on " \
        f"{kafka_settings.topics.decisions}"
    assert letters[2].original() == b"{not json"


async def test_a_connector_bug_dead_letters_one_decision_and_a_fatal_error_stops(
        kafka_settings, tmp_path):
    buggy, fine, fatal = DECISIONS[:3]
    connector = MemoryConnector({buggy.idempotency_key: [ZeroDivisionError("a bug")],
                                 fatal.idempotency_key: [FatalError("AuthFailure")]})
    await publish(kafka_settings, kafka_settings.topics.decisions, [buggy, fine, fatal])
    with pytest.raises(FatalError, match="AuthFailure"):
        await run_until_handled(kafka_settings, connector, 3, tmp_path)
    assert connector.decisions == [fine]
    (letter,) = await read_all(kafka_settings, kafka_settings.topics.dead_letters)
    assert (letter.offset, letter.error_type, letter.reason) == (0, "ZeroDivisionError",
                                                               "a bug")
    assert await committed(kafka_settings, group_of(kafka_settings)) == 2  # the fatal one waits
    registry = await run_until_handled(kafka_settings, connector, 1, tmp_path)
    assert connector.decisions == [fine, fatal]
    assert outcome_count(registry, "memory", "applied") == 1


async def test_a_crash_after_recording_skips_the_decision_and_one_before_reapplies_it(
        kafka_settings, tmp_path):
    await publish(kafka_settings, kafka_settings.topics.decisions, DECISIONS)
    connector = MemoryConnector()
    recorded = DECISIONS[4].idempotency_key
    with pytest.raises(Crash):
        await run_until_handled(kafka_settings, connector, 12, tmp_path,
                                crash_hook=crash_at("recorded", recorded))
    applied = DECISIONS[7].idempotency_key
    with pytest.raises(Crash):
        await run_until_handled(kafka_settings, connector, 12, tmp_path,
                                crash_hook=crash_at("applied", applied))
    registry = await run_until_handled(kafka_settings, connector, 12 - 7, tmp_path)
    keys = [d.idempotency_key for d in connector.decisions]
    assert keys.count(recorded) == 1
    assert keys.count(applied) == 2
    assert keys == [d.idempotency_key for d in DECISIONS[:8]] + [
        d.idempotency_key for d in DECISIONS[7:]]
    assert outcome_count(registry, "memory", "skipped") == 0
    assert connector.holdings == final_holdings(DECISIONS)


class Reporting:
    """Reports a refused spot tick and the job's progress for every decision."""

    name = "reporting"

    async def apply(self, d: ProvisioningDecision) -> Applied:
        return Applied(refused=1, events=(
            AvailabilityTick(event_time=d.slot_start, market=d.market, available=0,
                             reason="refused"),
            JobProgress(event_time=d.slot_start, job_id=d.job_id, work_done=float(d.epoch))))

    async def close(self) -> None:
        return None


async def test_observations_are_published_to_the_topics_the_pipeline_reads(
        kafka_settings, tmp_path):
    await publish(kafka_settings, kafka_settings.topics.decisions, DECISIONS[:3])
    await run_until_handled(kafka_settings, Reporting(), 3, tmp_path)
    ticks = await read_all(kafka_settings, kafka_settings.topics.market_ticks)
    progress = await read_all(kafka_settings, kafka_settings.topics.job_events)
    assert [(t.market, t.reason) for t in ticks] == [(MARKET, "refused")] * 3
    assert [(p.job_id, p.work_done) for p in progress] == [
        (d.job_id, float(d.epoch)) for d in DECISIONS[:3]]


def test_the_log_worker_serves_metrics_and_stops_cleanly_on_sigterm(kafka_settings, tmp_path):
    asyncio.run(publish(kafka_settings, kafka_settings.topics.decisions, DECISIONS))
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPOTSCHED_")}
    env.update({"PYTHONPATH": str(REPO),
                "SPOTSCHED_BOOTSTRAP_SERVERS": kafka_settings.bootstrap_servers,
                "SPOTSCHED_TOPICS__DECISIONS": kafka_settings.topics.decisions,
                "SPOTSCHED_TOPICS__DEAD_LETTERS": kafka_settings.topics.dead_letters})
    command = [sys.executable, "-m", "streams", "connector", "log", "--data-dir",
               str(tmp_path / "log"), "--metrics-port", str(port), "--group", "log-test"]

    first = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    metrics = _wait_for_metrics(
        port, 'spotsched_connector_decisions_total{connector="log",outcome="applied"} 12.0', first)
    assert 'spotsched_connector_decisions_failed_total{connector="log",kind="invalid"} 0.0' \
        in metrics
    first.send_signal(signal.SIGTERM)
    out, err = first.communicate(timeout=30)
    assert first.returncode == 0, err
    assert len(out.splitlines()) == 12
    assert "connector log stopped" in err
    assert asyncio.run(committed(kafka_settings, "log-test")) == len(DECISIONS)



def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_metrics(port: int, line: str, process: subprocess.Popen[str]) -> str:
    deadline = time.monotonic() + 60
    text = ""
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"connector exited: {process.communicate()[1][-3000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
                text = r.read().decode()
        except OSError:
            text = ""
        if line in text:
            return text
        time.sleep(0.2)
    raise AssertionError(f"{line!r} not in /metrics:\n{text}")


async def test_stopping_during_a_retry_wait_leaves_the_decision_uncommitted(
        kafka_settings, tmp_path):
    from prometheus_client import CollectorRegistry

    from connectors.metrics import ConnectorMetrics
    from connectors.runtime import ConnectorRuntime, RuntimeOptions
    from connectors.store import AppliedKeys

    first = DECISIONS[0]
    await publish(kafka_settings, kafka_settings.topics.decisions, [first])
    connector = MemoryConnector({first.idempotency_key: [TransientError("throttled")]})
    registry = CollectorRegistry()
    runtime = ConnectorRuntime(
        connector, kafka_settings,
        RuntimeOptions(group_id="stop-test", backoff_seconds=3600, backoff_max_seconds=3600,
                       poll_seconds=0.1),
        AppliedKeys(tmp_path / "applied.sqlite3"), ConnectorMetrics(registry, "memory"))
    stop = asyncio.Event()
    task = asyncio.create_task(runtime.run(stop))
    await wait_until(lambda: sample(registry, "spotsched_connector_retries_total", "memory") == 1)
    stop.set()
    # The retry waits an hour: the runtime returns at all only because stopping cut the wait.
    await asyncio.wait_for(task, 120)
    assert connector.decisions == []
    assert await committed(kafka_settings, "stop-test") is None
