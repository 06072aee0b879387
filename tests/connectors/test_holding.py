"""A holding's changes count the instances launched and terminated to reach the next one."""

import pytest

from connectors.holding import Holding, changes
from tests.connectors.helpers import MARKET, OTHER_MARKET


@pytest.mark.parametrize(("before", "after", "expected"), [
    (None, Holding(MARKET, 2, 1), (3, 0)),
    (Holding(MARKET, 2, 1), Holding(MARKET, 1, 3), (2, 1)),
    (Holding(MARKET, 2, 1), Holding(OTHER_MARKET, 2, 1), (3, 3)),
    (Holding(MARKET, 2, 1), None, (0, 3)),
    (Holding(MARKET, 2, 1), Holding(MARKET, 2, 1), (0, 0)),
])
def test_changes_count_launches_and_terminations(before, after, expected):
    assert changes(before, after) == expected
