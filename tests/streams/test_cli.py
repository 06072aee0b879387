"""The command line, run in-process (no broker)."""

import json
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from solver.synthetic import SyntheticMarketSpec, synthetic_ticks
from solver.traces.jobs_file import load_jobs
from streams.cli import app
from streams.cli.replay import _replay_inputs

runner = CliRunner()
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run(*args: str) -> str:
    result = runner.invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def plain_csv(tmp_path_factory):
    """A plain-CSV trace of two synthetic markets, 12 days of 15-minute ticks."""
    path = tmp_path_factory.mktemp("trace") / "market.csv"
    lines = ["timestamp,market,spot_price,available,on_demand_price"]
    ticks = synthetic_ticks(SyntheticMarketSpec(seed=9, n_markets=2, days=12, tick_seconds=900))
    for series in ticks:
        for t, p, a in zip(series.times, series.prices, series.available, strict=True):
            lines.append(f"{int(t)},{series.market.key},{p},{a},{series.market.on_demand_price}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_replay_prints_one_row_per_policy_with_on_demand_as_reference():
    out = run("replay", "--n-jobs", "6")
    for policy in ("on-demand", "spot-only", "greedy", "uniform-progress"):
        assert policy in out
    on_demand_row = next(line for line in out.splitlines() if line.startswith("on-demand "))
    assert "1.000" in on_demand_row


def test_replay_report_and_decisions(tmp_path, plain_csv):
    report, decisions = tmp_path / "report", tmp_path / "decisions.jsonl"
    run("replay", "--trace", str(plain_csv), "--n-jobs", "5", "--policy", "greedy",
        "--policy", "on-demand", "--report", str(report), "--decisions", str(decisions))
    document = json.loads((report / "report.json").read_text())
    assert set(document["policies"]) == {"greedy", "on-demand"}
    assert document["jobs"] == 5 and len(document["markets"]) == 2
    greedy = document["policies"]["greedy"]["summary"]
    assert greedy["total_cost"] == pytest.approx(
        sum(j["cost"] for j in document["policies"]["greedy"]["jobs"]))
    assert (report / "replay.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = [json.loads(line) for line in decisions.read_text().splitlines()]
    assert {r["policy"] for r in rows} == {"greedy", "on-demand"}
    assert all(r["spot"] == 0 for r in rows if r["policy"] == "on-demand")
    for r in rows:
        assert r["time"].endswith(":00:00Z")
        assert datetime.fromisoformat(r["time"]).timestamp() == r["epoch"] * 3600


def test_replay_generates_fixed_count_jobs_on_request(tmp_path):
    ticks = synthetic_ticks(SyntheticMarketSpec(seed=0, days=7))
    shapes = {fixed: [(j.n_min, j.n_max) for j in _replay_inputs(ticks, 3600, None, 12, 0,
                                                                   fixed)[1]]
              for fixed in (False, True)}
    assert all(n_min == n_max for n_min, n_max in shapes[True])
    assert any(n_min < n_max for n_min, n_max in shapes[False])
    assert [n for _, n in shapes[True]] == [n for _, n in shapes[False]]
    run("replay", "--n-jobs", "4", "--policy", "on-demand", "--fixed-count", "--report",
        str(tmp_path))
    assert json.loads((tmp_path / "report.json").read_text())["inputs"]["fixed_count"] is True


def test_replay_per_job_prints_every_job_under_every_policy():
    jobs = load_jobs(EXAMPLES / "jobs.json")
    out = run("replay", "--jobs", str(EXAMPLES / "jobs.json"), "--policy", "greedy",
              "--policy", "on-demand", "--per-job")
    lines = out.splitlines()
    title = next(k for k, line in enumerate(lines) if line.strip().startswith("jobs per policy"))
    cells, policy = [], None
    for line in lines[title + 3:]:
        if line and not line.startswith(" "):
            policy = line.strip()
        elif line.strip():
            job, restarts, refusals, preemptions, cost, day, minute, met = line.split()
            cells.append([job, policy, restarts, refusals, preemptions, cost,
                          f"{day} {minute}", met])
    assert [(c[0], c[1]) for c in cells] == [(j.id, p) for p in ("greedy", "on-demand")
                                             for j in jobs]
    for _, _, restarts, refusals, preemptions, cost, finished, met in cells:
        assert int(restarts) >= 0 and int(refusals) >= 0 and int(preemptions) >= 0
        assert float(cost.replace(",", "")) > 0
        assert datetime.strptime(finished, "%Y-%m-%d %H:%M").year == 2025
        assert met in {"soft", "hard", "no"}
    assert all(int(c[4]) == 0 for c in cells if c[1] == "on-demand")


def test_replay_is_reproducible_for_a_seed_and_varies_with_it(tmp_path):
    outputs = []
    for seed in ("1", "1", "2"):
        path = tmp_path / f"d{len(outputs)}.jsonl"
        run("replay", "--n-jobs", "4", "--days", "3", "--seed", seed, "--policy", "greedy",
            "--decisions", str(path))
        outputs.append(path.read_text())
    assert outputs[0] == outputs[1] != outputs[2]


def test_replay_with_a_workload_file(tmp_path, plain_csv):
    start = int(np.ceil(synthetic_ticks(SyntheticMarketSpec(seed=9, n_markets=1, days=1))[0]
                        .times[0] / 3600) * 3600)
    jobs = tmp_path / "jobs.json"
    jobs.write_text(json.dumps([{
        "id": "fine-tune-1", "workload": 6.0, "release": start + 7200,
        "soft_deadline": start + 7200 + 12 * 3600, "hard_deadline": start + 7200 + 16 * 3600,
        "n_min": 1, "n_max": 2, "value": 100.0, "restart_overhead": 300.0}]))
    out = run("replay", "--trace", str(plain_csv), "--jobs", str(jobs))
    assert "1 jobs" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--policy", "magic"], "policy='magic': expected one of on-demand"),
        (["--policy", "chc:window=3"], "policy chc: parameter 'window': expected one of"),
        (["--days", "2"], "--days 2: the market spans 48.0 h, too short for a generated job"),
    ],
)
def test_replay_rejects_bad_input_clearly(args, message):
    result = runner.invoke(app, ["replay", *args])
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())


def test_markets_and_schema_commands(tmp_path, plain_csv):
    catalogue = json.loads(run("markets", "--trace", str(plain_csv)))
    assert list(catalogue.values()) == [3.06, 3.06] and all(k.count("/") == 3 for k in catalogue)
    synthetic = json.loads(run("markets"))  # the market the other commands replay by default
    assert synthetic == json.loads((EXAMPLES.parent / "deploy/synthetic-markets.json").read_text())
    assert list(json.loads(run("markets", "--synthetic-markets", "2"))) == list(synthetic)[:2]
    run("schema", "--out", str(tmp_path / "schemas"))
    names = {p.name for p in (tmp_path / "schemas").iterdir()}
    assert {"price_tick.schema.json", "provisioning_decision.schema.json"} <= names


def test_forecast_report_command_writes_its_json(tmp_path, plain_csv):
    out = tmp_path / "forecast.json"
    printed = run("forecast-report", "--trace", str(plain_csv), "--horizon", "1", "--horizon",
                  "6", "--json", str(out))
    assert f"wrote {out}" in printed.splitlines()
    report = json.loads(out.read_text())
    assert len(report["markets"]) == 2
    for scores in report["markets"].values():
        assert set(scores["price_mape"]) == {"1", "6"}
        assert "persistence" in scores["baselines"]


def test_replay_shows_migrations_and_egress_once_a_move_costs_something(tmp_path):
    jobs = json.loads((EXAMPLES / "jobs.json").read_text())
    for job in jobs:
        job.update(checkpoint_gb=200.0, home_region="aws/us-east-1")
    path = tmp_path / "jobs.json"
    path.write_text(json.dumps(jobs))
    out = run("replay", "--jobs", str(path), "--policy", "greedy", "--per-job", "--report",
              str(tmp_path / "report"))
    assert out.count("egress") == 2  # a column of the summary and of the jobs table
    greedy = json.loads((tmp_path / "report" / "report.json").read_text())["policies"]["greedy"]
    egress = greedy["summary"]["egress_usd"]
    assert egress > 0 and egress == pytest.approx(sum(j["egress_usd"] for j in greedy["jobs"]))
    assert greedy["summary"]["migrations"] == sum(j["migrations"] for j in greedy["jobs"])
