"""``spotsched evaluate --scenario shapes``, and the kept calibration against the traces."""

import json
from dataclasses import replace

import pytest
from rich.console import Console
from typer.testing import CliRunner

from evaluation.reports.shapes import shapes_tables
from solver.evaluation import shapes
from solver.evaluation.evaluate import CaseResult, PolicyStats
from solver.evaluation.scenarios import build_cases
from solver.evaluation.shape_calibration import CALIBRATION
from streams.cli import app
from tests.traces_dir import needs_traces, traces_dir


@pytest.fixture
def tiny_suite(monkeypatch):
    """The suite's default, cut to one 3-zone shape of one job and one of a single
    fixed-count job (both planned by the exact dynamic program)."""
    monkeypatch.setattr(shapes, "DEFAULT_SHAPES", replace(
        shapes.DEFAULT_SHAPES, zone_counts=(3,), workloads=("one", "fixed"),
        checkpoints_gb=(50.0,), fleet_jobs=1, history_days=1.0))


def test_evaluate_plays_the_shapes_on_the_seeds_asked_for(tmp_path, tiny_suite):
    out = tmp_path / "shapes.json"
    result = CliRunner().invoke(app, [
        "evaluate", "--scenario", "shapes", "--seeds", "tune", "--windows", "1",
        "--policy", "on-demand", "--policy", "optimum", "--workers", "1", "--no-cache",
        "--json", str(out)])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "shapes, 1 windows of the tune seeds, 3 zones: mean cost ÷ the optimum's" in text
    assert "mean utility" not in text  # one job a window: no fleet
    entries = json.loads(out.read_text())["scenarios"]
    assert [e["name"] for e in entries] == ["shapes 3 zones one 50GB",
                                            "shapes 3 zones fixed 50GB"]
    ratios = [e["policies"]["on-demand"]["mean_cost_usd"]
              / e["policies"]["optimum"]["mean_cost_usd"] for e in entries]
    assert "policy one 50GB fixed 50GB" in text
    assert f"on-demand {ratios[0]:.3f} {ratios[1]:.3f}" in text


def test_the_tables_give_cost_ratios_and_for_fleets_utility_ratios():
    cases = build_cases([], ["shapes"], 30, 0, shapes=replace(
        shapes.DEFAULT_SHAPES, windows=1, zone_counts=(3,), workloads=("one", "elastic"),
        checkpoints_gb=(0.0,), fleet_jobs=2, history_days=1.0))

    def stats(cost, utility):
        return PolicyStats(1, cost, utility, 0.0, 0, 0)

    results = [CaseResult("shapes", c.name, {"greedy": stats(12.0, 30.0),
                                             "optimum": stats(10.0, 40.0)}) for c in cases]
    results[1] = replace(results[1], policies={"greedy": stats(5.0, 1.0),
                                               "optimum": stats(4.0, -2.0)})
    console = Console(width=200, record=True)
    for table in shapes_tables(cases, results, "suite"):
        console.print(table)
    text = " ".join(console.export_text().split())
    costs, fleets = text.split("suite, 3 zones, fleets: mean utility ÷ the optimum's")
    assert "suite, 3 zones: mean cost ÷ the optimum's policy one 0GB elastic 0GB" in costs
    assert "greedy 1.200 1.250" in costs
    assert "policy elastic 0GB" in fleets and "greedy —" in fleets  # optimum's utility < 0


def test_evaluate_plays_only_the_workloads_zone_counts_and_checkpoints_asked_for(
        tmp_path, tiny_suite):
    out = tmp_path / "shapes.json"
    result = CliRunner().invoke(app, [
        "evaluate", "--scenario", "shapes", "--windows", "1", "--workload", "fixed",
        "--zone-count", "6", "--checkpoint-gb", "0", "--checkpoint-gb", "5",
        "--policy", "on-demand", "--workers", "1", "--no-cache", "--json", str(out)])
    assert result.exit_code == 0, result.output
    entries = json.loads(out.read_text())["scenarios"]
    assert [e["name"] for e in entries] == ["shapes 6 zones fixed 0GB",
                                            "shapes 6 zones fixed 5GB"]


@pytest.mark.parametrize(("flag", "value", "message"), [
    ("--workload", "lone", "--workload lone: expected one of one, fixed, elastic"),
    ("--zone-count", "31", "--zone-count 31: expected 1 to 30"),
    ("--zone-count", "0", "--zone-count 0: expected 1 to 30"),
])
def test_evaluate_refuses_a_shape_it_cannot_draw(flag, value, message):
    result = CliRunner().invoke(app, ["evaluate", "--scenario", "shapes", flag, value])
    assert result.exit_code != 0
    assert f"error: {message}" in " ".join(result.output.split())


def test_evaluate_refuses_a_seed_half_it_does_not_know():
    result = CliRunner().invoke(app, ["evaluate", "--scenario", "shapes", "--seeds", "test"])
    assert result.exit_code != 0
    assert "error: --seeds test: expected one of tune, held-out" in result.output


@needs_traces
def test_the_kept_calibration_is_what_the_traces_give():
    from evaluation.calibrate_shapes import calibrate_from

    derived = calibrate_from(traces_dir())
    for name, kept in vars(CALIBRATION).items():
        assert getattr(derived, name) == pytest.approx(kept, abs=5e-4), name
