"""``spotsched jobs``, ``spotsched dead-letters`` and ``spotsched status``: what the running
service knows and does, read from its topics and consumer groups."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from streams.contract import DeadLetter
    from streams.kafka.service_status import ServiceStatus
    from streams.reports.job_book import JobBook, JobView

from streams.cli.app import app
from streams.cli.common import broker_logging, one_shot_settings, run_on_broker
from streams.cli.errors import console, fail
from streams.cli.options import Broker

JsonLines = Annotated[bool, typer.Option("--json", help="JSON instead of a table.")]
Follow = Annotated[bool, typer.Option(
    "--follow", help="Keep reading: one line per change until Ctrl-C.")]


def shown(time: datetime | None) -> str:
    """A time for a table: UTC to the minute, ``-`` for none."""
    return "-" if time is None else f"{time:%Y-%m-%d %H:%M}"


@app.command()
def jobs(
    job_id: Annotated[str | None, typer.Argument(
        help="One job: its history of events and decisions.")] = None,
    bootstrap_servers: Broker = None,
    json_lines: JsonLines = False,
    follow: Follow = False,
) -> None:
    """Every job the service knows: its state, cost and finish.

    Cost so far, progress, projected finish against the deadlines, read from the job
    events, the epochs, the decisions and the dead letters on the broker. States: pending
    (no decision yet), waiting (idle), running, cancelling, finished, missed, cancelled,
    failed, rejected (with the reason)."""
    import json

    from streams.kafka.topic_reader import read_topics
    from streams.reports.job_book import BOOK_TYPES, JobBook

    settings = one_shot_settings(follow, bootstrap_servers=bootstrap_servers)
    broker_logging()
    topics = settings.topics
    book = JobBook(topics.job_events)

    live = False

    def now_live() -> None:  # following: the state so far, then one line per change
        nonlocal live
        live = True
        if json_lines:
            typer.echo(json.dumps([v.as_dict(book.now) for v in book.jobs.values()
                                   if job_id in (None, v.job_id)]))
        else:
            _print_jobs(book, job_id)

    async def read() -> None:
        states: dict[str, tuple[str, str]] = {}
        async for _, event in read_topics(
                settings, [topics.job_events, topics.decisions, topics.dead_letters],
                BOOK_TYPES, follow=follow, caught_up=now_live if follow else None):
            view = book.add(event)
            if view is None or (job_id is not None and view.job_id != job_id):
                continue
            state = (view.state, view.detail)
            if states.get(view.job_id) != state:
                states[view.job_id] = state
                if not live:
                    continue
                if json_lines:
                    typer.echo(json.dumps(view.as_dict(book.now)))
                else:
                    say(_change_line(view, book))

    run_on_broker(read())
    if follow:
        return
    if job_id is not None:
        view = book.jobs.get(job_id)
        if view is None:
            fail(ValueError(f"job {job_id!r}: no such job on {topics.job_events} at "
                            f"{settings.bootstrap_servers}; `spotsched jobs` lists the jobs"))
        if json_lines:
            typer.echo(json.dumps({**view.as_dict(book.now), "history": [
                json.loads(e.model_dump_json()) for e in view.history]}))
        else:
            _print_history(view, book)
    elif json_lines:
        typer.echo(json.dumps([v.as_dict(book.now) for v in book.jobs.values()], indent=1))
    else:
        _print_jobs(book)


def _epoch_line(book: JobBook) -> str:
    last = book.last_epoch
    return ("no epoch closed yet" if last is None
            else f"last epoch {last.epoch} closed at {shown(last.event_time)} UTC")


def _change_line(view: JobView, book: JobBook) -> str:
    return " ".join(p for p in (shown(book.now), view.job_id, view.state, view.detail) if p)


def _print_jobs(book: JobBook, only: str | None = None) -> None:
    """The jobs (or job ``only``) as a table, with where each runs or why it was rejected or
    failed below."""
    from rich import box
    from rich.table import Table

    now = book.now
    views = [v for v in book.jobs.values() if only in (None, v.job_id)]
    table = Table(title=f"{len(book.jobs)} jobs; {_epoch_line(book)}", box=box.SIMPLE_HEAD)
    for name in ("job", "state", "done", "USD", "finish", "soft/hard"):
        table.add_column(name, no_wrap=True)
    for view in views:
        job = view.submitted
        done, _ = view.work_done(now)
        table.add_row(
            view.job_id, view.state,
            f"{100 * done / job.workload:.0f}%" if job is not None else "-",
            f"{view.cost_usd:.2f}", short(view.projected_finish(now)),
            f"{short(job.soft_deadline)}\n{short(job.hard_deadline)}" if job else "-")
    console.print(table)
    for view in views:  # where each runs, why each was rejected or failed
        if view.detail:
            say(f"{view.job_id} {view.state}: {view.detail}")


def short(time: datetime | None) -> str:
    """A time for a narrow column: month, day and UTC time (the year is the title's)."""
    return "-" if time is None else f"{time:%m-%d %H:%M}"


def _print_history(view: JobView, book: JobBook) -> None:
    from streams.contract import DeadLetter, JobProgress, ProvisioningDecision

    job = view.submitted
    say(f"{view.job_id}: {view.state}" + (f" ({view.detail})" if view.detail else ""))
    if job is not None:
        done, source = view.work_done(book.now)
        say(f"work {done:.3g} of {job.workload:g} ({source}); cost so far {view.cost_usd:.2f} "
            f"USD; released {shown(job.release)}, soft deadline {shown(job.soft_deadline)}, "
            f"hard deadline {shown(job.hard_deadline)}; projected finish "
            f"{shown(view.projected_finish(book.now))}; {_epoch_line(book)}")
    for event in sorted(view.history, key=lambda e: (isinstance(e, DeadLetter), e.event_time)):
        if isinstance(event, ProvisioningDecision):
            cause = f" ({event.release_cause})" if event.release_cause else ""
            say(f"  {shown(event.slot_start)} epoch {event.epoch} {event.action}{cause} "
                f"{event.market} spot={event.spot} on-demand={event.on_demand} "
                f"${event.expected_cost_usd:.2f}: {event.reason}")
        elif isinstance(event, DeadLetter):
            say(f"  {shown(event.event_time)} rejected: {event.reason}")
        elif isinstance(event, JobProgress):
            left = "" if event.remaining_work is None else f", {event.remaining_work:.3g} left"
            say(f"  {shown(event.event_time)} progress: {event.work_done:.3g} done{left}")
        else:
            why = getattr(event, "reason", None)
            say(f"  {shown(event.event_time)} {event.type.removeprefix('job_')}"
                + (f": {why}" if why else ""))


def say(line: str) -> None:
    """One line of output, wrapped at the terminal's width, never cut."""
    console.print(line, highlight=False, soft_wrap=True)


@app.command("dead-letters")
def dead_letters(
    bootstrap_servers: Broker = None,
    json_lines: Annotated[bool, typer.Option(
        "--json", help="One JSON event per line.")] = False,
    follow: Follow = False,
) -> None:
    """The messages the service set aside, and why.

    Each dead letter's time, source topic, partition and offset, key, error and reason."""
    from streams.contract import DeadLetter, dump_event
    from streams.kafka.topic_reader import read_topics

    settings = one_shot_settings(follow, bootstrap_servers=bootstrap_servers)
    broker_logging()
    letters: list[DeadLetter] = []

    async def read() -> None:
        async for _, event in read_topics(settings, [settings.topics.dead_letters],
                                          ("dead_letter",), follow=follow):
            assert isinstance(event, DeadLetter)
            if json_lines:
                typer.echo(dump_event(event).decode())
            elif follow:
                say(_letter_line(event))
            else:
                letters.append(event)

    run_on_broker(read())
    if not json_lines and not follow:
        say(f"{len(letters)} dead letters on {settings.topics.dead_letters}")
        for letter in letters:
            say(_letter_line(letter))


def _letter_line(letter: DeadLetter) -> str:
    return (f"{shown(letter.event_time)} {letter.source_topic}[{letter.partition}]@"
            f"{letter.offset} key={_key(letter)} {letter.error_type}: {letter.reason}")


def _key(letter: DeadLetter) -> str:
    key = letter.original_key()
    return "-" if key is None else key.decode("utf-8", "backslashreplace")


@app.command()
def status(bootstrap_servers: Broker = None) -> None:
    """Topics, consumer lag, last epoch closed, workers alive.

    The app's topics (partitions, messages held), its consumer groups (state, members, lag
    per topic), the last epoch the coordinator closed and the scheduler workers alive."""
    from streams.kafka.service_status import service_status

    settings = one_shot_settings(bootstrap_servers=bootstrap_servers)
    broker_logging()
    _print_status(run_on_broker(service_status(settings)), settings.bootstrap_servers)


def _print_status(state: ServiceStatus, where: str) -> None:
    from rich import box
    from rich.table import Table

    topics = Table("topic", "partitions", "messages", title=f"topics at {where}",
                   box=box.SIMPLE_HEAD)
    for topic in state.topics:
        topics.add_row(topic.name, str(topic.partitions), f"{topic.messages:,}")
    console.print(topics)
    if state.missing:
        say(f"missing topics: {', '.join(state.missing)} (a worker creates them)")
    groups = Table("group", "state", "members", "lag", box=box.SIMPLE_HEAD,
                   title=f"consumer groups of {state.app_id}")
    for group in state.groups:
        groups.add_row(group.group, group.state, str(len(group.members)),
                       ", ".join(f"{t} {n:,}" for t, n in sorted(group.lag.items())) or "-")
    console.print(groups)
    last = state.last_epoch
    say("last epoch closed: " + (
        "none" if last is None else f"{last.epoch} at {shown(last.event_time)} UTC"))
    say(f"workers alive: {len(state.workers)}" + (
        f" ({', '.join(state.workers)})" if state.workers else
        " (start one with `spotsched worker`)"))
