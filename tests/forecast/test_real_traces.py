"""The forecasters on the public traces: the accuracy targets, measured, not assumed."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from solver.forecast import baseline_factories, evaluate_markets, market_factory
from solver.forecast.evaluation import mean_over_markets
from solver.market import MarketData, build_market_data
from solver.traces import load_trace
from solver.traces.spotlake_daily import load_spotlake_daily
from tests.traces_dir import needs_traces, traces_dir

pytestmark = [pytest.mark.traces, needs_traces]

AWS_P3 = Path(
    "skynomad-artifact/aws_p3.2xlarge_availability_and_spot_price_2023-02-15_to_2023-04-02.csv.gz"
)
SPOTLAKE_DAILY = Path("spotlake-daily-via-ec2-spot-dashboard/gpu_spot_price_daily.csv.gz")
LONG_HORIZONS = (6, 12, 24)


def trace(relative: Path) -> Path:
    path = traces_dir() / relative
    if not path.exists():
        pytest.skip(f"{relative} is not in the traces folder")
    return path


SCORED = pytest.mark.slow  # scoring every forecaster on every hour of the trace


@pytest.fixture(scope="module")
def aws_scores():
    data = build_market_data(load_trace(trace(AWS_P3)), 3600)
    factories = {"model": market_factory(), "persistence": baseline_factories()["persistence"]}
    return data, evaluate_markets(data, factories)


@SCORED
def test_one_hour_ahead_price_mape_is_at_most_5_percent(aws_scores):
    data, scores = aws_scores
    assert len(data.markets) == 6
    for key, s in scores["model"].items():
        assert s.price_mape[1] <= 5.0, key


@SCORED
def test_the_price_model_beats_persistence_from_6_hours_ahead(aws_scores):
    _, scores = aws_scores
    model = mean_over_markets(scores["model"], "price_mape")
    persistence = mean_over_markets(scores["persistence"], "price_mape")
    for h in LONG_HORIZONS:
        assert model[h] < persistence[h], h
    for key, s in scores["model"].items():
        for h in LONG_HORIZONS:
            assert s.price_mape[h] < scores["persistence"][key].price_mape[h], (key, h)


@SCORED
def test_the_availability_brier_score_at_6_hours_is_10_percent_better_than_persistence(
    aws_scores,
):
    _, scores = aws_scores
    model = mean_over_markets(scores["model"], "availability_brier")[6]
    persistence = mean_over_markets(scores["persistence"], "availability_brier")[6]
    assert model <= 0.9 * persistence
    for key, s in scores["model"].items():
        assert s.availability_brier[6] <= 0.9 * scores["persistence"][key].availability_brier[6]


def test_the_daily_spotlake_series_are_forecast_end_to_end():
    series = load_spotlake_daily(
        trace(SPOTLAKE_DAILY), regions={"us-east-1"},
        instance_types={"p4d.24xlarge", "p5.48xlarge"},
    )
    data: MarketData = build_market_data(series, 86400)
    assert data.n_slots > 800
    scores = evaluate_markets(data, {"model": market_factory()}, horizons=(1, 7, 28))
    for s in scores["model"].values():
        assert all(math.isfinite(v) and v > 0 for v in s.price_mape.values())
