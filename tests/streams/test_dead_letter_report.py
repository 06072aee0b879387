"""What ``spotsched dead-letters`` picks: a topic's letters since a time, the newest few, and
the counts by reason."""

from datetime import UTC, datetime, timedelta

from streams.cli.reports.dead_letters import by_reason, newest, wanted
from streams.contract import DeadLetter

T0 = datetime(2023, 3, 6, 8, tzinfo=UTC)


def letter(minutes: int, topic: str = "job-events", reason: str = "bad field") -> DeadLetter:
    return DeadLetter.from_raw(b"{}", ValueError(reason), source_topic=topic,
                               event_time=T0 + timedelta(minutes=minutes), key=b"k")


def test_a_letter_is_wanted_from_its_topic_at_or_after_the_time():
    early, late = letter(0), letter(10, topic="market-ticks")
    assert wanted(early, None, None) and wanted(late, T0 + timedelta(minutes=10), None)
    assert not wanted(early, T0 + timedelta(minutes=1), None)
    assert wanted(late, None, "market-ticks") and not wanted(early, None, "market-ticks")


def test_the_newest_are_the_last_in_time_listed_oldest_first():
    letters = [letter(5), letter(1), letter(9), letter(3)]
    assert [x.event_time.minute for x in newest(letters, 2)] == [5, 9]
    assert [x.event_time.minute for x in newest(letters, 0)] == [1, 3, 5, 9]


def test_the_summary_counts_each_topic_error_and_reason_most_first():
    letters = [letter(1, reason="a"), letter(2, reason="b"), letter(3, reason="b"),
               letter(4, topic="market-ticks", reason="b")]
    counts = by_reason(letters)
    assert [(c.source_topic, c.reason, c.count) for c in counts] == [
        ("job-events", "b", 2), ("job-events", "a", 1), ("market-ticks", "b", 1)]
    assert (counts[0].first, counts[0].last) == (T0 + timedelta(minutes=2),
                                                 T0 + timedelta(minutes=3))
