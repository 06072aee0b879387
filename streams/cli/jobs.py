"""``spotsched submit`` and ``spotsched cancel``: job events onto Kafka."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from streams.contract import JobEvent

from streams.cli.app import app
from streams.cli.common import broker_logging, command_settings
from streams.cli.errors import console, fail
from streams.cli.options import Broker


def _publish(bootstrap_servers: str | None, events: Callable[[], list[JobEvent]]) -> int:
    """Build the job events, then publish them; a bad event or an unreachable broker exits
    with a one-line error."""
    import asyncio

    from streams.kafka.clients import publish_job_events
    from streams.kafka.connect import BrokerError

    settings = command_settings(bootstrap_servers=bootstrap_servers)
    broker_logging()
    try:
        return asyncio.run(publish_job_events(settings, events()))
    except (ValueError, BrokerError) as exc:
        fail(exc)


@app.command()
def submit(
    jobs: Annotated[Path, typer.Argument(help="JSON or CSV file of jobs.", exists=True,
                                         dir_okay=False)],
    bootstrap_servers: Broker = None,
) -> None:
    """Submit the jobs of a file.

    Each job is checked against the event contract, then its submission published."""

    def submissions() -> list[JobEvent]:
        import time

        from streams.replay import submission
        from streams.traces.jobs_file import load_jobs

        now = time.time()
        return [submission(job, min(now, job.release)) for job in load_jobs(jobs)]

    count = _publish(bootstrap_servers, submissions)
    console.print(f"published {count} job submissions")


@app.command()
def cancel(
    job_id: Annotated[str, typer.Argument(help="Job to cancel.")],
    reason: Annotated[str | None, typer.Option(help="Why.")] = None,
    bootstrap_servers: Broker = None,
) -> None:
    """Publish a job cancellation."""

    def cancellation() -> list[JobEvent]:
        import time

        from pydantic import ValidationError

        from streams.contract import JobCancelled, describe_validation_error

        try:
            return [JobCancelled(event_time=time.time(), job_id=job_id, reason=reason)]
        except ValidationError as exc:
            raise ValueError(describe_validation_error(exc)) from None

    _publish(bootstrap_servers, cancellation)
    console.print(f"cancelled {job_id}")
