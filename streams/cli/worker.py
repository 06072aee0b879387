"""``spotsched worker``: a scheduler worker on Kafka."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from solver.policies.spec import RECOMMENDED
from streams.cli.app import app
from streams.cli.common import broker_logging, command_settings
from streams.cli.errors import fail
from streams.cli.framework_logs import quiet_frameworks
from streams.cli.options import (
    DEFAULT_LOG_LEVEL,
    Broker,
    LogLevel,
    MarketPartitions,
    MarketsFile,
    MetricsHost,
    MetricsPort,
    SlotSecondsSetting,
    positive_count,
    writes_dir,
)


def worker_client_id() -> str:
    """The worker's Kafka client id, which ``spotsched status`` lists: its host and process,
    ``spotsched-worker-HOST-PID``."""
    import os
    import socket

    return f"spotsched-worker-{socket.gethostname()}-{os.getpid()}"


@app.command()
def worker(
    bootstrap_servers: Broker = None,
    markets_file: MarketsFile = None,
    policy: Annotated[str | None, typer.Option(
        metavar="<spec>", help="Scheduling policy NAME[:key=value,...] (env SPOTSCHED_POLICY; "
        f"default: {RECOMMENDED}).")] = None,
    slot_seconds: SlotSecondsSetting = None,
    job_partitions: Annotated[int | None, typer.Option(
        help="Partitions of job events (env SPOTSCHED_JOB_PARTITIONS).",
        callback=positive_count)] = None,
    market_partitions: MarketPartitions = None,
    app_id: Annotated[str | None, typer.Option(help="Consumer group / app id.")] = None,
    data_dir: Annotated[Path | None, writes_dir("Local state directory.")] = None,
    metrics_port: MetricsPort = None,
    metrics_host: MetricsHost = None,
    insecure_unsigned_snapshots: Annotated[bool | None, typer.Option(
        "--insecure-unsigned-snapshots", help="Run without a snapshot key: snapshots written "
        "unsigned and restored unauthenticated, so whoever can write the snapshot topics sets "
        "the stages' state (env SPOTSCHED_INSECURE_UNSIGNED_SNAPSHOTS; without it, the worker "
        "needs SPOTSCHED_SNAPSHOT_KEY).")] = None,
    log_level: LogLevel = DEFAULT_LOG_LEVEL,
    verbose: Annotated[bool, typer.Option(
        "--verbose", help="Also the frameworks' own lines: Faust's startup, the Kafka "
        "client's subscriptions and group joins.")] = False,
) -> None:
    """Run a scheduler worker until SIGINT or SIGTERM.

    A Faust worker on the market ticks and job events; start more to scale out."""
    import asyncio
    import gc

    import uvloop

    from streams.kafka.connect import BrokerError
    from streams.kafka.topics import ensure_topics
    from streams.metrics_registry import service_registry
    from streams.runners.collector import defer_full_collections
    from streams.runners.kafka import RateLimitedWorker, create_app
    from streams.runners.warm_up import warm_up
    from streams.runtime import serve_metrics

    # libuv's event loop: a worker spends about as much CPU outside its stages (the loop, the
    # Kafka clients' I/O) as in them, and this loop takes less of it (docs/operations.md,
    # "What runs where").
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    settings = command_settings(
        bootstrap_servers=bootstrap_servers, markets_file=markets_file, policy=policy,
        slot_seconds=slot_seconds, job_partitions=job_partitions,
        market_partitions=market_partitions, app_id=app_id, data_dir=data_dir,
        metrics_port=metrics_port, metrics_host=metrics_host,
        insecure_unsigned_snapshots=insecure_unsigned_snapshots)
    broker_logging(log_level)
    try:
        settings.catalogue()  # a bad catalogue or no snapshot key is told before the broker
        settings.snapshot_keys()
        asyncio.run(ensure_topics(settings))
        registry = service_registry("worker")
        faust_app = create_app(settings, registry)
        faust_app.conf.broker_client_id = worker_client_id()
        serve_metrics(settings, registry)
    except (ValueError, OSError, BrokerError) as exc:
        fail(exc)
    warm_up(settings.slot_seconds, settings.policy_spec())
    # What is loaded by now lives as long as the worker: out of the collector's sight, a full
    # collection scans the stages' state alone, and runs where it delays no decision.
    gc.collect()
    gc.freeze()
    defer_full_collections()
    worker = RateLimitedWorker(faust_app, loglevel=log_level, quiet=True)
    if not verbose:
        quiet_frameworks(log_level)
    worker.execute_from_commandline()
