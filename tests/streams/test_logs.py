"""Repeated log records are rate-limited: one per kind per interval, with a count; control
characters in a message are escaped."""

import logging

from streams.runtime import RateLimit, guard_handlers


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def record(message: str, *args: object, level: int = logging.ERROR) -> logging.LogRecord:
    return logging.LogRecord("aiokafka.client", level, __file__, 1, message, args, None)


def test_one_record_per_kind_per_interval_then_a_count_of_the_rest():
    clock = Clock()
    limit = RateLimit(interval=30.0, clock=clock)
    passed = []
    for second in range(72):  # an outage: the same error ten times a second for 72 s
        clock.now = float(second)
        for attempt in range(10):
            r = record("Unable connect to node %d: %s", 1, f"refused #{attempt}")
            if limit.filter(r):
                passed.append(r.getMessage())
    assert passed == [
        "Unable connect to node 1: refused #0",
        "Unable connect to node 1: refused #0 [299 more like this in the last 30 s]",
        "Unable connect to node 1: refused #0 [299 more like this in the last 30 s]",
    ]


def test_kinds_are_counted_apart_and_info_is_never_held_back():
    limit = RateLimit(interval=30.0, clock=Clock())
    assert limit.filter(record("a %s", 1)) and limit.filter(record("b %s", 1))
    assert not limit.filter(record("a %s", 2))
    assert limit.filter(record("a %s", 2, level=logging.WARNING))
    assert all(limit.filter(record("progress %s", n, level=logging.INFO)) for n in range(5))


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_every_handler_of_the_logger_gets_the_first_record_of_a_kind():
    logger = logging.getLogger("test-logs-two-handlers")
    logger.propagate = False
    first, second = Collect(), Collect()
    logger.addHandler(first)
    logger.addHandler(second)
    try:
        guard_handlers(logger)
        guard_handlers(logger)  # idempotent
        for _ in range(3):
            logger.warning("broker down")
    finally:
        logger.removeHandler(first)
        logger.removeHandler(second)
    assert first.messages == second.messages == ["broker down"]
    assert [len(h.filters) for h in (first, second)] == [2, 2]


def test_control_characters_of_a_logged_id_are_escaped_on_every_handler():
    logger = logging.getLogger("test-logs-printable")
    logger.propagate = False
    collect = Collect()
    logger.addHandler(collect)
    try:
        guard_handlers(logger)
        logger.warning("applied %s: %s", "job\n2026 INFO forged\x1b[2J\x00", "why\u202eevil")
    finally:
        logger.removeHandler(collect)
    assert collect.messages == [
        "applied job\\n2026 INFO forged\\x1b[2J\\x00: why\\u202eevil"]
