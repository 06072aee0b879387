import pytest

from connectors.base import TransientError
from connectors.holding import Holding
from tests.connectors.helpers import OTHER_MARKET, decision
from tests.connectors.memory_connector import MemoryConnector


async def test_memory_connector_holds_the_latest_desired_state_and_plays_its_script():
    first = decision(spot=2)
    connector = MemoryConnector({first.idempotency_key: [TransientError("throttled")]})
    with pytest.raises(TransientError):
        await connector.apply(first)
    assert (await connector.apply(first)).launched == 2
    assert (await connector.apply(first)).launched == 0
    moved = await connector.apply(decision(epoch=480001, market=OTHER_MARKET, on_demand=1))
    assert (moved.launched, moved.terminated) == (1, 2)
    assert connector.holdings == {"job-1": Holding(OTHER_MARKET, 0, 1)}
    await connector.apply(decision(epoch=480002, release="finished"))
    assert connector.holdings == {}
    assert (connector.launched, connector.terminated) == (3, 3)
    await connector.close()
    assert connector.closed
