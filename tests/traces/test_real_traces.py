"""The public traces (``../shared/traces``) load with the values their SOURCE.md files state."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from solver.market import MarketTicks, build_market_data
from solver.traces import load_trace, load_traces
from tests.traces_dir import needs_traces, traces_dir

pytestmark = [pytest.mark.traces, needs_traces]

SKYNOMAD = ("skynomad-artifact/"
            "aws_p3.2xlarge_availability_and_spot_price_2023-02-15_to_2023-04-02.csv.gz")
FEB_2023 = "skypilot-spot-traces/availability/1-node/aws-02-15-2023"

# skynomad-artifact/SOURCE.md: zone → (available share, price min, price max, time-mean price).
ZONES = {
    "us-east-1a": (0.167, 1.4429, 1.8464, 1.6539),
    "us-east-1c": (0.467, 1.1680, 1.4053, 1.2775),
    "us-east-1d": (0.447, 1.1142, 1.3661, 1.2346),
    "us-east-2b": (0.682, 0.9180, 1.0331, 0.9279),
    "us-west-2a": (0.883, 0.9180, 1.0461, 0.9453),
    "us-west-2b": (0.905, 0.9180, 1.0339, 0.9474),
}


@pytest.fixture(scope="module")
def skynomad() -> list[MarketTicks]:
    return load_trace(traces_dir() / SKYNOMAD)


def test_skynomad_csv_has_six_zones_with_their_shares_and_prices(
    skynomad: list[MarketTicks],
) -> None:
    assert [t.market.zone for t in skynomad] == list(ZONES)
    for ticks in skynomad:
        share, low, high, _ = ZONES[ticks.market.zone]
        assert ticks.market.instance_type == "p3.2xlarge"
        assert ticks.market.on_demand_price == 3.06
        assert len(ticks.times) == 20158
        assert ticks.available.mean() == pytest.approx(share, abs=0.0005)
        assert (ticks.prices.min(), ticks.prices.max()) == (low, high)
        assert ticks.times[0] == 1676498896.0  # 2023-02-15T22:08:16Z
        steps = np.diff(ticks.times)
        assert (steps.min(), steps.max()) == (194.0, 280.0)


def test_cant_be_late_json_matches_the_csv(skynomad: list[MarketTicks]) -> None:
    (json_ticks,) = load_trace(traces_dir() / FEB_2023 / "us-east-1a_v100_1.json")
    assert json_ticks.market.key == skynomad[0].market.key
    assert len(json_ticks.times) == 20158
    np.testing.assert_array_equal(np.diff(json_ticks.times), 195.0)
    np.testing.assert_array_equal(json_ticks.available, skynomad[0].available)


def test_hourly_slots_of_the_csv(skynomad: list[MarketTicks]) -> None:
    data = build_market_data(skynomad, 3600)
    assert len(data.markets) == 6
    # Whole hours from 2023-02-15T23:00Z (first after 22:08:16) to 2023-04-02T11:00Z.
    assert data.n_slots == 1092
    for row, market in enumerate(data.markets):
        _, low, high, mean = ZONES[market.zone]
        assert data.price[row].min() >= low - 1e-9 and data.price[row].max() <= high + 1e-9
        assert data.price[row].mean() == pytest.approx(mean, abs=0.001)


def test_feb_2023_folder_loads_as_six_markets() -> None:
    paths = sorted((traces_dir() / FEB_2023).glob("*.json"))
    series = load_traces(paths)
    assert sorted(t.market.zone for t in series) == sorted(ZONES)
    assert {len(t.times) for t in series} == {20158}


def test_every_cant_be_late_file_loads() -> None:
    extra = {"r5.16xlarge": 4.032, "c3-highcpu-88": 3.5}
    paths = sorted((traces_dir() / "skypilot-spot-traces").rglob("*.json"))
    assert len(paths) == 31
    for path in paths:
        (ticks,) = load_trace(path, on_demand_prices=extra)
        assert ticks.market.zone == Path(path).name.split("_")[0]
        assert ticks.available.min() >= 0
