"""Which ticks a feed publishes: heartbeats, slot-boundary probes, changes, and resumption."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connectors.feeds.base import PriceChange
from connectors.feeds.planner import AVAILABILITY, PRICE, FeedGrid, plan, position
from solver.market import Market
from streams.contract import AvailabilityTick, PriceTick
from streams.pipeline.market_stage import MarketStage
from tests.properties import examples

MARKET = Market("aws", "us-east-1", "us-east-1a", "p3.2xlarge", 3.06)
GRID = FeedGrid(heartbeat_seconds=600, slot_seconds=3600, available=8)
T0 = 1_736_121_600.0  # a slot boundary


def shown(ticks) -> list[tuple[float, str, float]]:
    return [(t.event_time.timestamp() - T0, "price" if isinstance(t, PriceTick) else "probe",
             t.spot_price if isinstance(t, PriceTick) else t.available) for t in ticks]


def test_heartbeats_changes_and_probes_from_a_slot_boundary():
    changes = [PriceChange(T0 - 5000, 1.0), PriceChange(T0 + 900, 1.5),
               PriceChange(T0 + 1200, 1.25)]
    ticks = plan(MARKET, changes, (T0, -1), T0 + 3600, GRID)
    assert shown(ticks) == [
        (0, "price", 1.0), (0, "probe", 8),
        (600, "price", 1.0), (900, "price", 1.5),
        (1200, "price", 1.25),  # a change on a heartbeat is one tick
        (1800, "price", 1.25), (2400, "price", 1.25), (3000, "price", 1.25),
        (3600, "price", 1.25), (3600, "probe", 8),
    ]
    assert all(t.on_demand_price == 3.06 for t in ticks if isinstance(t, PriceTick))
    assert all(t.reason == "probe" for t in ticks if isinstance(t, AvailabilityTick))
    assert [position(t)[1] for t in ticks[:2]] == [PRICE, AVAILABILITY]


def test_no_price_ticks_before_the_first_known_change():
    ticks = plan(MARKET, [PriceChange(T0 + 700, 2.0)], (T0, -1), T0 + 1200, GRID)
    assert shown(ticks) == [(0, "probe", 8), (700, "price", 2.0), (1200, "price", 2.0)]


def test_resuming_after_the_probe_of_a_boundary_continues_with_the_next_tick():
    changes = [PriceChange(T0 - 1, 1.0)]
    ticks = plan(MARKET, changes, (T0, AVAILABILITY), T0 + 1200, GRID)
    assert shown(ticks) == [(600, "price", 1.0), (1200, "price", 1.0)]
    assert plan(MARKET, changes, (T0, PRICE), T0, GRID)[0].available == 8


@settings(max_examples=examples(60), deadline=None)
@given(
    changes=st.lists(st.tuples(st.integers(-3000, 20000), st.integers(1, 400)), min_size=1,
                     max_size=12),
    cuts=st.lists(st.integers(0, 18000), max_size=5),
)
def test_planning_in_pieces_gives_the_whole_sequence_once(changes, cuts):
    """However the feed is stopped and resumed, it publishes the same ticks, once each."""
    history = sorted({PriceChange(T0 + t, p / 100) for t, p in changes})
    history = [c for i, c in enumerate(history) if i == 0 or c.time != history[i - 1].time]
    end = T0 + 18000
    whole = plan(MARKET, history, (T0, -1), end, GRID)
    pieces, after = [], (T0, -1)
    for cut in [*sorted(cuts), 18000]:
        # a restart resumes after the last tick on the topic, seeing only the history the
        # source returns from there on (with the change in force then)
        seen = [c for c in history if c.time >= after[0]]
        earlier = [c for c in history if c.time < after[0]]
        piece = plan(MARKET, earlier[-1:] + seen, after, T0 + cut, GRID)
        pieces += piece
        after = position(piece[-1]) if piece else after
    assert pieces == whole
    assert len({t.idempotency_key for t in whole}) == len(whole)


def test_grid_rules():
    with pytest.raises(ValueError, match="--heartbeat-seconds 700: expected a divisor of the "
                       "slot length 3600 s"):
        FeedGrid(heartbeat_seconds=700, slot_seconds=3600, available=1)
    with pytest.raises(ValueError, match="expected a positive number of seconds"):
        FeedGrid(heartbeat_seconds=0, slot_seconds=3600, available=1)
    with pytest.raises(ValueError, match="expected a count >= 0"):
        FeedGrid(heartbeat_seconds=60, slot_seconds=3600, available=-1)
    assert GRID.slot_start(T0 + 3599.5) == T0


def test_the_market_stage_closes_each_boundary_at_its_first_heartbeat():
    """Without heartbeats a market that does not change price would hold epochs open."""
    stage = MarketStage([MARKET], GRID.slot_seconds)
    ticks = plan(MARKET, [PriceChange(T0 - 60, 1.0)], (T0, -1), T0 + 3 * 3600 + 600, GRID)
    closed = {}
    for tick in ticks:
        for out in stage.handle(tick):
            if out.type == "market_boundary":
                closed.setdefault(out.event_time.timestamp() - T0, tick.event_time.timestamp()
                                  - T0)
    assert closed == {0: 600, 3600: 4200, 7200: 7800, 10800: 11400}


def test_connector_reports_lower_a_slot_and_the_next_boundary_restores_the_assumption():
    """A refusal inside a slot counts for that slot; the feed's probe at the next boundary
    starts the next slot with the assumed capacity again."""
    stage = MarketStage([MARKET], GRID.slot_seconds)
    refused = AvailabilityTick(event_time=T0 + 3600 + 1500, market=MARKET.key, available=1,
                               reason="refused")
    ticks = plan(MARKET, [PriceChange(T0, 1.0)], (T0, -1), T0 + 3 * 3600 + 600, GRID)
    merged = sorted([*ticks, refused], key=lambda t: t.event_time)
    boundaries = [out for tick in merged for out in stage.handle(tick)
                  if out.type == "market_boundary"]
    slot_availability = {b.event_time.timestamp() - T0: b.availability for b in boundaries}
    now = {b.event_time.timestamp() - T0: b.availability_now for b in boundaries}
    assert slot_availability == {0: None, 3600: 8, 7200: 1, 10800: 8}
    assert now == {0: 8, 3600: 8, 7200: 8, 10800: 8}
