"""The forecast-report adapter: tables, JSON shape and plots."""

from __future__ import annotations

import json
import math

import numpy as np
from rich.console import Console

from streams.cli.reports.forecast import run_forecast_report
from tests.forecast.series import capacity, markets, step_prices


def test_report_has_the_documented_shape_and_writes_json_and_plots(tmp_path):
    data = markets([step_prices(80, 1), step_prices(80, 2)], [capacity(80, 1), capacity(80, 2)])
    console = Console(record=True, width=120)
    report = run_forecast_report(data, (1, 6), tmp_path / "out" / "report.json",
                                 tmp_path / "plots", console=console)
    on_file = json.loads((tmp_path / "out" / "report.json").read_text())
    assert on_file == json.loads(json.dumps(report))
    assert set(report["markets"]) == {m.key for m in data.markets}
    for entry in report["markets"].values():
        for field in ("price_mape", "price_mae", "availability_brier"):
            assert set(entry[field]) == {"1", "6"}
        assert set(entry["baselines"]) == {"persistence", "seasonal-naive", "moving-average"}
        for baseline in entry["baselines"].values():
            assert set(baseline["price_mape"]) == {"1", "6"}
            assert set(baseline["availability_brier"]) == {"1", "6"}
    assert report["model"] == {"price": "learned-drift", "availability": "semi-markov"}
    for name in ("price_mape.png", "availability_brier.png", "forecast_example.png"):
        assert (tmp_path / "plots" / name).stat().st_size > 0
    text = console.export_text()
    assert data.markets[0].key in text and "persistence" in text and "mean over 2 markets" in text


def test_unscored_values_are_written_as_null(tmp_path):
    # One slot: nothing can be scored, and the JSON must still be strict.
    data = markets(np.ones((1, 1)), np.ones((1, 1)))
    run_forecast_report(data, (1,), tmp_path / "r.json", None, console=Console(file=None,
                                                                                 quiet=True))
    text = (tmp_path / "r.json").read_text()
    assert "NaN" not in text
    entry = json.loads(text)["markets"][data.markets[0].key]
    assert entry["price_mape"] == {"1": None}


def test_a_market_without_spot_prices_is_said_so_and_its_price_left_unscored(tmp_path):
    data = markets(np.full((2, 80), 0.918), [capacity(80, 1), capacity(80, 2)])
    console = Console(record=True, width=120)
    report = run_forecast_report(data, (1, 6), tmp_path / "r.json", tmp_path / "plots",
                                 console=console)
    text = console.export_text()
    keys = [m.key for m in data.markets]
    assert f"no spot prices in {', '.join(keys)}: the price is the same in every slot" in text
    assert "MAPE" not in text and "Brier" in text
    for key in keys:
        assert all(math.isnan(v) for v in report["markets"][key]["price_mape"].values())
        assert not math.isnan(report["markets"][key]["availability_brier"]["1"])
    on_file = json.loads((tmp_path / "r.json").read_text())["markets"]
    assert all(on_file[key]["price_mape"] == {"1": None, "6": None} for key in keys)
    assert not (tmp_path / "plots" / "price_mape.png").exists()
    assert (tmp_path / "plots" / "availability_brier.png").stat().st_size > 0


def test_markets_with_prices_are_scored_beside_one_without(tmp_path):
    data = markets([step_prices(80, 1), np.full(80, 0.918)], [capacity(80, 1), capacity(80, 2)])
    console = Console(record=True, width=120)
    report = run_forecast_report(data, (1,), console=console)
    priced, unpriced = (m.key for m in data.markets)
    assert f"no spot prices in {unpriced}:" in console.export_text()
    assert not math.isnan(report["markets"][priced]["price_mape"]["1"])
    assert math.isnan(report["markets"][unpriced]["price_mape"]["1"])
