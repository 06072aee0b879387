"""Reaching the broker: clients that wait out an outage and fail with one clear line.

:func:`start_client` starts an aiokafka producer, consumer or admin client. While the broker is
unreachable it retries with exponential backoff for up to ``broker_timeout_seconds``, logging one
line per attempt (rate-limited by :mod:`streams.runtime`); a setting the broker refuses — the
credentials, the TLS trust, a TLS listener spoken to in plaintext or the reverse — fails at
once. Either way the :class:`BrokerError` names the setting and what failed, never a secret;
the Kafka client's own records are held back while it starts.
:func:`retrying` does the same for one call on a started client (e.g. a commit).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from aiokafka.conn import create_conn
from aiokafka.errors import (
    CommitFailedError,
    KafkaError,
    SaslAuthenticationFailed,
    UnsupportedSaslMechanismError,
)

from streams.backoff import Backoff, with_backoff
from streams.settings import Settings, env_name

log = logging.getLogger(__name__)

T = TypeVar("T")
PROBE_SECONDS = 5.0
"""How long one diagnosis probe of a bootstrap server may take."""
BACKOFF = Backoff(first_seconds=0.5, max_seconds=10.0)


class BrokerError(RuntimeError):
    """The broker cannot be used: what failed, in one line naming the setting."""


class BrokerUnreachable(BrokerError):
    """No broker answered within ``broker_timeout_seconds``."""


@dataclass(frozen=True, slots=True)
class Problem:
    """Why the broker could not be reached; ``permanent`` when retrying cannot help."""

    text: str
    permanent: bool


async def start_client(make: Callable[[], Any], settings: Settings, what: str) -> Any:
    """A started client from ``make()``, built again for every attempt."""

    async def start() -> Any:
        client = make()
        try:
            with _quiet_kafka_client():
                await client.start()
        except BaseException:
            await _close(client)
            raise
        return client

    return await retrying(start, settings, what)


async def retrying(call: Callable[[], Awaitable[T]], settings: Settings, what: str) -> T:
    """``await call()``, retried with backoff while the broker is unreachable."""
    deadline = time.monotonic() + settings.broker_timeout_seconds

    async def give_up_or_warn(exc: Exception, attempt: int, delay: float) -> None:
        if isinstance(exc, CommitFailedError):
            raise exc  # the group moved on: nothing to retry
        problem = await diagnose(settings, exc)
        if problem.permanent:
            raise BrokerError(f"{what}: {problem.text}")
        if time.monotonic() + delay > deadline:
            raise BrokerUnreachable(
                f"{what}: {problem.text}; gave up after {attempt} attempts in "
                f"{settings.broker_timeout_seconds:g} s (broker_timeout_seconds, "
                f"{env_name('broker_timeout_seconds')})")
        log.warning("%s: %s; retrying in %.1f s", what, problem.text, delay)

    return await with_backoff(call, BACKOFF, (KafkaError, OSError, TimeoutError),
                              give_up_or_warn)


async def diagnose(settings: Settings, error: BaseException) -> Problem:
    """Why the bootstrap servers failed: probe each with the settings' protocol."""
    problems = [await _probe(settings, server) for server in settings.bootstrap_servers.split(",")]
    permanent = [p for p in problems if p.permanent]
    if permanent:
        return permanent[0]
    if any(p.text == "" for p in problems):  # a server answers: the failure was elsewhere
        return Problem(f"{type(error).__name__}: {error}", permanent=False)
    return Problem("; ".join(p.text for p in problems), permanent=False)


async def _probe(settings: Settings, server: str) -> Problem:
    """Connect and authenticate once; ``Problem("", False)`` when that works."""
    host, _, port = server.rpartition(":")
    options = settings.kafka_options()
    protocol = settings.security_protocol
    where = f"bootstrap_servers ({env_name('bootstrap_servers')}) {server}"
    try:
        conn = await asyncio.wait_for(create_conn(
            host, int(port), request_timeout_ms=int(PROBE_SECONDS * 1000),
            ssl_context=options.get("ssl_context"), security_protocol=protocol,
            sasl_mechanism=options.get("sasl_mechanism"),
            sasl_plain_username=options.get("sasl_plain_username"),
            sasl_plain_password=options.get("sasl_plain_password")), PROBE_SECONDS)
    except (SaslAuthenticationFailed, UnsupportedSaslMechanismError) as exc:
        return Problem(
            f"sasl_username/sasl_password ({env_name('sasl_username')}, "
            f"{env_name('sasl_password')}): the broker at {server} refused user "
            f"{settings.sasl_username!r} with SASL {settings.sasl_mechanism} "
            f"({_first_line(exc)})", permanent=True)
    except ssl.SSLCertVerificationError as exc:
        return Problem(
            f"ssl_cafile ({env_name('ssl_cafile')}) = {str(settings.ssl_cafile)!r}: the "
            f"certificate of {server} is not trusted ({exc.verify_message})", permanent=True)
    except ssl.SSLError as exc:
        return _not_tls(settings, server, exc.reason or str(exc))
    except (OSError, TimeoutError) as exc:
        if protocol.endswith("SSL") and await _accepts_tcp(host, int(port)):
            return _not_tls(settings, server, f"the connection was dropped: {_reason(exc)}")
        return Problem(f"{where}: cannot connect ({_reason(exc)})", permanent=False)
    except KafkaError as exc:
        if not protocol.endswith("SSL") and await _speaks_tls(host, int(port)):
            return Problem(
                f"security_protocol ({env_name('security_protocol')}) = {protocol}: the "
                f"listener at {server} speaks TLS; expected SSL or SASL_SSL", permanent=True)
        return Problem(f"{where}: {_first_line(exc)}", permanent=False)
    conn.close()
    return Problem("", permanent=False)


def _not_tls(settings: Settings, server: str, why: str) -> Problem:
    return Problem(
        f"security_protocol ({env_name('security_protocol')}) = {settings.security_protocol}: "
        f"the TLS handshake with {server} failed ({why}); expected a TLS listener, or "
        "PLAINTEXT / SASL_PLAINTEXT for a plaintext one", permanent=True)


async def _accepts_tcp(host: str, port: int) -> bool:
    """Whether ``host:port`` accepts a TCP connection (the broker is up)."""
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), PROBE_SECONDS)
    except (OSError, TimeoutError):
        return False
    writer.close()
    return True


async def _speaks_tls(host: str, port: int) -> bool:
    """Whether a TLS handshake (certificate unchecked) with ``host:port`` succeeds."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        _, writer = await asyncio.wait_for(
            asyncio.open_connection(host, port, ssl=context), PROBE_SECONDS)
    except (OSError, TimeoutError, ssl.SSLError):
        return False
    writer.close()
    return True


@contextlib.contextmanager
def _quiet_kafka_client() -> Iterator[None]:
    """Hold back the Kafka client's own records while a client starts: a failed start is
    reported once, by :func:`retrying`."""
    logger = logging.getLogger("aiokafka")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


async def _close(client: Any) -> None:
    closing = getattr(client, "stop", None) or client.close
    try:
        await closing()
    except Exception as exc:  # a client that never started may not close cleanly
        log.debug("closing a client that failed to start: %s", exc)


def _reason(error: BaseException) -> str:
    return getattr(error, "strerror", None) or _first_line(error) or type(error).__name__


def _first_line(error: BaseException) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
