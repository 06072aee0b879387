import math

import pytest

from solver.synthetic import SYNTHETIC_START
from solver.timefmt import iso_utc


@pytest.mark.parametrize(("seconds", "text"), [
    (SYNTHETIC_START, "2025-01-06T00:00:00Z"),
    (SYNTHETIC_START + 3 * 3600 + 0.5, "2025-01-06T03:00:00.500000Z"),
    (math.nan, "nan"),
    (math.inf, "inf"),
    (1e300, "1e+300"),
])
def test_times_read_as_utc_dates_and_impossible_ones_as_numbers(seconds, text):
    assert iso_utc(seconds) == text
