import json
import re

import pytest
from rich.console import Console
from typer.testing import CliRunner

from solver.evaluation.evaluate import CaseResult, PolicyStats
from streams.cli import app
from streams.cli.reports.evaluation import case_table, summary
from tests.scenarios import write_probe_trace


@pytest.mark.slow  # two fine-tune windows under every policy, the shadows and the sensitivity
def test_evaluate_prints_tables_and_writes_json_and_plots(tmp_path, drawn):
    trace = write_probe_trace(tmp_path / "probe.csv", hours=200)
    result = CliRunner().invoke(app, [
        "evaluate", "--trace", str(trace), "--scenario", "fine-tune", "--windows", "2",
        "--policy", "on-demand", "--policy", "prediction-free", "--policy", "policy-selection",
        "--json", str(tmp_path / "out.json"), "--plots", str(tmp_path / "plots")])
    assert result.exit_code == 0, result.output
    assert "fine-tune" in result.output and "prediction-free" in result.output
    text = " ".join(result.output.split())
    assert re.search(r"Regret after 4: [\d.]+, 8: [\d.]+, 16: [\d.]+ rounds", text)
    assert "policy-selection members' mean cost USD (shadows): risk-aware" in text
    summary = json.loads((tmp_path / "out.json").read_text())
    (scenario,) = summary["scenarios"]
    assert scenario["name"] == "fine-tune"
    assert list(scenario["policies"]) == ["on-demand", "prediction-free", "policy-selection"]
    assert set(scenario["policies"]["on-demand"]) == {
        "runs", "mean_cost_usd", "mean_utility", "mean_restarts", "hard_deadline_misses",
        "soft_deadline_misses", "mean_migrations", "mean_egress_usd"}
    assert scenario["selection"] == "policy-selection"
    assert set(scenario["selection_members"]) == {
        "risk-aware", "prediction-free", "prediction-free:sigma=0.75",
        "prediction-free:sigma=0.5", "uniform-progress"}
    assert scenario["policies"]["on-demand"]["runs"] == 16
    for png in ("utility_cost.png", "sensitivity.png", "regret.png"):
        assert (tmp_path / "plots" / png).stat().st_size > 0
    utility, cost = drawn["utility_cost.png"].axes
    for ax, field in ((utility, "mean_utility"), (cost, "mean_cost_usd")):
        names = [t.get_text() for t in ax.get_yticklabels()]
        assert names == list(scenario["policies"])
        assert [t.get_text().removesuffix(" (clipped)") for t in ax.texts] == [
            f"{scenario['policies'][n][field]:,.2f}" for n in names]
    regret = drawn["regret.png"].axes[0]
    assert all(float(t).is_integer() for t in regret.get_xticks())
    assert "wrote " + str(tmp_path / "plots" / "regret.png") in result.output


def test_evaluate_on_a_redrawn_market_says_so_and_plays_other_capacity(tmp_path):
    trace = write_probe_trace(tmp_path / "probe.csv", hours=200)
    costs = []
    for extra in ([], ["--resample", "3"]):
        out = tmp_path / f"out{len(extra)}.json"
        result = CliRunner().invoke(app, [
            "evaluate", "--trace", str(trace), "--scenario", "fine-tune", "--windows", "2",
            "--policy", "spot-only", "--json", str(out), *extra])
        assert result.exit_code == 0, result.output
        costs.append(json.loads(out.read_text())["scenarios"][0]["policies"]["spot-only"])
    assert "availability redrawn from its model (seed 3)" in " ".join(result.output.split())
    assert costs[0] != costs[1]


def test_evaluate_multi_region_on_chosen_zones_and_windows(tmp_path):
    trace = write_probe_trace(tmp_path / "probe.csv", hours=40,
                              zones=("us-east-1a", "us-east-2b", "us-west-2b"))
    table = tmp_path / "egress.csv"
    table.write_text("from,to,usd_per_gb\naws/us-east-1,aws/us-west-2,0.5\n")
    out = tmp_path / "out.json"
    result = CliRunner().invoke(app, [
        "evaluate", "--trace", str(trace), "--scenario", "multi-region",
        "--zone", "us-east-1a", "--zone", "us-west-2b", "--window-index", "0",
        "--window-index", "3", "--deadline-hours", "6", "--overhead-hours", "0.1",
        "--checkpoint-gb", "0", "--checkpoint-gb", "40", "--migration-table", str(table),
        "--policy", "eager-failover", "--policy", "optimum", "--json", str(out)])
    assert result.exit_code == 0, result.output
    cases = json.loads(out.read_text())["scenarios"]
    assert [c["name"] for c in cases] == ["multi-region 2 zones 4h/6h/0.1h/0GB",
                                          "multi-region 2 zones 4h/6h/0.1h/40GB"]
    free, heavy = (c["policies"]["eager-failover"] for c in cases)
    assert free["runs"] == heavy["runs"] == 2 and free["mean_egress_usd"] == 0
    # Eastward moves cost 0.02 USD/GB by the built-in table, westward 0.5 by the user's.
    moves = heavy["mean_migrations"]
    assert 0.8 * moves < heavy["mean_egress_usd"] < 20.0 * moves
    assert cases[1]["policies"]["optimum"]["mean_cost_usd"] <= heavy["mean_cost_usd"]


@pytest.mark.parametrize(("args", "message"), [
    (["--policy", "oracle"], "policy='oracle': expected one of on-demand"),
    (["--scenario", "multi-region", "--deadline-hours", "5", "--deadline-hours", "6"],
     "--deadline-hours [5.0, 6.0]: expected one value for multi-region"),
    (["--scenario", "multi-region", "--zone", "eu-west-1a"],
     "multi-region zone='eu-west-1a': expected one of us-east-1a, us-west-2b"),
    (["--scenario", "multi-region", "--checkpoint-gb", "-5"],
     "--checkpoint-gb -5.0: expected a size >= 0 GB"),
    (["--scenario", "cant-be-late", "--windows", "200"],
     "windows=200 of 1145 slots: expected at most 148"),
    (["--forecast", "psychic"], "--forecast psychic: expected one of distribution, point, "
                                "oracle"),
    (["--forecast", "orcale"], "--forecast orcale: expected one of distribution, point, "
                               "oracle (did you mean 'oracle'?)"),
    (["--scenario", "cantbelate"], "--scenario cantbelate: expected one of cant-be-late, "
                                   "multi-region, fine-tune, scarce, shapes (did you mean "
                                   "'cant-be-late'?)"),
    (["--executor", "rey"], "--executor rey: expected one of local, ray (did you mean 'ray'?)"),
    (["--policy", "chc:window_hours=0"], "window_hours=0.0: expected a positive duration"),
    (["--overhead-hours", "5", "--scenario", "cant-be-late"],
     "work 48 h, deadline 52 h, restart overhead 5 h: expected"),
])
def test_evaluate_names_a_bad_option(tmp_path, args, message):
    trace = write_probe_trace(tmp_path / "probe.csv", hours=70)
    result = CliRunner().invoke(app, ["evaluate", "--trace", str(trace), *args])
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())


def test_report_says_when_the_optimum_is_not_proven():
    stats = {"greedy": PolicyStats(8, 10.0, 5.0, 1.0, 0, 0),
             "optimum": PolicyStats(8, 9.0, 6.0, 1.0, 0, 0)}
    console = Console(width=200, record=True)
    for unproven in (0, 4):
        result = CaseResult("fine-tune", "fine-tune", stats, unproven_optimum=unproven)
        console.print(case_table(result, "fine-tune"))
        assert summary([result])["scenarios"][0]["optimum_unproven_jobs"] == unproven
    text = console.export_text()
    assert text.count("optimum: 4 of 8 jobs planned by a search a solver limit stopped") == 1
    without = CaseResult("fine-tune", "fine-tune", {"greedy": stats["greedy"]})
    assert "optimum_unproven_jobs" not in summary([without])["scenarios"][0]
