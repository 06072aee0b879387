"""A worker leaves out its frameworks' startup lines, but not their warnings nor Faust's
``Worker ready``."""

import logging

import pytest
from aiokafka.errors import GroupCoordinatorNotAvailableError

from streams.cli.framework_logs import quiet_frameworks

NAMES = ("faust", "mode", "aiokafka", "faust.tables.recovery",
         "aiokafka.consumer.group_coordinator")


@pytest.fixture
def quiet():
    """Everything logged (as a worker at DEBUG would), then the frameworks quieted at INFO;
    the loggers put back afterwards."""
    saved = {n: (logging.getLogger(n).level, list(logging.getLogger(n).filters))
             for n in (*NAMES, "")}
    logging.getLogger().setLevel(logging.DEBUG)
    quiet_frameworks("INFO")
    yield
    for name, (level, filters) in saved.items():
        logging.getLogger(name).setLevel(level)
        logging.getLogger(name).filters[:] = filters


def passes(name: str, level: int, message: str, *args: object) -> bool:
    logger = logging.getLogger(name)
    record = logger.makeRecord(name, level, __file__, 1, message, args, None)
    return logger.isEnabledFor(level) and bool(logger.filter(record))


def test_the_frameworks_startup_lines_are_left_out_and_their_warnings_kept(quiet):
    assert not passes("faust.worker", logging.INFO, "[^-App]: Starting...")
    assert not passes("aiokafka.consumer.subscription_state", logging.INFO,
                      "Updating subscribed topics to: %s", "+---+")
    assert passes("faust.tables.recovery", logging.INFO, "[^---Recovery]: Worker ready")
    assert not passes("faust.tables.recovery", logging.INFO, "[^---Recovery]: Resuming flow...")
    assert passes("aiokafka.consumer.fetcher", logging.WARNING, "lagging")
    assert passes("streams.runners.warm_up", logging.INFO, "warmed up")


def test_a_fresh_brokers_coordinator_error_is_left_out_but_not_other_errors(quiet):
    coordinator = "aiokafka.consumer.group_coordinator"
    assert not passes(coordinator, logging.ERROR, "Group Coordinator Request failed: %s",
                      GroupCoordinatorNotAvailableError())
    assert passes(coordinator, logging.ERROR, "Heartbeat failed: %r", RuntimeError("boom"))
