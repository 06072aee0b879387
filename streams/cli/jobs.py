"""``spotsched submit`` and ``spotsched cancel``: job events onto Kafka."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from streams.cli.app import app
from streams.cli.common import broker_logging, command_settings
from streams.cli.errors import console, fail
from streams.cli.options import Broker


@app.command()
def submit(
    jobs: Annotated[Path, typer.Argument(help="JSON or CSV file of jobs.", exists=True,
                                         dir_okay=False)],
    bootstrap_servers: Broker = None,
) -> None:
    """Validate jobs against the event contract and publish their submissions."""
    import asyncio
    import time

    from streams.kafka.clients import publish_job_events
    from streams.kafka.connect import BrokerError
    from streams.replay import submission
    from streams.traces.jobs_file import load_jobs

    settings = command_settings(bootstrap_servers=bootstrap_servers)
    broker_logging()
    try:
        now = time.time()
        events = [submission(job, min(now, job.release)) for job in load_jobs(jobs)]
        count = asyncio.run(publish_job_events(settings, events))
    except (ValueError, BrokerError) as exc:
        fail(exc)
    console.print(f"published {count} job submissions")


@app.command()
def cancel(
    job_id: Annotated[str, typer.Argument(help="Job to cancel.")],
    reason: Annotated[str | None, typer.Option(help="Why.")] = None,
    bootstrap_servers: Broker = None,
) -> None:
    """Publish a job cancellation."""
    import asyncio
    import time

    from pydantic import ValidationError

    from streams.contract import JobCancelled, describe_validation_error
    from streams.kafka.clients import publish_job_events
    from streams.kafka.connect import BrokerError

    settings = command_settings(bootstrap_servers=bootstrap_servers)
    broker_logging()
    try:
        event = JobCancelled(event_time=time.time(), job_id=job_id, reason=reason)
    except ValidationError as exc:
        fail(ValueError(describe_validation_error(exc)))
    try:
        asyncio.run(publish_job_events(settings, [event]))
    except (ValueError, BrokerError) as exc:
        fail(exc)
    console.print(f"cancelled {job_id}")
