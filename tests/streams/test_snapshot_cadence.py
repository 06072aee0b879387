"""When a stage partition is snapshotted: by slots of event time, no more often than the
minimum interval, or by records, whatever the interval."""

from __future__ import annotations

import pytest

from streams.runners.recovery import RecoveryConfig
from streams.settings import Settings

CADENCE = RecoveryConfig.of(Settings(snapshot_every_epochs=6, snapshot_every_records=20_000,
                                     snapshot_min_interval_seconds=10.0))


@pytest.mark.parametrize(("records", "epochs", "seconds", "due"), [
    (240, 6, 3600.0 * 6, True),  # live: six slots, hours apart
    (240, 5, 3600.0 * 6, False),  # not yet six slots
    (1_440, 6, 0.05, False),  # catching up: six slots in a few milliseconds
    (1_440, 6, 10.0, True),  # ... once the interval has passed
    (20_000, 0, 0.0, True),  # the records bound holds whatever the interval
    (19_999, 1_000, 9.9, False),
    (0, 6, 3600.0 * 6, False),  # nothing taken since the last snapshot
])
def test_a_stage_is_snapshotted_by_slots_no_faster_than_the_interval_or_by_records(
        records, epochs, seconds, due):
    assert CADENCE.due(records, epochs, seconds) is due


def test_a_zero_interval_snapshots_every_few_slots_however_fast_they_pass():
    cadence = RecoveryConfig.of(Settings(snapshot_every_epochs=3,
                                         snapshot_min_interval_seconds=0))
    assert cadence.due(1, 3, 0.0) and not cadence.due(1, 2, 0.0)
