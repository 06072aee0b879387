"""The worker's warm-up runs every stage, the policy's decisions included."""

from __future__ import annotations

import pytest

from solver.policies import PolicySpec
from streams.runners.warm_up import warm_up


@pytest.mark.parametrize("slot_seconds", [3600.0, 900.0])
def test_the_warm_up_decides_on_its_synthetic_market(slot_seconds):
    assert warm_up(slot_seconds, PolicySpec("greedy")) > 0
