"""The share of the spot a market's boundaries show that its slots keep."""

import numpy as np
import pytest

from solver.forecast.keep import PRIOR_KEPT, kept_share


def test_a_grid_whose_slots_keep_every_shown_spot_keeps_a_share_of_one():
    shown = np.array([[0, 3, 3, 0, 2], [1, 1, 0, 0, 1]])
    assert kept_share(shown, shown.copy(), 1) == 1.0


def test_spot_shown_and_lost_in_the_slot_lowers_the_share():
    shown = np.array([4, 4, 4, 4, 0, 4])
    realised = np.array([4, 0, 4, 0, 0, 2])
    # four instances shown in five slots, kept in two; the prior counts one slot kept
    assert kept_share(shown, realised, 4) == pytest.approx((2 + PRIOR_KEPT) / (5 + PRIOR_KEPT))
    # two instances: kept in three of five
    assert kept_share(shown, realised, 2) == pytest.approx((3 + PRIOR_KEPT) / (5 + PRIOR_KEPT))


def test_without_shown_spot_a_boundary_is_trusted():
    assert kept_share(np.zeros(6, int), np.zeros(6, int), 1) == 1.0
    assert kept_share(np.zeros((2, 0), int), np.zeros((2, 0), int), 1) == 1.0


def test_series_of_different_shapes_are_refused():
    with pytest.raises(ValueError, match=r"shown \(3,\) and realised \(4,\)"):
        kept_share(np.zeros(3), np.zeros(4), 1)
