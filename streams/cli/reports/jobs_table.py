"""The job table of ``spotsched jobs``: one line per job at 120 columns and more, with where it
runs, what it cost and is worth, and how it stands against each deadline."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime

from rich.console import Console

from evaluation.reports.tables import (
    ReportTable,
    add_key_column,
    add_number_columns,
    first_fitting,
    report_table,
)
from streams.cli.reports.cells import cell
from streams.pipeline.job_book import JobBook, JobView


def short(time: datetime | None) -> str:
    """A time for a narrow column: month, day and UTC time (the year is the title's)."""
    return "-" if time is None else f"{time:%m-%d %H:%M}"


def duration(seconds: float | None) -> str:
    """``3d04h``, ``5h10m`` or ``42m``; ``-`` for none."""
    if seconds is None:
        return "-"
    minutes = round(seconds / 60)
    days, rest = divmod(minutes, 24 * 60)
    hours, minutes = divmod(rest, 60)
    if days:
        return f"{days}d{hours:02d}h"
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m"


def usd(amount: float | None) -> str:
    return "-" if amount is None else f"{amount:,.2f}"


def deadline_cell(deadline: datetime | None, standing: str | None) -> str:
    """``03-08 20:53 met``: the deadline, when given, and how the job stands against it."""
    return " ".join(p for p in (deadline and short(deadline), standing) if p) or "-"


def jobs_table(book: JobBook, views: Sequence[JobView], console: Console) -> ReportTable:
    """One row per job of ``views``, the widest layout that fits the console: market keys
    whole, else numbered with a legend under the table; then without the start; at the
    narrowest the deadlines' standings without their times."""
    years = sorted({str(v.submitted.release.year) for v in views if v.submitted is not None})
    title = (f"{len(views)} of {len(book.jobs)} jobs"
             + (f", {'-'.join(dict.fromkeys((years[0], years[-1])))}" if years else "")
             + f" (times in UTC); {epoch_line(book)}")
    markets = list(dict.fromkeys(r.market for v in views if (r := v.running_now) is not None))
    numbers = {key: f"m{k + 1}" for k, key in enumerate(markets)}
    legend = "\n".join(f"{numbers[key]}: {key}" for key in markets) or None
    return first_fitting(console, [
        _layout(book, views, title, None, None, True, True),
        _layout(book, views, title, numbers, legend, True, True),
        _layout(book, views, title, numbers, legend, False, True),
        _layout(book, views, title, numbers, legend, False, False),
    ])


def _layout(book: JobBook, views: Sequence[JobView], title: str,
            numbers: dict[str, str] | None, legend: str | None,
            with_start: bool, with_deadlines: bool) -> ReportTable:
    now = book.now
    table = report_table(title, legend)
    for header in ("job", "state", "market"):
        add_key_column(table, header)
    add_number_columns(table, "spot+od", "done", "USD", "utility", "restarts")
    for header in ("started",) * with_start + ("ran", "finish"):
        add_key_column(table, header)
    for header in ("soft deadline", "hard deadline") if with_deadlines else ("soft", "hard"):
        add_key_column(table, header)
    for view in views:
        job, running = view.submitted, view.running_now
        done, _ = view.work_done(now)
        market = "-" if running is None else (numbers or {}).get(running.market, running.market)
        deadlines = ((job.soft_deadline, job.hard_deadline) if job is not None and with_deadlines
                     else (None, None))
        table.add_row(
            cell(view.job_id), view.state, cell(market),
            f"{running.spot}+{running.on_demand}" if running else "-",
            f"{100 * done / job.workload:.0f}%" if job is not None else "-",
            usd(view.cost_usd), usd(view.utility_usd(now)), str(view.restarts),
            *(short(view.started),) * with_start,
            duration(view.run_seconds(now)), short(view.finish(now)),
            deadline_cell(deadlines[0], view.standing("soft", now)),
            deadline_cell(deadlines[1], view.standing("hard", now)))
    return table


def epoch_line(book: JobBook) -> str:
    """Where the service's time stands: its last epoch's boundary."""
    last = book.last_epoch
    return ("no epoch closed yet" if last is None
            else f"last epoch closed at {last.event_time:%Y-%m-%d %H:%M} UTC")


def others_line(book: JobBook, views: Sequence[JobView]) -> str | None:
    """What the table leaves out, by state, and how to see it."""
    shown = {v.job_id for v in views}
    left = Counter(v.state for v in book.jobs.values() if v.job_id not in shown)
    if not left:
        return None
    counts = ", ".join(f"{n} {state}" for state, n in sorted(left.items()))
    return f"not shown: {counts} (--all lists every job, --state STATE those in one state)"
