"""On-demand prices on the command line: --on-demand-price and --prices on every command that
loads traces, and the one-line error when a type has no price."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from solver.traces import load_traces
from streams.cli import app

runner = CliRunner()

TYPE = "a100_40gb_8"
KEY = f"gcp/us-central1/us-central1-a/{TYPE}"


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    """Three days of a Can't Be Late trace whose device is no instance type of the table."""
    path = tmp_path / f"us-central1-a_{TYPE}.json"
    data = [1 if (i // 7) % 3 else 0 for i in range(3 * 24 * 6)]
    path.write_text(json.dumps({"metadata": {"gap_seconds": 600}, "data": data}))
    return path


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def message(result) -> str:
    """The output as one line (the console wraps long lines at its width)."""
    return " ".join(result.output.split())


def catalogue(*args: str) -> dict[str, float]:
    result = invoke("markets", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_a_type_outside_the_table_fails_with_one_line_naming_it_and_the_flag(trace: Path):
    result = invoke("markets", "--trace", str(trace))
    assert result.exit_code == 2
    line = message(result)
    assert line.startswith("error: ") and line.count("error:") == 1 and f"'{TYPE}'" in line
    assert f"--on-demand-price {TYPE}=USD_PER_HOUR or --prices FILE" in line
    assert "Traceback" not in result.output


def test_on_demand_price_flag_prices_the_type(trace: Path):
    assert catalogue("--trace", str(trace), "--on-demand-price", f"{TYPE}=29.39") == {KEY: 29.39}


@pytest.mark.parametrize("suffix", [".json", ".csv"])
def test_prices_file_and_flag_precedence(trace: Path, tmp_path: Path, suffix: str):
    table = tmp_path / f"prices{suffix}"
    if suffix == ".json":
        table.write_text(json.dumps({TYPE: 30.0, "p3.2xlarge": 2.5}))
    else:
        table.write_text(f"instance_type,on_demand_price\n{TYPE},30.0\np3.2xlarge,2.5\n")
    assert catalogue("--trace", str(trace), "--prices", str(table)) == {KEY: 30.0}
    assert catalogue("--trace", str(trace), "--prices", str(table),
                     "--on-demand-price", f"{TYPE}=31") == {KEY: 31.0}


def test_replay_runs_on_the_priced_trace(trace: Path):
    result = invoke("replay", "--trace", str(trace), "--n-jobs", "3", "--policy", "on-demand",
                    "--on-demand-price", f"{TYPE}=29.39")
    assert result.exit_code == 0, result.output
    assert "on-demand" in result.output and "3 jobs" in result.output


@pytest.mark.parametrize("command", [
    ("replay", "--n-jobs", "2", "--policy", "on-demand"),
    ("forecast-report",),
    ("evaluate", "--windows", "1", "--policy", "on-demand"),
])
def test_every_trace_command_takes_the_price_options(trace: Path, command: tuple[str, ...]):
    unpriced = invoke(*command, "--trace", str(trace))
    assert unpriced.exit_code == 2 and f"--on-demand-price {TYPE}=" in message(unpriced)
    bad = invoke(*command, "--trace", str(trace), "--on-demand-price", f"{TYPE}=free")
    assert bad.exit_code == 2
    assert message(bad) == (f"error: --on-demand-price '{TYPE}=free': expected "
                                  "TYPE=USD_PER_HOUR with a positive price, e.g. "
                                  "a3-highgpu-8g=88.49")


def test_bad_prices_file_is_a_one_line_error(trace: Path, tmp_path: Path):
    table = tmp_path / "prices.json"
    table.write_text(json.dumps({TYPE: -3}))
    result = invoke("markets", "--trace", str(trace), "--prices", str(table))
    assert result.exit_code == 2
    assert message(result) == (f"error: {table}: field '{TYPE}' = -3: expected a number "
                                     "> 0")


def test_connector_sim_prices_its_traces(trace: Path, tmp_path: Path):
    from connectors.worker import WorkerOptions, build_connector
    from streams.settings import Settings

    unpriced = invoke("connector", "sim", "--trace", str(trace), "--data-dir", str(tmp_path))
    assert unpriced.exit_code == 2 and f"--on-demand-price {TYPE}=" in message(unpriced)
    ticks = load_traces([trace], on_demand_prices={TYPE: 29.39})
    connector = build_connector(Settings(data_dir=tmp_path),
                                WorkerOptions(name="sim", sim_ticks=tuple(ticks)))
    assert [m.key for m in connector.cloud.data.markets] == [KEY]
    assert connector.cloud.data.markets[0].on_demand_price == 29.39
