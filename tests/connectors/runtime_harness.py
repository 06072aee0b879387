"""Running a connector runtime in-process until it has handled a number of messages."""

from __future__ import annotations

import asyncio
from pathlib import Path

from prometheus_client import CollectorRegistry

from connectors.base import Connector
from connectors.metrics import OUTCOMES, ConnectorMetrics
from connectors.runtime import ConnectorRuntime, CrashHook, RuntimeOptions
from connectors.store import AppliedKeys
from streams.settings import Settings
from tests.connectors.helpers import wait_until


def sample(registry: CollectorRegistry, name: str, connector: str, **labels: str) -> float:
    return registry.get_sample_value(name, {"connector": connector, **labels}) or 0.0


def group_of(settings: Settings) -> str:
    """The consumer group of a test's runtime: its own, as its decisions topic is."""
    return f"connector-test.{settings.topics.decisions}"


def handled(registry: CollectorRegistry, connector: str) -> int:
    """Messages the runtime has finished with: applied, skipped or dead-lettered."""
    return int(sum(outcome_count(registry, connector, outcome) for outcome in OUTCOMES))


def outcome_count(registry: CollectorRegistry, connector: str, outcome: str) -> float:
    """Messages of the decisions topic that ended ``outcome``."""
    return sample(registry, "spotsched_connector_decisions_total", connector, outcome=outcome)


async def run_until_handled(
    settings: Settings,
    connector: Connector,
    messages: int,
    data_dir: Path,
    group: str | None = None,
    crash_hook: CrashHook | None = None,
    max_attempts: int = 3,
    timeout: float = 60.0,
) -> CollectorRegistry:
    """Run until ``messages`` were handled (or the runtime stopped); re-raise its error.
    ``group`` defaults to :func:`group_of`."""
    group = group or group_of(settings)
    registry = CollectorRegistry()
    keys = AppliedKeys(data_dir / f"{group}.applied.sqlite3")
    runtime = ConnectorRuntime(
        connector, settings,
        RuntimeOptions(group_id=group, max_attempts=max_attempts, backoff_seconds=0.01,
                       poll_seconds=0.1, crash_hook=crash_hook),
        keys, ConnectorMetrics(registry, connector.name))
    stop = asyncio.Event()
    task = asyncio.create_task(runtime.run(stop))
    try:
        await wait_until(lambda: task.done() or handled(registry, connector.name) >= messages,
                         timeout, f"{messages} messages handled")
        stop.set()
        await task
    finally:
        stop.set()
        if not task.done():
            task.cancel()
        keys.close()
    return registry
