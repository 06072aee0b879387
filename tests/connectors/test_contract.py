"""What every connector promises: counts that add up, and a repeated decision that launches
nothing more."""

from __future__ import annotations

import io

import pytest

from connectors.aws import AwsConnector, AwsOptions
from connectors.base import Applied, Connector
from connectors.log import LogConnector
from connectors.sim import KnownJobs, SimConnector
from connectors.simcloud import SimulatedCloud
from solver.job import Job
from solver.market import build_market_data
from solver.synthetic import SyntheticMarketSpec, synthetic_ticks
from tests.connectors.helpers import MARKET, OTHER_MARKET, SLOT, decision
from tests.connectors.memory_connector import MemoryConnector

DATA = build_market_data(synthetic_ticks(SyntheticMarketSpec(seed=1, n_markets=3, days=1)),
                         SLOT)
FIRST_EPOCH = round(DATA.origin / SLOT)


def sim() -> Connector:
    deadline = DATA.origin + 20 * SLOT
    job = Job("job-1", workload=500.0, release=DATA.origin, soft_deadline=deadline,
              hard_deadline=deadline, n_max=3)
    return SimConnector(SimulatedCloud(DATA), KnownJobs([job]))


@pytest.fixture(params=["memory", "log", "sim", "aws"])
def connector(request) -> Connector:
    if request.param == "memory":
        return MemoryConnector()
    if request.param == "log":
        return LogConnector(io.StringIO())
    if request.param == "sim":
        return sim()
    endpoint = request.getfixturevalue("moto_endpoint")
    return AwsConnector(AwsOptions(image_ids={"*": "ami-12345678"}, endpoint_url=endpoint,
                                   regions=("us-east-1", "us-west-2")))


def test_the_markets_used_here_are_the_simulated_ones():
    assert {MARKET, OTHER_MARKET} <= set(DATA.index)


async def test_a_connector_applies_once_and_leaves_nothing_after_a_release(connector):
    epoch = FIRST_EPOCH + 1
    start = decision(epoch=epoch, spot=2, on_demand=1)
    applied: list[Applied] = [await connector.apply(start)]
    again = await connector.apply(start)
    assert (again.launched, again.terminated) == (0, 0)
    for step, changes in enumerate([
        {"spot": 1, "on_demand": 2},
        {"market": OTHER_MARKET, "spot": 2},
        {"market": OTHER_MARKET, "release": "finished"},
    ], start=1):
        applied.append(await connector.apply(decision(epoch=epoch + step, **changes)))
    await connector.close()
    assert all(a.launched >= 0 and a.terminated >= 0 and a.refused >= 0 for a in applied)
    assert sum(a.launched for a in applied) == sum(a.terminated for a in applied)
    if not isinstance(connector, LogConnector):
        assert [(a.launched, a.terminated) for a in applied] == [(3, 0), (1, 1), (2, 3),
                                                                 (0, 2)]
