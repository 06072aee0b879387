"""Moving a job's checkpoint: the table's localities, transfer times and egress, and the
engine's accounting of moves."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.job import Allocation
from solver.market import Market, MarketData
from solver.migration import DEFAULT_MIGRATION, STAY, MigrationTable, Place
from solver.policies.common import on_demand, on_demand_market
from solver.simulator import simulate
from tests.properties import examples
from tests.solver.helpers import HOUR, RandomPolicy, Scripted, job

AWS_1A = Place("aws", "us-east-1", "us-east-1a")


def place(key: str) -> Place:
    return Place.parse(key)


@pytest.mark.parametrize(("destination", "locality", "usd_per_gb"), [
    ("aws/us-east-1/us-east-1a", "same-zone", 0.0),
    ("aws/us-east-1/us-east-1c", "same-region", 0.0),
    ("aws/us-east-2/us-east-2b", "cross-region", 0.01),
    ("aws/us-west-2/us-west-2a", "cross-region", 0.02),
    ("aws/eu-west-1/eu-west-1a", "cross-continent", 0.02),
    ("gcp/us-central1/us-central1-a", "cross-cloud", 0.09),
])
def test_localities_and_egress_of_the_default_table_from_aws_us_east_1(
        destination, locality, usd_per_gb):
    move = DEFAULT_MIGRATION.move(AWS_1A, place(destination), 50.0)
    assert move.locality == locality
    assert move.egress_usd == pytest.approx(50.0 * usd_per_gb)
    assert move.moves == (locality != "same-zone")


def test_gcp_and_azure_rates_follow_their_continents():
    gcp = DEFAULT_MIGRATION
    assert gcp.move(place("gcp/us-central1/a"), place("gcp/us-east4/a"), 1).egress_usd == 0.02
    assert gcp.move(place("gcp/us-central1/a"), place("gcp/europe-west1/b"), 1).locality \
        == "cross-continent"
    assert gcp.move(place("gcp/us-central1/a"), place("gcp/europe-west1/b"), 1).egress_usd \
        == 0.05
    assert gcp.move(place("gcp/asia-south2/b"), place("gcp/asia-southeast1/c"), 1).egress_usd \
        == 0.08
    assert gcp.move(place("gcp/us-west1/a"), place("aws/us-west-2/a"), 1).egress_usd == 0.12
    assert gcp.move(place("azure/eastus/1"), place("azure/westus2/1"), 1).locality \
        == "cross-region"
    assert gcp.move(place("azure/eastus/1"), place("azure/westeurope/1"), 1).egress_usd == 0.05


def test_transfer_time_is_size_over_the_localitys_bandwidth_rounded_up_to_whole_minutes():
    table = DEFAULT_MIGRATION
    cross_region = table.move(AWS_1A, place("aws/us-west-2/us-west-2a"), 500.0)
    assert cross_region.transfer_seconds == 60 * math.ceil(500 * 8 / 8.20 / 60)  # 488 s -> 540
    assert table.move(AWS_1A, place("aws/us-east-1/us-east-1c"), 50.0).transfer_seconds == 60
    assert table.move(AWS_1A, place("aws/eu-west-1/a"), 100.0).transfer_seconds == \
        60 * math.ceil(800 / 3.59 / 60)
    off = table.with_transfer_time(False).move(AWS_1A, place("aws/us-west-2/us-west-2a"), 500)
    assert off.transfer_seconds == 0 and off.egress_usd == pytest.approx(10.0)


def test_no_checkpoint_or_no_size_moves_nothing_that_costs():
    assert DEFAULT_MIGRATION.move(None, AWS_1A, 50.0) == STAY
    empty = DEFAULT_MIGRATION.move(AWS_1A, place("gcp/us-central1/a"), 0.0)
    assert empty.moves and empty.transfer_seconds == 0 and empty.egress_usd == 0
    home = DEFAULT_MIGRATION.move(Place("aws", "us-east-1"), AWS_1A, 50.0)
    assert home.locality == "same-region" and home.egress_usd == 0


def test_a_users_table_is_laid_over_the_default():
    table = DEFAULT_MIGRATION.overridden_by({
        "bandwidth_gbps": {"cross-region": 1.0},
        "egress_usd_per_gb": [{"from": "aws/us-east-1", "to": "aws/us-west-*",
                               "usd_per_gb": 0.5}],
        "transfer_rounding_seconds": 0,
    })
    move = table.move(AWS_1A, place("aws/us-west-2/us-west-2a"), 10.0)
    assert move.egress_usd == pytest.approx(5.0) and move.transfer_seconds == pytest.approx(80)
    assert table.move(AWS_1A, place("aws/us-east-2/b"), 10.0).egress_usd == pytest.approx(0.1)


@pytest.mark.parametrize(("document", "message"), [
    ({"bandwidth_gbps": {"cross-region": -1}}, r"bandwidth_gbps\['cross-region'\]=-1.0"),
    ({"egress_usd_per_gb": [{"from": "*"}]}, "egress rule 0"),
    ({"egress_usd_per_gb": [{"from": "*", "usd_per_gb": 0.1, "locality": "far"}]},
     "locality='far'"),
    ({"egress_usd_per_gb": [{"from": "*", "usd_per_gb": -0.1}]}, "usd_per_gb=-0.1"),
    ({"egress": []}, "key 'egress'"),
])
def test_a_bad_table_is_a_one_line_error_naming_the_field(document, message):
    with pytest.raises(ValueError, match=message):
        DEFAULT_MIGRATION.overridden_by(document)


def test_a_table_without_a_rule_for_a_move_says_which():
    table = MigrationTable.from_mapping({
        "bandwidth_gbps": {"same-region": 1, "cross-region": 1, "cross-continent": 1,
                           "cross-cloud": 1},
        "egress_usd_per_gb": [{"from": "aws/*", "usd_per_gb": 0.02}]})
    with pytest.raises(ValueError, match=r"no egress rule matches gcp/us-central1/a"):
        table.move(place("gcp/us-central1/a"), AWS_1A, 1.0)


def test_a_place_reads_cloud_region_and_an_optional_zone():
    assert Place.parse("aws/us-east-1") == Place("aws", "us-east-1")
    assert str(Place.parse("aws/us-east-1/us-east-1a")) == "aws/us-east-1/us-east-1a"
    with pytest.raises(ValueError, match="home_region='us-east-1'"):
        Place.parse("us-east-1", "home_region")


# -- the engine --------------------------------------------------------------------------------

def three_regions(price, availability, slot=HOUR) -> MarketData:
    zones = [("us-east-1", "us-east-1a"), ("us-east-2", "us-east-2b"), ("us-west-2", "us-west-2a")]
    price = np.atleast_2d(np.asarray(price, float))
    markets = [Market("aws", r, z, "p3.2xlarge", 3.0) for r, z in zones[:price.shape[0]]]
    return MarketData.from_slots(markets, 0.0, slot, price,
                                 np.atleast_2d(np.asarray(availability, int)))


def test_a_move_pays_egress_at_launch_and_its_transfer_time_as_overhead():
    data = three_regions([[1.0] * 6, [0.5] * 6, [0.4] * 6], [[1] * 6] * 3)
    j = job(workload=3.0, soft=6 * HOUR, restart_overhead=600.0, checkpoint_gb=500.0,
            miss_penalty=100.0)
    run = Scripted({0: {"j": Allocation(0, 1)}, 1: {"j": Allocation(0, 1)},
                    2: {"j": Allocation(2, 1)}, 3: {"j": Allocation(2, 1)},
                    4: {"j": Allocation(2, 1)}})
    result = simulate(data, [j], run).jobs[0]
    transfer = 60 * math.ceil(500 * 8 / 8.20 / 60)
    assert result.migrations == 1
    assert result.egress_usd == pytest.approx(500 * 0.02)
    # Two slots in market 0 do 2 h less 600 s of work; market 2, from slot 2 on, first sits out
    # 600 s and the transfer, then does the rest and finishes in slot 3.
    assert result.completion == pytest.approx(2 * HOUR + 600 + transfer + (3 * HOUR - 6600))
    assert result.cost == pytest.approx(2 * 1.0 + 2 * 0.4 + 10.0)


def test_the_checkpoint_moves_only_where_the_job_made_progress():
    # Market 1 is left during its overhead: the checkpoint stays in market 0, so the next move
    # (to market 2) is priced from market 0 (us-east-1 -> us-west-2, 0.02) and the launch in
    # market 1 from market 0 (us-east-1 -> us-east-2, 0.01).
    data = three_regions([[1.0] * 5, [0.5] * 5, [0.4] * 5], [[1] * 5] * 3)
    j = job(workload=4.0, soft=5 * HOUR, restart_overhead=4000.0, checkpoint_gb=100.0)
    run = Scripted({0: {"j": Allocation(0, 1)}, 1: {"j": Allocation(0, 1)},
                    2: {"j": Allocation(1, 1)}, 3: {"j": Allocation(2, 1)}})
    engine_view = simulate(data, [j], run)
    result = engine_view.jobs[0]
    assert result.migrations == 2
    assert result.egress_usd == pytest.approx(100 * 0.01 + 100 * 0.02)
    assert run.seen[3].jobs[0].checkpoint == Place("aws", "us-east-1", "us-east-1a")


def test_a_home_region_prices_the_first_launch_and_none_makes_it_free():
    data = three_regions([[1.0] * 3, [0.5] * 3], [[1] * 3] * 2)
    away = job(workload=1.0, soft=3 * HOUR, checkpoint_gb=100.0, home_region="aws/us-east-1")
    run = Scripted({0: {"j": Allocation(1, 1)}})
    assert simulate(data, [away], run).jobs[0].egress_usd == pytest.approx(1.0)
    nowhere = job(workload=1.0, soft=3 * HOUR, checkpoint_gb=100.0)
    result = simulate(data, [nowhere], Scripted({0: {"j": Allocation(1, 1)}})).jobs[0]
    assert result.migrations == 0 and result.egress_usd == 0


def test_a_refused_launch_moves_nothing_and_costs_nothing():
    data = three_regions([[1.0] * 3, [0.5] * 3], [[1, 1, 1], [0, 0, 0]])
    j = job(workload=2.0, soft=3 * HOUR, checkpoint_gb=100.0)
    run = Scripted({0: {"j": Allocation(0, 1)}, 1: {"j": Allocation(1, 1)}})
    result = simulate(data, [j], run).jobs[0]
    assert result.refusals == 1 and result.migrations == 0 and result.egress_usd == 0
    assert result.cost == pytest.approx(1.0)


@st.composite
def moving_runs(draw):
    n_markets = draw(st.integers(1, 3))
    n_slots = draw(st.integers(3, 8))
    shape = (n_markets, n_slots)
    price = np.reshape(draw(st.lists(st.floats(0.2, 2.0), min_size=n_markets * n_slots,
                                     max_size=n_markets * n_slots)), shape)
    avail = np.reshape(draw(st.lists(st.integers(0, 2), min_size=n_markets * n_slots,
                                     max_size=n_markets * n_slots)), shape)
    jobs = [job(f"j{k}", workload=draw(st.floats(0.3, 4.0)), soft=n_slots * HOUR,
                n_max=draw(st.integers(1, 2)),
                restart_overhead=draw(st.sampled_from([0.0, 300.0, 4000.0])))
            for k in range(draw(st.integers(1, 3)))]
    return three_regions(price, avail), jobs, draw(st.integers(0, 1000))


@settings(max_examples=examples(25), deadline=None)
@given(moving_runs())
def test_without_a_checkpoint_moving_changes_no_decision_and_no_figure(run):
    data, jobs, seed = run
    expensive = DEFAULT_MIGRATION.overridden_by({
        "bandwidth_gbps": {"same-region": 1e-3, "cross-region": 1e-3, "cross-continent": 1e-3,
                           "cross-cloud": 1e-3},
        "egress_usd_per_gb": [{"from": "*", "usd_per_gb": 100.0}]})
    plain = simulate(data, jobs, RandomPolicy(seed))
    priced = simulate(data, jobs, RandomPolicy(seed), migration=expensive)
    assert plain.decisions == priced.decisions
    assert [(r.cost, r.utility, r.completion, r.egress_usd) for r in plain.jobs] == \
        [(r.cost, r.utility, r.completion, 0.0) for r in priced.jobs]
    np.testing.assert_array_equal(plain.cost_per_slot, priced.cost_per_slot)


@settings(max_examples=examples(25), deadline=None)
@given(moving_runs())
def test_in_one_market_a_checkpoint_never_moves(run):
    data, jobs, seed = run
    one = MarketData.from_slots(data.markets[:1], 0.0, HOUR, data.price[:1],
                                data.availability[:1])
    heavy = [job(j.id, workload=j.workload, soft=j.soft_deadline, n_max=j.n_max,
                 restart_overhead=j.restart_overhead, checkpoint_gb=500.0) for j in jobs]
    light = simulate(one, jobs, RandomPolicy(seed))
    loaded = simulate(one, heavy, RandomPolicy(seed))
    assert light.decisions == loaded.decisions
    assert [(r.cost, r.completion) for r in light.jobs] == \
        [(r.cost, r.completion) for r in loaded.jobs]
    assert loaded.total_migrations == 0 and loaded.total_egress_usd == 0


def refused_in_zone_c(on_demand: tuple[float, float], deadline: float):
    """The boundary of slot 2 of a job whose spot in us-east-1c (market 1) was lost at slot 1
    and refused there again: nothing runs, its 50 GB checkpoint is in us-east-1c, 1.2 h of
    work and a 720 s restart are left, and a move to us-east-1a takes a minute."""
    markets = [Market("aws", "us-east-1", f"us-east-1{z}", "p3.2xlarge", od)
               for z, od in zip("ac", on_demand, strict=True)]
    data = MarketData.from_slots(markets, 0.0, HOUR, np.ones((2, 5)),
                                 np.array([[0] * 5, [1, 0, 0, 0, 0]]))
    j = job(workload=2.0, soft=deadline, checkpoint_gb=50.0, restart_overhead=720.0)
    run = Scripted({0: {"j": Allocation(1, 1)}, 1: {"j": Allocation(1, 1)}})
    simulate(data, [j], run)
    obs = run.seen[2]
    view = obs.jobs[0]
    assert view.current is None and view.checkpoint == Place.of(markets[1])
    assert obs.move(view, 0).transfer_seconds == 60.0
    return obs, view


def test_the_on_demand_fallback_keeps_the_checkpoints_market_when_prices_tie():
    obs, view = refused_in_zone_c((3.0, 3.0), deadline=5 * HOUR)
    assert on_demand_market(obs, view) == 1
    assert on_demand(obs, view) == Allocation(1, spot=0, on_demand=1)


def test_the_on_demand_fallback_counts_the_moves_transfer_time_against_the_deadline():
    # On-demand finishes in 1.2 h + 720 s from the boundary (7,200 s): at 12,240 s where the
    # checkpoint is, a minute later in the cheaper us-east-1a.
    roomy, _ = refused_in_zone_c((2.5, 3.0), deadline=5 * HOUR)
    assert on_demand_market(roomy, roomy.jobs[0]) == 0
    tight, view = refused_in_zone_c((2.5, 3.0), deadline=12_270.0)
    assert on_demand_market(tight, view) == 1
