"""The hindsight optimum's gap in a replay: in its summary, its printed note and its report."""

import json

from typer.testing import CliRunner

from solver.evaluation.compare import compare_policies
from streams.cli import app
from streams.cli.reports.replay_summary import hindsight_notes
from tests.solver.helpers import crowded


def test_the_summary_carries_the_gap_the_plan_was_proven_within():
    data, jobs = crowded()
    _, summaries = compare_policies(data, jobs, ["greedy", "optimum:time_limit=0", "optimum"])
    greedy, stopped, searched = summaries
    assert greedy.gap_usd is None
    assert stopped.gap_usd is not None and stopped.gap_usd > 1.0
    assert searched.gap_usd == 0.0
    assert hindsight_notes(summaries) == [
        "optimum:time_limit=0: the best plan found within its search limit; the optimum's "
        f"utility is at most {stopped.gap_usd:,.2f} USD higher",
        "optimum: proven optimal"]
    assert hindsight_notes([greedy]) == []


def test_replay_prints_and_reports_the_optimums_gap(tmp_path):
    result = CliRunner().invoke(app, [
        "replay", "--days", "3", "--synthetic-markets", "2", "--n-jobs", "4", "--fixed-count",
        "--policy", "optimum", "--report", str(tmp_path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    gap = json.loads((tmp_path / "report.json").read_text())["policies"]["optimum"][
        "summary"]["gap_usd"]
    assert gap >= 0
    note = "optimum: proven optimal" if gap == 0 else f"utility is at most {gap:,.2f} USD higher"
    assert note in result.output.replace("\n", " ")
