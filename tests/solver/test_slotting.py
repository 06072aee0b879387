import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.market import Market, MarketTicks, build_market_data
from solver.slotting import LateTickError, SlotCutter
from tests.properties import examples


def test_ticks_at_a_boundary_count_for_the_next_slot_only():
    cutter = SlotCutter(100)
    assert cutter.update(0, 1.0, 5) == []
    # A tick at boundary 100 closes boundary 0 (the uncovered slot before the first tick) but
    # not boundary 100 itself: another tick at 100 could still change what is in force there.
    assert [c.boundary for c in cutter.update(100, 3.0, 0)] == [0]
    (first,) = cutter.update(150, None, 2)
    assert first.boundary == 100 and first.price == 1.0 and first.availability == 5
    assert first.price_now == 3.0 and first.availability_now == 0
    (second,) = cutter.update(250, 1.0, None)
    assert second.boundary == 200
    assert second.price == pytest.approx(3.0) and second.availability == 0


def test_uncovered_first_slot_and_gaps():
    cutter = SlotCutter(100)
    cutter.update(30, 2.0, 1)
    closes = cutter.update(420, 1.0, 1)
    assert [c.boundary for c in closes] == [100, 200, 300, 400]
    assert closes[0].price is None and closes[0].availability is None
    assert all(c.price == 2.0 and c.availability == 1 for c in closes[1:])


def test_price_without_availability_opens_no_slot_and_late_ticks_are_rejected():
    cutter = SlotCutter(100)
    assert cutter.update(0, price=1.0) == [] and cutter.update(500, price=2.0) == []
    assert cutter.update(510, available=3) == []
    assert [c.boundary for c in cutter.update(720, available=3)] == [600, 700]
    with pytest.raises(LateTickError, match=r"time=700.*before the market's last tick"):
        cutter.update(700, price=1.0)


def oracle(times, prices, available, start, end):
    """Slot values straight from the step-function definition."""
    mean, low = 0.0, None
    for i, t in enumerate(times):
        until = times[i + 1] if i + 1 < len(times) else np.inf
        a, b = max(t, start), min(until, end)
        if b > a:
            mean += prices[i] * (b - a)
            low = available[i] if low is None else min(low, available[i])
    return mean / (end - start), low


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.tuples(st.integers(1, 150), st.floats(0.1, 5.0), st.integers(0, 6)),
                min_size=2, max_size=40),
       st.sampled_from([25, 60, 100]))
def test_batch_slots_match_the_step_function_definition(steps, slot):
    times = np.cumsum([s[0] for s in steps]).astype(float)
    prices = [s[1] for s in steps]
    available = [s[2] for s in steps]
    market = Market("aws", "r", "z", "t", 3.0)
    try:
        data = build_market_data([MarketTicks(market, times, prices, available)], slot)
    except ValueError:
        assert times[-1] - np.ceil(times[0] / slot) * slot <= slot
        return
    for k in range(data.n_slots):
        start = data.slot_start(k)
        mean, low = oracle(times, prices, available, start, start + slot)
        assert data.price[0, k] == pytest.approx(mean)
        assert data.availability[0, k] == low
        in_force = np.searchsorted(times, start, side="right") - 1
        assert data.boundary_price[0, k] == prices[in_force]
        assert data.boundary_availability[0, k] == available[in_force]
    assert data.slot_start(data.n_slots) < times[-1]
