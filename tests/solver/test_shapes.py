"""The ``shapes`` scenario: its markets follow the calibrated parameters, follow from the seed
alone, and play end to end."""

import math
from dataclasses import replace

import numpy as np
import pytest

from solver.evaluation.cells import EvaluationPlan, run
from solver.evaluation.evaluate import check_policies
from solver.evaluation.scenarios import SCENARIOS, build_cases, shapes_cases
from solver.evaluation.shape_calibration import (
    CALIBRATION,
    ShapeCalibration,
    capacity_shares,
    run_lengths,
)
from solver.evaluation.shape_markets import ON_DEMAND_USD_PER_HOUR, shape_market
from solver.evaluation.shapes import SEED_SPLITS, ShapesSpec, market_seed, shape_data
from solver.market import SECONDS_PER_HOUR

TINY = ShapesSpec(windows=1, zone_counts=(3,), workloads=("one", "fixed"),
                  checkpoints_gb=(0.0,), fleet_jobs=1, history_days=1.0)
"""Two shapes whose optimum is the exact dynamic program: fast enough for every run."""


def test_shapes_is_a_scenario_of_the_one_declaration():
    assert "shapes" in SCENARIOS
    cases = build_cases([], ["shapes"], 30, 0, shapes=TINY)
    assert [c.name for c in cases] == ["shapes 3 zones one 0GB", "shapes 3 zones fixed 0GB"]


def test_a_seed_gives_the_same_market_and_another_seed_another():
    first = shape_market(6, 16, 48.0, market_seed("tune", 0, 6, 0))
    again = shape_market(6, 16, 48.0, market_seed("tune", 0, 6, 0))
    other = shape_market(6, 16, 48.0, market_seed("tune", 0, 6, 1))
    for a, b in zip(first, again, strict=True):
        assert a.market == b.market
        np.testing.assert_array_equal(a.prices, b.prices)
        np.testing.assert_array_equal(a.available, b.available)
    assert not all(np.array_equal(a.available, o.available)
                   for a, o in zip(first, other, strict=True))


def test_the_tuning_and_held_out_halves_share_no_market():
    assert SEED_SPLITS == ("tune", "held-out")
    tune = shapes_cases(0, replace(TINY, seeds="tune", workloads=("one",)))
    held = shapes_cases(0, replace(TINY, seeds="held-out", workloads=("one",)))
    again = shapes_cases(0, replace(TINY, seeds="held-out", workloads=("one",)))
    assert not np.array_equal(tune[0].episodes[0].data.price, held[0].episodes[0].data.price)
    np.testing.assert_array_equal(held[0].episodes[0].data.price, again[0].episodes[0].data.price)
    np.testing.assert_array_equal(held[0].episodes[0].data.availability,
                                  again[0].episodes[0].data.availability)
    assert held[0].episodes[0].jobs == again[0].episodes[0].jobs
    with pytest.raises(ValueError, match="seeds='test': expected one of tune, held-out"):
        ShapesSpec(seeds="test")


@pytest.mark.parametrize("days", [1.0, 10.0])
def test_an_episode_shows_its_policies_up_to_a_week_before_its_window(days):
    spec = replace(TINY, history_days=days, workloads=("one",))
    episode = shapes_cases(0, spec)[0].episodes[0]
    data = shape_data(spec, 3, market_seed(spec.seeds, 0, 3, 0))
    start, shown = spec.history_slots, min(spec.history_slots, 7 * 24)
    assert episode.past is not None and len(episode.past) == shown
    np.testing.assert_array_equal(episode.past.price, data.price[:, start - shown:start])
    np.testing.assert_array_equal(episode.past.availability,
                                  data.availability[:, start - shown:start])
    assert episode.data.origin == data.slot_start(start)


@pytest.fixture(scope="module")
def long_markets():
    """Four seeds of 30 zones over 40 days."""
    return [t for k in range(4) for t in shape_market(30, 16, 40 * 24.0,
                                                       market_seed("tune", 7, 30, k))]


def test_a_shape_has_its_zone_count_and_one_market_per_zone():
    for zones in (3, 6, 13, 30):
        ticks = shape_market(zones, 16, 24.0, market_seed("tune", 0, zones, 0))
        assert len(ticks) == zones
        assert len({t.market.key for t in ticks}) == zones


def test_prices_spread_across_zones_and_move_daily_as_calibrated(long_markets):
    c = CALIBRATION
    first = np.log([t.prices[0] / ON_DEMAND_USD_PER_HOUR for k in range(20)
                    for t in shape_market(30, 16, 1.0, market_seed("tune", 7, 30, 100 + k))])
    assert first.mean() == pytest.approx(c.spot_share_log_mean, abs=0.03)
    assert first.std() == pytest.approx(c.price_spread_log_sd, rel=0.1)
    per_day = round(24 * SECONDS_PER_HOUR / np.diff(long_markets[0].times)[0])
    changes = np.concatenate([np.diff(np.log(t.prices[::per_day])) for t in long_markets])
    assert changes.std() == pytest.approx(c.daily_log_sd, rel=0.1)


def test_runs_and_gaps_have_the_calibrated_log_lengths(long_markets):
    c = CALIBRATION
    lengths = [run_lengths(t.times, t.available) for t in long_markets]
    for k, (mean, sd, zone_sd) in enumerate(((c.run_log_mean, c.run_log_sd, c.run_zone_sd),
                                             (c.gap_log_mean, c.gap_log_sd, c.gap_zone_sd))):
        logs = [np.log(pair[k]) for pair in lengths]
        assert np.concatenate(logs).mean() == pytest.approx(mean, abs=0.15)
        assert np.concatenate([x - x.mean() for x in logs]).std() == pytest.approx(sd, rel=0.1)
        assert np.std([x.mean() for x in logs]) == pytest.approx(zone_sd, rel=0.3)


def test_capacity_levels_follow_the_calibrated_shares(long_markets):
    shares = np.mean([capacity_shares(t.times, t.available) for t in long_markets], axis=0)
    np.testing.assert_allclose(shares, CALIBRATION.capacity_shares, atol=0.04)
    assert max(int(t.available.max()) for t in long_markets) == 16


def test_another_calibration_draws_another_market():
    flat = replace(CALIBRATION, price_spread_log_sd=0.0, daily_log_sd=0.0,
                   spot_share_log_mean=math.log(0.5))
    ticks = shape_market(5, 4, 72.0, market_seed("tune", 0, 5, 0), flat)
    assert {float(p) for t in ticks for p in t.prices} == {round(0.5 * ON_DEMAND_USD_PER_HOUR, 4)}
    assert max(int(t.available.max()) for t in ticks) <= 4


def test_a_calibration_with_shares_not_summing_to_one_is_refused():
    with pytest.raises(ValueError, match=r"capacity_shares=\(0.5, 0.5, 0.5, 0.5\)"):
        ShapeCalibration(**{**vars(CALIBRATION), "capacity_shares": (0.5, 0.5, 0.5, 0.5)})


def test_the_shapes_play_end_to_end_and_no_policy_beats_the_optimum():
    for case in build_cases([], ["shapes"], 30, 0, shapes=TINY):
        plan = EvaluationPlan((case,), check_policies(["greedy", "risk-aware", "optimum"]))
        result = run(plan).cases[0]
        optimum = result.policies["optimum"]
        assert optimum.runs == sum(len(e.jobs) for e in case.episodes)
        for name in ("greedy", "risk-aware"):
            assert result.policies[name].runs == optimum.runs
            assert result.policies[name].mean_cost_usd >= optimum.mean_cost_usd - 1e-6
