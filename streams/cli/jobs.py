"""``spotsched submit``, ``cancel``, ``progress`` and ``finish``: job events onto Kafka.

``submit`` waits for the service's answer to each job. The others are stamped ``--at TIME``,
by default the service's own time (the boundary of the last epoch closed; the wall clock
before any) or the job's submission if later, and refuse a job the service was never
given."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from streams.contract import JobEvent, JobSubmitted
    from streams.kafka.answers import Answer
    from streams.settings import Settings

from streams.cli.app import app
from streams.cli.common import broker_logging, counted, one_shot_settings, run_on_broker
from streams.cli.errors import ExitCode, console, diagnostics, fail
from streams.cli.options import Broker, FlagError, at_least

DEFAULT_WAIT_SECONDS = 60.0


def event_time(value: str) -> datetime:
    """The parser of ``--at``: an ISO-8601 time (UTC when it names no zone) or Unix seconds."""
    from datetime import UTC

    try:
        at = (datetime.fromtimestamp(float(value), UTC)
              if value.replace(".", "", 1).isdigit() else datetime.fromisoformat(value))
    except (ValueError, OverflowError, OSError):
        raise FlagError(f"--at {value}: expected an ISO-8601 time such as "
                        "2023-03-08T12:00:00Z, or Unix seconds") from None
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


At = Annotated[datetime | None, typer.Option(
    "--at", metavar="<time>", parser=event_time,
    help="Event time, ISO-8601 (UTC unless it says) or Unix seconds. Default: the service's "
    "time, the start of the last epoch closed (the wall clock before any), or the job's "
    "submission if later.")]
JobId = Annotated[str, typer.Argument(help="The job's id.")]


def _publish(settings: Settings, events: list[JobEvent]) -> None:
    from streams.kafka.clients import publish_job_events

    run_on_broker(publish_job_events(settings, events))


@app.command()
def submit(
    jobs: Annotated[Path, typer.Argument(help="JSON or CSV file of jobs.", exists=True,
                                         dir_okay=False)],
    bootstrap_servers: Broker = None,
    no_wait: Annotated[bool, typer.Option(
        "--no-wait", help="Publish and exit without waiting for the service's answers.")] = False,
    wait: Annotated[float, typer.Option(
        "--wait", metavar="<seconds>", help="Longest wait for the answers.",
        callback=at_least(0.0, "a number of seconds >= 0"))] = DEFAULT_WAIT_SECONDS,
) -> None:
    """Submit a file's jobs and wait for the service's answers.

    Each job is checked against the event contract and published, stamped with its release
    (or now, if earlier). The answer: accepted at an epoch, queued until its release's epoch,
    or rejected and why. Exit status 1 when a job is rejected."""
    settings = one_shot_settings(bootstrap_servers=bootstrap_servers)
    broker_logging()
    submissions = _submissions(jobs)
    if no_wait:
        _publish(settings, list(submissions))
        console.print(f"published {counted(len(submissions), 'job submission')} to "
                      f"{settings.topics.job_events}; `spotsched jobs` shows what the service "
                      "made of them", highlight=False, soft_wrap=True)
        return
    answers = run_on_broker(_submit_and_wait(settings, submissions, wait))
    for answer in answers:
        console.print(f"{answer.job_id}: {answer.text}", highlight=False, soft_wrap=True)
    rejected = sum(a.verdict == "rejected" for a in answers)
    console.print(f"{counted(len(answers), 'job')} submitted: {len(answers) - rejected} "
                  f"accepted or queued, {rejected} rejected", highlight=False)
    if rejected:
        raise typer.Exit(ExitCode.REJECTED)


def _submissions(path: Path) -> list[JobSubmitted]:
    """The file's jobs as submissions; a bad one exits with a one-line error."""
    import time

    from streams.replay import submission
    from streams.traces.jobs_file import load_jobs

    now = time.time()
    try:
        return [submission(job, min(now, job.release)) for job in load_jobs(path)]
    except ValueError as exc:
        fail(exc)


async def _submit_and_wait(settings: Settings, submissions: list[JobSubmitted],
                           wait: float) -> list[Answer]:
    from streams.kafka.answers import await_answers
    from streams.kafka.clients import publish_job_events
    from streams.kafka.topic_reader import end_offsets

    topics = settings.topics
    since = await end_offsets(settings, [topics.decisions, topics.dead_letters])
    placed = await publish_job_events(settings, submissions)
    diagnostics.print(f"published {counted(len(placed), 'job submission')} to "
                      f"{topics.job_events}; waiting up to {wait:g} s for the service's answers "
                      "(--no-wait: do not)", highlight=False, soft_wrap=True)
    return await await_answers(settings, submissions, placed, since, wait)


def _stamped(settings: Settings, job_id: str, at: datetime | None) -> tuple[datetime, str]:
    """The time of an event on ``job_id`` and where it comes from; exits with one line when the
    service never had the job or ``at`` is before its submission."""
    from datetime import UTC

    from streams.contract import JobSubmitted
    from streams.kafka.answers import last_epoch
    from streams.kafka.topic_reader import read_topics

    async def find() -> tuple[JobSubmitted | None, datetime | None]:
        submitted = None
        async for _, event in read_topics(settings, [settings.topics.job_events],
                                          ("job_submitted",)):
            if isinstance(event, JobSubmitted) and event.job_id == job_id:
                submitted = submitted or event
        epoch = await last_epoch(settings) if at is None else None
        return submitted, epoch.event_time if epoch is not None else None

    submitted, service_time = run_on_broker(find())
    if submitted is None:
        fail(ValueError(f"job {job_id!r}: never submitted to {settings.topics.job_events} at "
                        f"{settings.bootstrap_servers}; `spotsched jobs` lists the jobs"))
    if at is not None:
        if at < submitted.event_time:
            fail(ValueError(f"--at {at.isoformat()}: expected a time at or after the job's "
                            f"submission ({submitted.event_time.isoformat()})"))
        return at, "--at"
    if service_time is not None:
        when, source = service_time, "the service's time, its last epoch"
    else:
        when, source = datetime.now(UTC), "the wall clock: no epoch closed yet"
    if when < submitted.event_time:
        return submitted.event_time, "the job's submission, later than the service's time"
    return when, source


def _job_event(settings: Settings, make: Callable[..., JobEvent], job_id: str, at: datetime | None,
               verb: str, **fields: object) -> None:
    """Publish one event on a job the service knows, stamped by :func:`_stamped`."""
    from pydantic import ValidationError

    from streams.contract import describe_validation_error

    when, source = _stamped(settings, job_id, at)
    try:
        event = make(event_time=when, job_id=job_id, **fields)
    except ValidationError as exc:
        fail(ValueError(describe_validation_error(exc)))
    _publish(settings, [event])
    console.print(f"{verb} {job_id} at {when:%Y-%m-%d %H:%M:%S} UTC ({source}); it takes "
                  "effect at the first epoch at or after that time", highlight=False,
                  soft_wrap=True)


@app.command()
def cancel(
    job_id: JobId,
    reason: Annotated[str | None, typer.Option(help="Why.")] = None,
    at: At = None,
    bootstrap_servers: Broker = None,
) -> None:
    """Cancel a job the service knows."""
    from streams.contract import JobCancelled

    settings = one_shot_settings(bootstrap_servers=bootstrap_servers)
    broker_logging()
    _job_event(settings, JobCancelled, job_id, at, "cancelled", reason=reason)


@app.command()
def progress(
    job_id: JobId,
    work_done: Annotated[float, typer.Option(
        "--work-done", help="Cumulative work units done.",
        callback=at_least(0.0, "a number of work units >= 0"))],
    remaining: Annotated[float | None, typer.Option(
        "--remaining", help="Re-estimated work units left.",
        callback=at_least(0.0, "a number of work units >= 0"))] = None,
    at: At = None,
    bootstrap_servers: Broker = None,
) -> None:
    """Report the work a job has done (and has left)."""
    from streams.contract import JobProgress

    settings = one_shot_settings(bootstrap_servers=bootstrap_servers)
    broker_logging()
    _job_event(settings, JobProgress, job_id, at, "progress of", work_done=work_done,
               remaining_work=remaining)


@app.command()
def finish(
    job_id: JobId,
    at: At = None,
    bootstrap_servers: Broker = None,
) -> None:
    """Report a job finished."""
    from streams.contract import JobFinished

    settings = one_shot_settings(bootstrap_servers=bootstrap_servers)
    broker_logging()
    _job_event(settings, JobFinished, job_id, at, "finished")
