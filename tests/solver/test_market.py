import math

import numpy as np
import pytest

from solver.market import (
    Market,
    MarketData,
    MarketTicks,
    build_market_data,
    hours_to_slots,
    tick_slots,
)

M = Market("aws", "us-east-1", "us-east-1a", "p3.2xlarge", 3.06)


def ticks(times, prices, available, market=M):
    return MarketTicks(market, np.array(times, float), np.array(prices, float),
                       np.array(available))


def test_slot_price_is_time_weighted_and_availability_is_the_minimum():
    # Slot [3600, 7200): price 1.0 for 900 s, then 2.0 for 2700 s; availability dips to 0.
    series = ticks([3000, 4500, 5000, 5400, 8000, 11000],
                   [1.0, 2.0, 2.0, 2.0, 3.0, 3.0],
                   [4, 4, 0, 3, 3, 3])
    data = build_market_data([series], 3600)
    assert data.origin == 3600 and data.n_slots == 2
    assert data.price[0, 0] == pytest.approx((900 * 1.0 + 2700 * 2.0) / 3600)
    assert data.availability[0, 0] == 0
    assert data.boundary_price[0, 0] == 1.0 and data.boundary_availability[0, 0] == 4
    # Slot [7200, 10800): 2.0 until 8000, then 3.0.
    assert data.price[0, 1] == pytest.approx((800 * 2.0 + 2800 * 3.0) / 3600)
    assert data.availability[0, 1] == 3


def test_grid_is_common_to_all_markets_and_anchored():
    other = Market("aws", "us-east-1", "us-east-1c", "p3.2xlarge", 3.06)
    a = ticks([0, 10_000], [1.0, 1.0], [1, 1])
    b = ticks([5000, 20_000], [2.0, 2.0], [2, 2], market=other)
    data = build_market_data([a, b], 1000)
    assert data.origin == 5000 and data.n_slots == 4  # the last slot must end before 10000
    anchored = build_market_data([a, b], 1000, anchor=500)
    assert anchored.origin == 5500 and anchored.n_slots == 4


def test_unfilled_grid_is_rejected_with_the_span():
    with pytest.raises(ValueError, match="holds no whole slot"):
        build_market_data([ticks([0, 100], [1, 1], [1, 1])], 3600)


@pytest.mark.parametrize(
    ("times", "prices", "available", "message"),
    [
        ([0, 0], [1, 1], [1, 1], "not after tick 0"),
        ([0, 1], [1, float("nan")], [1, 1], "tick 1 price=nan"),
        ([0, 1], [1, -1], [1, 1], "expected a finite price >= 0"),
        ([0, 1], [1, 1], [1, -2], "tick 1 available=-2"),
        ([0, 1], [1], [1, 1], "same length"),
    ],
)
def test_bad_ticks_are_rejected_naming_the_tick(times, prices, available, message):
    with pytest.raises(ValueError, match=message):
        ticks(times, prices, available)


def test_market_key_round_trip_and_validation():
    assert Market.parse_key(M.key, 3.06) == M
    with pytest.raises(ValueError, match="expected 'cloud/region/zone/instance_type'"):
        Market.parse_key("aws/us-east-1a", 3.06)
    with pytest.raises(ValueError, match="on_demand_price=0"):
        Market("aws", "r", "z", "t", 0)


def test_market_data_is_read_only_and_windows_keep_values():
    data = MarketData.from_slots([M], 0, 60, np.arange(10.0)[None, :], np.ones((1, 10), int))
    with pytest.raises(ValueError):
        data.price[0, 0] = 5.0
    window = data.window(3, 4)
    assert window.origin == 180 and list(window.price[0]) == [3.0, 4.0, 5.0, 6.0]
    with pytest.raises(ValueError, match=r"expected inside 0\.\.10"):
        data.window(8, 4)


def test_tick_slots_take_ticks_as_slots_whatever_their_spacing():
    series = ticks([100, 295, 575], [1.0, 2.0, 3.0], [1, 0, 1])
    data = tick_slots([series], 195)
    assert data.origin == 100 and data.n_slots == 3
    assert list(data.price[0]) == [1.0, 2.0, 3.0] and list(data.availability[0]) == [1, 0, 1]
    other = ticks([0, 1], [1, 1], [1, 1], market=Market("aws", "r", "z", "t", 1.0))
    with pytest.raises(ValueError, match=r"same tick count in every market, got \[2, 3\]"):
        tick_slots([series, other], 195)


@pytest.mark.parametrize(("hours", "slot_seconds", "rounding", "slots"), [
    (2.4, 3600.0, round, 2),
    (2.6, 3600.0, round, 3),
    (0.5, 600.0, round, 3),
    (0.2, 3600.0, round, 1),  # at least one slot
    (2.2, 3600.0, math.ceil, 3),
    (48.0, 3600.0, math.ceil, 48),
    (0.01, 195.0, math.ceil, 1),
])
def test_hours_are_counted_in_whole_slots_of_any_length(hours, slot_seconds, rounding, slots):
    assert hours_to_slots(hours, slot_seconds, rounding) == slots
