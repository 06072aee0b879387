"""``spotsched jobs``, ``spotsched dead-letters`` and ``spotsched status``: what the running
service knows and does, read from its topics and consumer groups."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from streams.cli.reports.dead_letters import ReasonCount
    from streams.contract import DeadLetter
    from streams.kafka.service_status import ServiceStatus
    from streams.pipeline.job_book import JobBook, JobView

from streams.cli.app import app
from streams.cli.common import broker_logging, counted, one_shot_settings, run_on_broker
from streams.cli.errors import console, diagnostics, fail
from streams.cli.options import Broker, FlagError, non_negative, one_of
from streams.contract.printable import printable
from streams.pipeline.job_states import ACTIVE_STATES, STATES

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
    state: Annotated[list[str] | None, typer.Option(
        "--state", metavar="<state>", callback=one_of(lambda: STATES),
        help=f"Only jobs in this state; repeatable. States: {', '.join(STATES)}.")] = None,
    every: Annotated[bool, typer.Option(
        "--all", help="Every job, also those that ended (default: the active ones: "
        f"{', '.join(ACTIVE_STATES)}).")] = False,
    bootstrap_servers: Broker = None,
    json_lines: JsonLines = False,
    follow: Follow = False,
) -> None:
    """The service's jobs: state, cost and deadlines.

    Per job: market and instances now, work done, cost so far and utility (value at the finish
    minus the cost), restarts, the start and time run, the finish (projected while it runs)
    and each deadline met, missed, on track or at risk; read from the job events, the epochs,
    the decisions and the dead letters on the broker. States: pending (no decision yet),
    waiting (idle), running, cancelling, finished, missed, cancelled, failed, rejected (with
    the reason). --json gives the same fields."""
    import json

    from streams.kafka.topic_reader import read_topics
    from streams.pipeline.job_book import BOOK_TYPES, JobBook

    settings = one_shot_settings(follow, bootstrap_servers=bootstrap_servers)
    broker_logging()
    topics = settings.topics
    book = JobBook(topics.job_events)
    wanted = set(state or ())

    def selected() -> list[JobView]:
        if job_id is not None:
            return [v for v in book.jobs.values() if v.job_id == job_id]
        return book.select(state or (), every)

    live = False

    def now_live() -> None:  # following: the state so far, then one line per change
        nonlocal live
        live = True
        if json_lines:
            typer.echo(json.dumps([v.as_dict(book.now) for v in selected()]))
        else:
            _print_jobs(book, selected())

    async def read() -> None:
        states: dict[str, tuple[str, str]] = {}
        async for _, event in read_topics(
                settings, [topics.job_events, topics.decisions, topics.dead_letters],
                BOOK_TYPES, follow=follow, caught_up=now_live if follow else None):
            view = book.add(event)
            if view is None or (job_id is not None and view.job_id != job_id):
                continue
            change = (view.state, view.detail)
            if states.get(view.job_id) != change:
                states[view.job_id] = change
                if not live or (wanted and view.state not in wanted):
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
                            f"{settings.bootstrap_servers}; `spotsched jobs --all` lists the "
                            "jobs"))
        if json_lines:
            typer.echo(json.dumps({**view.as_dict(book.now), "history": [
                json.loads(e.model_dump_json()) for e in view.history]}))
        else:
            _print_history(view, book)
    elif json_lines:
        typer.echo(json.dumps([v.as_dict(book.now) for v in selected()], indent=1))
    else:
        _print_jobs(book, selected())


def _change_line(view: JobView, book: JobBook) -> str:
    return " ".join(p for p in (shown(book.now), view.job_id, view.state, view.detail) if p)


def _print_jobs(book: JobBook, views: list[JobView]) -> None:
    """The jobs as a table, with where each runs or why it was rejected or failed below, and
    what the table leaves out."""
    from streams.cli.reports.jobs_table import jobs_table, others_line

    console.print(jobs_table(book, views, console))
    for view in views:  # where each runs, why each was rejected or failed
        if view.detail:
            say(f"{view.job_id} {view.state}: {view.detail}")
    others = others_line(book, views)
    if others:
        diagnostics.print(others, highlight=False, soft_wrap=True)


def _print_history(view: JobView, book: JobBook) -> None:
    from streams.cli.reports.decisions import REPLAY_NOTE, SeenKeys
    from streams.cli.reports.jobs_table import duration, epoch_line
    from streams.contract import DeadLetter, JobProgress, ProvisioningDecision

    job, now = view.submitted, book.now
    say(f"{view.job_id}: {view.state}" + (f" ({view.detail})" if view.detail else ""))
    if job is not None:
        done, source = view.work_done(now)
        utility = view.utility_usd(now)
        running = view.running_now
        say(f"work {done:,.2f} of {job.workload:,.2f} ({source}); cost so far "
            f"{view.cost_usd:,.2f} USD; utility "
            + ("-" if utility is None else f"{utility:,.2f} USD")
            + f"; restarts {view.restarts}"
            + (f"; now {running.market}: {running.spot} spot + {running.on_demand} on-demand"
               if running is not None else ""))
        say(f"released {shown(job.release)}, started {shown(view.started)}, "
            + (f"ended {shown(view.ended)}" if view.ended else "still active")
            + f", ran {duration(view.run_seconds(now))}; finish {shown(view.finish(now))}; "
            f"soft deadline {shown(job.soft_deadline)} {view.standing('soft', now) or '-'}, "
            f"hard deadline {shown(job.hard_deadline)} {view.standing('hard', now) or '-'}; "
            f"{epoch_line(book)}")
    seen, replayed = SeenKeys(), False
    for event in sorted(view.history, key=lambda e: (isinstance(e, DeadLetter), e.event_time)):
        if isinstance(event, ProvisioningDecision):
            replay = seen.replay(event)
            replayed |= replay
            cause = f" ({event.release_cause})" if event.release_cause else ""
            say(f"  {shown(event.slot_start)}{' *' if replay else ''} {event.action}{cause} "
                f"{event.market} spot={event.spot} on-demand={event.on_demand} "
                f"${event.expected_cost_usd:.2f} [{event.planner or event.policy}]: "
                f"{event.reason}")
        elif isinstance(event, DeadLetter):
            say(f"  {shown(event.event_time)} rejected: {event.reason}")
        elif isinstance(event, JobProgress):
            left = "" if event.remaining_work is None else f", {event.remaining_work:,.2f} left"
            say(f"  {shown(event.event_time)} progress: {event.work_done:,.2f} done{left}")
        else:
            why = getattr(event, "reason", None)
            say(f"  {shown(event.event_time)} {event.type.removeprefix('job_')}"
                + (f": {why}" if why else ""))
    if replayed:
        say(REPLAY_NOTE)


def say(line: str) -> None:
    """One line of output, wrapped at the terminal's width, never cut, printed as it is (a
    ``[...]`` in a reason or a planner is text, not markup)."""
    console.print(printable(line), highlight=False, markup=False, soft_wrap=True)


DEAD_LETTERS_SHOWN = 20
"""The dead letters listed unless ``--limit`` says otherwise."""


def since_time(value: str) -> datetime:
    """The parser of ``--since``, as ``--at``'s."""
    from streams.cli.jobs import event_time

    try:
        return event_time(value)
    except FlagError as exc:
        raise FlagError(exc.message.replace("--at", "--since", 1)) from None


@app.command("dead-letters")
def dead_letters(
    bootstrap_servers: Broker = None,
    json_lines: Annotated[bool, typer.Option(
        "--json", help="One JSON event per line.")] = False,
    follow: Follow = False,
    limit: Annotated[int, typer.Option(
        "--limit", metavar="<n>", callback=non_negative,
        help="The newest N only; 0 for all. Following, the newest N before the new ones.")
    ] = DEAD_LETTERS_SHOWN,
    since: Annotated[datetime | None, typer.Option(
        "--since", metavar="<time>", parser=since_time,
        help="Only those set aside at or after this time, ISO-8601 (UTC unless it says) or "
        "Unix seconds.")] = None,
    topic: Annotated[str | None, typer.Option(
        "--topic", metavar="<topic>", help="Only those set aside from this topic.")] = None,
    summary: Annotated[bool, typer.Option(
        "--summary", help="Count them by source topic, error and reason instead.")] = False,
) -> None:
    """The messages the service set aside, and why.

    Each dead letter's time, source topic, partition and offset, key, error and reason; the
    newest 20 unless told (--limit), or --summary, counted by reason."""
    from streams.cli.reports.dead_letters import by_reason, newest, wanted
    from streams.contract import DeadLetter, dump_event
    from streams.kafka.topic_reader import read_topics

    settings = one_shot_settings(follow, bootstrap_servers=bootstrap_servers)
    broker_logging()
    letters: list[DeadLetter] = []
    live = False

    def show(batch: list[DeadLetter]) -> None:
        for letter in batch:
            if json_lines:
                typer.echo(dump_event(letter).decode())
            else:
                say(_letter_line(letter))

    def caught_up() -> None:  # following: the newest so far, then each new one
        nonlocal live
        live = True
        show(newest(letters, limit))

    async def read() -> None:
        async for _, event in read_topics(settings, [settings.topics.dead_letters],
                                          ("dead_letter",), follow=follow,
                                          caught_up=caught_up if follow else None):
            assert isinstance(event, DeadLetter)
            if not wanted(event, since, topic):
                continue
            if live:
                show([event])
            else:
                letters.append(event)

    run_on_broker(read())
    if follow:
        return
    if summary:
        _print_summary(by_reason(letters), settings.topics.dead_letters)
        return
    shown_letters = newest(letters, limit)
    if not json_lines:
        say(f"{counted(len(letters), 'dead letter')} on {settings.topics.dead_letters}"
            + (f" (the newest {len(shown_letters)} below; --limit 0 shows all, --summary "
               "counts them by reason)" if len(shown_letters) < len(letters) else ""))
    show(shown_letters)


def _print_summary(counts: list[ReasonCount], where: str) -> None:
    from evaluation.reports.tables import add_key_column, add_number_columns, report_table
    from streams.cli.reports.cells import cell

    table = report_table(f"{sum(c.count for c in counts):,} dead letters on {where} by reason "
                         "(times in UTC)")
    add_number_columns(table, "count")
    for header in ("source topic", "error", "first", "last"):
        add_key_column(table, header)
    table.add_column("reason")
    for c in counts:
        table.add_row(f"{c.count:,}", cell(c.source_topic), cell(c.error_type),
                      shown(c.first), shown(c.last), cell(c.reason))
    console.print(table)


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
    say("last epoch closed: " + ("none" if last is None else f"{shown(last.event_time)} UTC"))
    say(f"workers alive: {len(state.workers)}" + (
        f" ({', '.join(state.workers)})" if state.workers else
        " (start one with `spotsched worker`)"))
