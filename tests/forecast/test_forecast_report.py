"""The forecast-report adapter: tables, JSON shape and plots."""

from __future__ import annotations

import json

import numpy as np
from rich.console import Console

from streams.reports.forecast import run_forecast_report
from tests.forecast.series import capacity, step_prices
from tests.forecast.test_evaluation import markets


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
