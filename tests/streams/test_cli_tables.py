"""Every table the README's commands print reads at 80 and 120 columns: no line is longer than
the terminal, no cell is cut, keys (policies, jobs, markets, horizons) are whole and each row
of a replay or an evaluation stays on one line."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from solver.evaluation.compare import compare_policies
from solver.evaluation.evaluate import CaseResult, PolicyStats
from solver.market import build_market_data
from solver.policies.registry import POLICY_NAMES
from solver.synthetic import SyntheticMarketSpec, synthetic_ticks
from solver.traces.jobs_file import load_jobs
from streams.cli.reports.decisions import decisions_table
from streams.cli.reports.evaluation import case_table
from streams.cli.reports.forecast import run_forecast_report
from streams.cli.reports.replay_summary import jobs_table, summary_table
from streams.pipeline.trace_events import trace_events
from streams.runners.memory import run_in_memory
from tests.forecast.series import capacity, markets, step_prices

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
WIDTHS = (80, 120)


def render(table: object, width: int) -> list[str]:
    """The lines ``table`` prints on a terminal ``width`` columns wide."""
    console = Console(width=width, file=io.StringIO(), record=True)
    console.print(table)
    return console.export_text().splitlines()


def assert_readable(lines: list[str], width: int, keys: set[str], rows: list[list[str]] = ()
                    ) -> None:
    """No line wider than the terminal, no cell cut, every key whole on a line, and each row's
    cells, in order, on one line."""
    assert all(len(line) <= width for line in lines), "\n".join(lines)
    assert not any("…" in line for line in lines), "\n".join(lines)
    for key in keys:
        assert any(key in line for line in lines), f"{key!r} not whole in\n" + "\n".join(lines)
    for cells in rows:
        assert any(_in_order(line, cells) for line in lines), f"row {cells} wraps"


def _in_order(line: str, cells: list[str]) -> bool:
    at = 0
    for cell in cells:
        found = line.find(cell, at)
        if found < 0:
            return False
        at = found + len(cell)
    return True


@pytest.fixture(scope="module")
def replay():
    """The README's ``replay --jobs examples/jobs.json --per-job`` on the synthetic market,
    with the policies of the longest names."""
    data = build_market_data(synthetic_ticks(SyntheticMarketSpec()), 3600)
    jobs = load_jobs(EXAMPLES / "jobs.json")
    policies = ["on-demand", "uniform-progress", "policy-selection"]
    return data, jobs, *compare_policies(data, jobs, policies)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_replay_summary_reads_at(width, replay):
    data, jobs, _, summaries = replay
    title = f"{len(jobs)} jobs on synthetic market (seed 0): {len(data.markets)} markets"
    lines = render(summary_table(summaries, title), width)
    rows = [[s.policy, str(s.jobs), f"{s.total_utility:,.0f}", str(s.preemptions)]
            for s in summaries]
    assert_readable(lines, width, {s.policy for s in summaries}, rows)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_per_job_table_reads_at(width, replay):
    _, jobs, results, _ = replay
    lines = render(jobs_table(results), width)
    keys = {r.policy for r in results} | {j.id for j in jobs}
    rows = [[j.job_id, f"{j.cost:,.2f}", "soft" if j.soft_deadline_met else
             "hard" if j.hard_deadline_met else "no"] for r in results for j in r.jobs]
    assert_readable(lines, width, keys, rows)
    finished = [j.completion for r in results for j in r.jobs if j.completion is not None]
    assert finished and all(any(_minute(t) in line for line in lines) for t in finished)


def _minute(seconds: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(round(seconds / 60) * 60, UTC).strftime("%Y-%m-%d %H:%M")


@pytest.mark.parametrize("width", WIDTHS)
def test_an_evaluation_table_names_every_policy_whole_at(width):
    stats = {name: PolicyStats(runs=90, mean_cost_usd=12_345.67 + k, mean_utility=-1_234.56,
                               mean_restarts=12.3, hard_deadline_misses=10,
                               soft_deadline_misses=100)
             for k, name in enumerate(POLICY_NAMES)}
    result = CaseResult("cant-be-late", "cant-be-late 48h/52h overhead 0.2h", stats)
    lines = render(case_table(result, f"{result.name}: 30 jobs in 30 windows of a.json"), width)
    rows = [[name, "90", f"{s.mean_cost_usd:,.2f}", "10", "100"] for name, s in stats.items()]
    assert_readable(lines, width, set(POLICY_NAMES), rows)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_forecast_report_reads_at(width):
    data = markets([step_prices(80, 1), step_prices(80, 2)], [capacity(80, 1), capacity(80, 2)])
    console = Console(width=width, file=io.StringIO(), record=True)
    run_forecast_report(data, (1, 6, 12, 24), console=console)
    lines = console.export_text().splitlines()
    keys = {m.key for m in data.markets} | {"persistence", "seasonal-naive", "moving-average"}
    assert_readable(lines, width, keys)


@pytest.fixture(scope="module")
def decisions():
    """The decisions a worker makes for the README's example jobs on the synthetic market."""
    ticks = synthetic_ticks(SyntheticMarketSpec())
    data = build_market_data(ticks, 3600)
    jobs = load_jobs(EXAMPLES / "jobs.json")
    return run_in_memory(trace_events(ticks, jobs), data.markets, 3600, "greedy")


@pytest.mark.parametrize("width", WIDTHS)
def test_the_decisions_table_keeps_market_keys_whole_at(width, decisions):
    console = Console(width=width, file=io.StringIO(), record=True)
    console.print(decisions_table(decisions, console))
    lines = console.export_text().splitlines()
    keys = {d.market for d in decisions} | {d.job_id for d in decisions}
    assert_readable(lines, width, keys)
    assert "decisions of greedy" in lines[0]



def test_the_decisions_table_names_each_planner_and_marks_replays(decisions):
    replayed = [*decisions[:3], decisions[0]]  # a worker restarted and wrote the first again
    console = Console(width=160, file=io.StringIO(), record=True)
    console.print(decisions_table(replayed, console))
    lines = console.export_text().splitlines()
    marked = [line for line in lines if f"{replayed[0].slot_start:%Y-%m-%d %H:%M} *" in line]
    assert len(marked) == 1 and replayed[0].job_id in marked[0], "\n".join(lines)
    assert any("replay: a decision already listed" in line for line in lines)
    assert all(d.planner and any(d.planner in line for line in lines) for d in replayed)
    console = Console(width=160, file=io.StringIO(), record=True)
    console.print(decisions_table(decisions[:3], console))
    assert "replay" not in console.export_text()


@pytest.mark.parametrize("width", (120, 160))
def test_the_job_table_keeps_each_job_on_one_line_at(width, decisions):
    from streams.cli.reports.jobs_table import jobs_table
    from streams.contract import EpochClosed
    from streams.pipeline.job_book import JobBook
    from streams.pipeline.trace_events import submission

    book = JobBook("job-events")
    for job in load_jobs(EXAMPLES / "jobs.json"):
        book.add(submission(job, job.release))
    half = decisions[: len(decisions) // 2]  # half way: some jobs run, some have finished
    for decision in half:
        book.add(decision)
    last = half[-1]
    book.add(EpochClosed(event_time=last.slot_start, epoch=last.epoch,
                         slot_seconds=last.slot_seconds, markets=(last.market,),
                         price_now=(1.0,), availability_now=(1,)))
    views = book.select(every=True)
    console = Console(width=width, file=io.StringIO(), record=True)
    console.print(jobs_table(book, views, console))
    lines = console.export_text().splitlines()
    rows = [[v.job_id, v.state, f"{v.cost_usd:,.2f}", str(v.restarts),
             v.standing("soft", book.now) or "-", v.standing("hard", book.now) or "-"]
            for v in views]
    assert_readable(lines, width, {v.job_id for v in views}, rows)
    assert {v.state for v in views} >= {"running", "finished"}


def test_the_replay_summary_marks_the_recommended_policy(replay):
    from solver.evaluation.compare import compare_policies
    from solver.policies.spec import RECOMMENDED

    data, jobs, _, summaries = replay
    _, with_it = compare_policies(data, jobs[:2], ["chc", RECOMMENDED])
    lines = render(summary_table(with_it, "two jobs"), 120)
    assert any(line.startswith(f"{RECOMMENDED} *") for line in lines), "\n".join(lines)
    assert any(line.startswith("* recommended") for line in lines)
    assert not any("*" in line for line in render(summary_table(summaries, "t"), 120))
