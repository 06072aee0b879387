"""``spotsched submit``, ``cancel``, ``progress`` and ``finish``: job events onto Kafka.

``submit`` waits for the service's answer to each job. The others are stamped ``--at TIME``,
by default the service's own time (the boundary of the last epoch closed; the wall clock
before any) or the job's submission if later, and refuse a job the service was never
given."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from streams.contract import JobEvent, JobSubmitted
    from streams.kafka.answers import Answer
    from streams.pipeline.job_book import JobBook
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
    jobs: Annotated[Path | None, typer.Argument(
        help="JSON or CSV file of jobs (or one job from --id, --workload and --deadline).",
        exists=True, dir_okay=False)] = None,
    job_id: Annotated[str | None, typer.Option(
        "--id", metavar="<id>", help="One job: its id.")] = None,
    workload: Annotated[str | None, typer.Option(
        "--workload", metavar="<units>", help="One job: its work units.")] = None,
    deadline: Annotated[str | None, typer.Option(
        "--deadline", metavar="<time>", help="One job: its soft deadline.")] = None,
    hard_deadline: Annotated[str | None, typer.Option(
        "--hard-deadline", metavar="<time>", help="One job: its hard deadline "
        "(default: --deadline).")] = None,
    release: Annotated[str | None, typer.Option(
        "--release", metavar="<time>", help="One job: its release (default: now).")] = None,
    instances: Annotated[str | None, typer.Option(
        "--instances", metavar="<n>", help="One job: its instances, fixed (default: 1).")
    ] = None,
    value: Annotated[str | None, typer.Option(
        "--value", metavar="<usd>", help="One job: USD of finishing by --deadline.")] = None,
    bootstrap_servers: Broker = None,
    no_wait: Annotated[bool, typer.Option(
        "--no-wait", help="Publish and exit without waiting for the service's answers.")] = False,
    wait: Annotated[float, typer.Option(
        "--wait", metavar="<seconds>", help="Longest wait for the answers.",
        callback=at_least(0.0, "a number of seconds >= 0"))] = DEFAULT_WAIT_SECONDS,
) -> None:
    """Submit jobs and wait for the service's answers.

    The jobs of a file, or one job given by --id, --workload and --deadline (times as in a
    file: ISO-8601 with Z or an offset, or Unix seconds), checked as a file's are. Each job is
    checked against the event contract and published, stamped with its release (or now, if
    earlier). The answer: accepted at an epoch, queued until its release's epoch, or rejected
    and why.
    Exit status 1 when a job is rejected."""
    flags = {"id": job_id, "workload": workload, "soft_deadline": deadline,
             "hard_deadline": hard_deadline or deadline, "release": release,
             "n_min": instances, "n_max": instances, "value": value}
    given = {name: text for name, text in flags.items() if text is not None}
    if (jobs is None) == (not given):
        fail(ValueError("submit: expected a file of jobs or one job's --id, --workload and "
                        "--deadline, not " + ("both" if given else "neither")))
    settings = one_shot_settings(bootstrap_servers=bootstrap_servers)
    broker_logging()
    submissions = _submissions(jobs) if jobs is not None else [_one_submission(given)]
    if no_wait:
        _publish(settings, list(submissions))
        console.print(f"published {counted(len(submissions), 'job submission')} to "
                      f"{settings.topics.job_events}; `spotsched jobs` shows what the service "
                      "made of them", highlight=False, soft_wrap=True)
        return
    answers = run_on_broker(_submit_and_wait(settings, submissions, wait))
    from streams.contract.printable import printable

    for answer in answers:
        console.print(printable(f"{answer.job_id}: {answer.text}"), highlight=False,
                      soft_wrap=True)
    rejected = sum(a.verdict == "rejected" for a in answers)
    console.print(f"{counted(len(answers), 'job')} submitted: {len(answers) - rejected} "
                  f"accepted or queued, {rejected} rejected", highlight=False)
    if rejected:
        raise typer.Exit(ExitCode.REJECTED)


ONE_JOB_FLAGS = {"id": "--id", "workload": "--workload", "soft_deadline": "--deadline",
                 "hard_deadline": "--hard-deadline", "release": "--release",
                 "n_min": "--instances", "n_max": "--instances", "value": "--value"}
"""The flag that gives each field of ``submit``'s one job."""


def _one_submission(given: dict[str, str]) -> JobSubmitted:
    """The job of ``submit``'s flags, checked as a file's job is; a bad one exits with one
    line naming the flag."""
    import time

    from solver.traces.errors import MISSING, TraceFormatError
    from solver.traces.jobs_file import job_of
    from streams.pipeline.trace_events import submission

    now = time.time()
    entry = {"release": str(now), **given}
    try:
        job = job_of(entry, "submit")
    except TraceFormatError as exc:
        if exc.field is None:
            fail(ValueError(str(exc)))
        flag = ONE_JOB_FLAGS.get(exc.field, exc.field)
        shown = "missing" if exc.value is MISSING else exc.value
        fail(FlagError(f"{flag} {shown}: expected {exc.expected}"))
    return submission(job, min(now, job.release))


def _submissions(path: Path) -> list[JobSubmitted]:
    """The file's jobs as submissions; a bad one exits with a one-line error."""
    import time

    from solver.traces.jobs_file import load_jobs
    from streams.pipeline.trace_events import submission

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


def _book(settings: Settings, every: bool) -> JobBook:
    """What the service knows of its jobs: their submissions and the last epoch closed, and
    when ``every`` job's state is wanted, the decisions and dead letters too."""
    from streams.kafka.topic_reader import read_topics
    from streams.pipeline.job_book import BOOK_TYPES, JOB_TYPES, JobBook

    topics = settings.topics
    book = JobBook(topics.job_events)

    async def read() -> None:
        async for _, event in read_topics(
                settings, [topics.job_events, *([topics.decisions, topics.dead_letters]
                                                if every else [])],
                BOOK_TYPES if every else (*JOB_TYPES, "epoch_closed")):
            book.add(event)

    run_on_broker(read())
    return book


def stamp(at: datetime | None, service_time: datetime | None, submitted: datetime,
          wall_clock: datetime) -> tuple[datetime, str]:
    """The time of an event on a job submitted at ``submitted`` and where it comes from:
    ``at``, else the service's time (the wall clock before any epoch), but not before the
    submission; a ValueError for an ``at`` before it."""
    if at is not None:
        if at < submitted:
            raise ValueError(f"--at {at.isoformat()}: expected a time at or after the job's "
                             f"submission ({submitted.isoformat()})")
        return at, "--at"
    if service_time is not None:
        when, source = service_time, "the service's time, its last epoch"
    else:
        when, source = wall_clock, "the wall clock: no epoch closed yet"
    if when < submitted:
        return submitted, "the job's submission, later than the service's time"
    return when, source


def _job_events(settings: Settings, make: Callable[..., JobEvent], job_ids: Sequence[str] | None,
                at: datetime | None, verb: str, **fields: object) -> None:
    """Publish one event on each of ``job_ids`` (``None``: every active job), all known to the
    service, each stamped by :func:`stamp`; nothing is published when one is unknown or
    cannot be stamped."""
    from datetime import UTC

    from pydantic import ValidationError

    from streams.contract import describe_validation_error

    book = _book(settings, job_ids is None)
    if job_ids is None:
        job_ids = [v.job_id for v in book.select(("pending", "waiting", "running"))
                   if v.submitted is not None]
        if not job_ids:
            diagnostics.print("no active job: nothing to do", highlight=False)
            return
    unknown = [j for j in dict.fromkeys(job_ids)
               if j not in book.jobs or book.jobs[j].submitted is None]
    if unknown:
        fail(ValueError(f"job {', '.join(map(repr, unknown))}: never submitted to "
                        f"{settings.topics.job_events} at {settings.bootstrap_servers}; "
                        "`spotsched jobs --all` lists the jobs"))
    now = datetime.now(UTC)
    events, lines = [], []
    for job_id in dict.fromkeys(job_ids):
        submitted = book.jobs[job_id].submitted
        assert submitted is not None
        try:
            when, source = stamp(at, book.now, submitted.event_time, now)
            events.append(make(event_time=when, job_id=job_id, **fields))
        except ValidationError as exc:
            fail(ValueError(describe_validation_error(exc)))
        except ValueError as exc:
            fail(exc)
        lines.append(f"{verb} {job_id} at {when:%Y-%m-%d %H:%M:%S} UTC ({source}); it takes "
                     "effect at the first epoch at or after that time")
    _publish(settings, events)
    for line in lines:
        console.print(line, highlight=False, soft_wrap=True)


@app.command()
def cancel(
    job_ids: Annotated[list[str] | None, typer.Argument(
        metavar="JOB", help="The jobs' ids.", show_default=False)] = None,
    every: Annotated[bool, typer.Option(
        "--all", help="Every active job: pending, waiting or running.")] = False,
    reason: Annotated[str | None, typer.Option(help="Why.")] = None,
    at: At = None,
    bootstrap_servers: Broker = None,
) -> None:
    """Cancel jobs the service knows.

    Nothing is published when one of the jobs is unknown."""
    from streams.contract import JobCancelled

    if bool(job_ids) == every:
        fail(ValueError("cancel: expected job ids or --all, not "
                        + ("both" if every else "neither")))
    settings = one_shot_settings(bootstrap_servers=bootstrap_servers)
    broker_logging()
    _job_events(settings, JobCancelled, None if every else job_ids, at, "cancelled",
                reason=reason)


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
    _job_events(settings, JobProgress, [job_id], at, "progress of", work_done=work_done,
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
    _job_events(settings, JobFinished, [job_id], at, "finished")
