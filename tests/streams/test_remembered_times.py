"""Times read and written are remembered without changing what is read or written."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from streams.contract import fast_ticks, fields
from streams.contract.codec import parse_standard
from streams.contract.fast_ticks import TIMES_REMEMBERED, read_tick
from streams.contract.fields import ISOS_REMEMBERED, iso

NOON = datetime(2024, 5, 1, 12, tzinfo=UTC)


def _tick(time: str) -> bytes:
    return (f'{{"event_time":"{time}","idempotency_key":"i","key":"a/b/c/d",'
            '"market":"a/b/c/d","schema_version":2,"spot_price":0.5,"type":"price_tick"}'
            ).encode()


def test_a_time_read_again_reads_the_same():
    for time in ("2024-05-01T12:00:00Z", "2024-05-01T14:00:00+02:00"):
        first, again = read_tick(_tick(time)), read_tick(_tick(time))
        assert first is not None and again is not None
        assert first.event_time == again.event_time == NOON
        assert again == parse_standard(_tick(time))


def test_a_time_out_of_range_is_declined_every_time():
    for _ in range(2):
        assert read_tick(_tick("1999-12-31T23:59:59Z")) is None


def test_the_times_read_stay_bounded_and_each_reads_right():
    base = datetime(2025, 1, 1, tzinfo=UTC)
    for minute in range(TIMES_REMEMBERED + 10):
        time = base + timedelta(minutes=minute)
        tick = read_tick(_tick(iso(time)))
        assert tick is not None and tick.event_time == time
    assert fast_ticks._utc_time_of.cache_info().currsize <= TIMES_REMEMBERED


def test_an_equal_time_in_another_zone_keeps_its_offset():
    assert iso(NOON) == "2024-05-01T12:00:00Z"
    two_hours_east = NOON.astimezone(timezone(timedelta(hours=2)))
    assert two_hours_east == NOON
    assert iso(two_hours_east) == "2024-05-01T14:00:00+02:00"
    assert iso(NOON) == "2024-05-01T12:00:00Z"


def test_the_times_written_stay_bounded_and_each_writes_right():
    base = datetime(2025, 1, 1, tzinfo=UTC)
    for second in range(ISOS_REMEMBERED + 10):
        time = base + timedelta(seconds=second, microseconds=second % 2)
        assert iso(time) == time.isoformat().replace("+00:00", "Z")
    assert fields._utc_iso.cache_info().currsize <= ISOS_REMEMBERED
