"""What every long-running spotsched process shares: logs that stay readable when something
keeps failing, the Prometheus endpoint, and a stop on SIGINT or SIGTERM.

Repeated log records are rate-limited: a broker outage makes the Kafka clients log the same
error many times a second, so the :class:`RateLimit` filter lets one record of each kind
(logger, level and message template) through per interval; the next one let through says how
many were held back meanwhile.
Records below WARNING pass untouched. Every message is printed with its control characters
escaped (:class:`PrintableRecords`).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from collections.abc import Awaitable, Callable
from typing import Any

from prometheus_client import CollectorRegistry, start_http_server

from streams.contract.printable import printable
from streams.rate_limit import RateLimiter
from streams.settings import Settings

DEFAULT_INTERVAL_SECONDS = 30.0


class RateLimit(logging.Filter):
    """One record per kind per ``interval`` seconds, WARNING and above."""

    def __init__(self, interval: float = DEFAULT_INTERVAL_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self._limit = RateLimiter(interval, clock)

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        # the Kafka clients log from threads of their own too: the limiter takes a lock
        passed = self._limit.admit((record.name, record.levelno, str(record.msg)))
        if passed is None:
            return False
        if passed.held:
            record.msg = (f"{record.getMessage()} [{passed.held} more like this in the "
                          f"last {passed.seconds:.0f} s]")
            record.args = ()  # already formatted (an empty tuple, as formatters expect)
        return True


class PrintableRecords(logging.Filter):
    """Writes what is not printable in a record's message as escapes
    (:func:`~streams.contract.printable.printable`): a job id or a reason taken from a message
    cannot break a log line in two or drive the terminal."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        shown = printable(message)
        if shown != message:
            record.msg, record.args = shown, ()
        return True


def guard_handlers(logger: logging.Logger | None = None,
                   interval: float = DEFAULT_INTERVAL_SECONDS) -> None:
    """Put a :class:`RateLimit` of its own, then :class:`PrintableRecords`, on every handler
    of ``logger`` (the root by default): a limit shared by two handlers would let a record
    reach only the first."""
    logger = logger or logging.getLogger()
    for handler in logger.handlers:
        if not any(isinstance(f, RateLimit) for f in handler.filters):
            handler.addFilter(RateLimit(interval))
        if not any(isinstance(f, PrintableRecords) for f in handler.filters):
            handler.addFilter(PrintableRecords())


def configure_logging(level: str = "WARNING",
                      interval: float = DEFAULT_INTERVAL_SECONDS) -> None:
    """Log to stderr at ``level`` with rate-limited repeats and escaped control characters
    (the command-line clients)."""
    logging.basicConfig(level=level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    guard_handlers(interval=interval)


def serve_metrics(settings: Settings, registry: CollectorRegistry) -> Any:
    """Serve ``registry`` at /metrics on ``metrics_host:metrics_port`` (loopback unless set
    otherwise) and return the server, unless the port is 0; an address that cannot be bound
    is named."""
    if not settings.metrics_port:
        return None
    try:
        server, _ = start_http_server(settings.metrics_port, addr=settings.metrics_host,
                                      registry=registry)
        return server
    except OSError as exc:
        raise OSError(
            f"metrics_host:metrics_port (SPOTSCHED_METRICS_HOST, SPOTSCHED_METRICS_PORT) = "
            f"{settings.metrics_host}:{settings.metrics_port}: cannot serve /metrics there "
            f"({exc.strerror or exc})") from None


def run_until_stopped(serve: Callable[[asyncio.Event], Awaitable[None]]) -> None:
    """Run ``serve(stop)`` in a new event loop, where SIGINT or SIGTERM sets ``stop``: the
    service finishes what it has in hand, closes what it opened and returns."""

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        await serve(stop)

    asyncio.run(main())
