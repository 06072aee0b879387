"""The connector worker: decisions from Kafka, applied once each, offsets committed after.

For each message of the decisions topic, in partition order:

1. decode it; a message that is not a provisioning decision is dead-lettered;
2. skip it if its idempotency key is in the :class:`~connectors.store.AppliedKeys` record
   (logged as a warning, which the log's rate limit samples);
3. apply it, retrying :class:`~connectors.base.TransientError` with exponential backoff up
   to ``max_attempts`` and dead-lettering a :class:`~connectors.base.PermanentError`, a
   transient one that outlived its retries, or any other exception the connector raised but
   a :class:`~connectors.base.FatalError`, which stops the worker;
4. publish the observations the connector reported (acknowledged by every replica);
5. record the key durably, then commit the offset.

Every message ends applied, skipped or dead-lettered, and is counted so. Before the first,
the records (applied keys, and any the connector keeps) are claimed for the decisions topic's
cluster and topic id: a record made on another broker or an earlier topic of the same name is
set aside, with one line saying so, instead of skipping decisions it never saw.

A crash before 5 applies the decision again after the restart (connectors are idempotent);
a crash between recording and committing skips it. A broker outage is waited out for up to
``broker_timeout_seconds`` (publishing keeps its messages, a commit is retried); past that,
or when the record cannot be written, the worker stops without committing. ``stop`` lets the
decision in hand finish, commits it and returns.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord

from connectors.base import (
    Applied,
    Connector,
    FatalError,
    Feedback,
    PermanentError,
    TransientError,
)
from connectors.metrics import ConnectorMetrics, FailureKind
from connectors.origin import decisions_origin
from connectors.store import AppliedKeys, Record
from streams.backoff import Backoff, stoppable_sleep, with_backoff
from streams.contract import (
    AvailabilityTick,
    DeadLetter,
    EventError,
    ProvisioningDecision,
    key_mismatch,
    parse_event,
)
from streams.kafka.clients import delivered, open_producer, send_event
from streams.kafka.connect import retrying, start_client
from streams.settings import Settings

log = logging.getLogger(__name__)

CrashHook = Callable[[str, ProvisioningDecision], None]
"""Test hook called at the steps ``"applied"`` (before the key is recorded) and
``"recorded"`` (before the offset is committed)."""


@dataclass(frozen=True, slots=True)
class RuntimeOptions:
    """How the worker consumes and retries."""

    group_id: str
    max_attempts: int = 5
    backoff_seconds: float = 0.5
    backoff_max_seconds: float = 30.0
    poll_seconds: float = 0.5
    crash_hook: CrashHook | None = None

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts={self.max_attempts}: expected at least 1")
        if not 0 <= self.backoff_seconds <= self.backoff_max_seconds:
            raise ValueError(
                f"backoff_seconds={self.backoff_seconds}: expected between 0 and "
                f"backoff_max_seconds={self.backoff_max_seconds}"
            )

    @property
    def backoff(self) -> Backoff:
        return Backoff(self.backoff_seconds, self.backoff_max_seconds)


class ConnectorRuntime:
    """One connector behind a consumer group on the decisions topic."""

    def __init__(
        self,
        connector: Connector,
        settings: Settings,
        options: RuntimeOptions,
        applied_keys: AppliedKeys,
        metrics: ConnectorMetrics,
        records: Sequence[Record] = (),
    ) -> None:
        """``records``: the connector's own durable records, claimed with the applied keys."""
        self.connector = connector
        self.settings = settings
        self.options = options
        self.applied_keys = applied_keys
        self.metrics = metrics
        self.records = (applied_keys, *records)
        self._claimed = False
        self._producer: AIOKafkaProducer | None = None

    async def run(self, stop: asyncio.Event) -> None:
        """Consume until ``stop`` is set; the decision in hand is finished and committed."""
        settings = self.settings
        topic = settings.topics.decisions
        what = f"connector {self.connector.name}"
        producer = await open_producer(settings, what)
        self._producer = producer
        try:
            consumer = await start_client(
                lambda: AIOKafkaConsumer(topic, **settings.kafka_options(),
                                         group_id=self.options.group_id,
                                         enable_auto_commit=False, auto_offset_reset="earliest"),
                settings, f"{what} consuming {topic}")
            try:
                await self._consume(consumer, stop)
            finally:
                await consumer.stop()
        finally:
            self._producer = None
            await producer.stop()

    async def _consume(self, consumer: AIOKafkaConsumer, stop: asyncio.Event) -> None:
        log.info("connector %s consuming %s as group %s", self.connector.name,
                 self.settings.topics.decisions, self.options.group_id)
        while not stop.is_set():
            batch = await consumer.getmany(timeout_ms=int(self.options.poll_seconds * 1000))
            if batch and not self._claimed:  # the topic exists: it has messages
                await self._claim_records()
            for partition, messages in batch.items():
                for message in messages:
                    if stop.is_set():
                        return  # the rest of the batch is fetched again after a restart
                    try:
                        await self._handle(message, stop)
                    except _Stopped:
                        return  # while retrying: applied again after a restart
                    await retrying(partial(consumer.commit, {partition: message.offset + 1}),
                                   self.settings, f"connector {self.connector.name} committing")

    async def _claim_records(self) -> None:
        """Make the records those of the decisions topic's cluster and topic id; one line
        names those made elsewhere and set aside."""
        origin = await decisions_origin(self.settings)
        moved = [(record, claim) for record in self.records
                 if (claim := record.claim(str(origin))) is not None]
        if moved:
            log.warning("records not made on %s set aside: %s", origin, "; ".join(
                f"{record.path} (made on {made_on}) as {aside.name}"
                for record, (made_on, aside) in moved))
        self._claimed = True

    async def _handle(self, message: ConsumerRecord, stop: asyncio.Event) -> None:
        """Apply, skip or dead-letter one message."""
        try:
            decision = parse_event(message.value or b"")
            if not isinstance(decision, ProvisioningDecision):
                raise EventError(
                    f"type={decision.type!r}: expected 'provisioning_decision' on "
                    f"{message.topic}"
                )
            mismatch = key_mismatch(decision, message.key)
            if mismatch is not None:
                raise EventError(mismatch)
        except Exception as exc:
            await self._dead_letter(message, exc, "invalid")
            return
        key = decision.idempotency_key
        if key in self.applied_keys:
            self.metrics.decisions["skipped"].inc()
            log.warning("decision %s skipped: already applied (recorded in %s)", key,
                        self.applied_keys.path)
            return
        try:
            applied = await self._apply(decision, stop)
        except TransientError as exc:
            await self._dead_letter(message, exc, "exhausted")
            return
        except PermanentError as exc:
            await self._dead_letter(message, exc, "permanent")
            return
        except (_Stopped, FatalError):
            raise
        except Exception as exc:  # a connector bug: this decision is set aside, not the stream
            log.error("connector %s raised %s on %s: %s", self.connector.name,
                      type(exc).__name__, decision.idempotency_key, exc)
            await self._dead_letter(message, exc, "error")
            return
        self._step("applied", decision)
        await self._publish(applied.events)
        self.applied_keys.record(key)
        self._step("recorded", decision)
        self.metrics.decisions["applied"].inc()
        _log_applied(decision, applied)

    async def _apply(self, decision: ProvisioningDecision, stop: asyncio.Event) -> Applied:
        """Apply with retries; the last TransientError says how many attempts were made."""

        async def apply_once() -> Applied:
            started = time.perf_counter()
            try:
                return await self.connector.apply(decision)
            finally:
                self.metrics.apply_seconds.observe(time.perf_counter() - started)

        async def give_up_or_warn(exc: TransientError, attempt: int, delay: float) -> None:
            if attempt == self.options.max_attempts:
                raise TransientError(f"gave up after {attempt} attempts: {exc}") from exc
            log.warning("decision %s attempt %d failed (%s); retrying in %.1f s",
                        decision.idempotency_key, attempt, exc, delay)
            self.metrics.retries.inc()

        return await with_backoff(apply_once, self.options.backoff, TransientError,
                                  give_up_or_warn, stoppable_sleep(stop, _Stopped))

    def _step(self, step: str, decision: ProvisioningDecision) -> None:
        if self.options.crash_hook is not None:
            self.options.crash_hook(step, decision)

    async def _publish(self, events: Iterable[Feedback]) -> None:
        """Send observations keyed as the pipeline expects; wait for every acknowledgement."""
        topics = self.settings.topics
        sent = []
        for event in events:
            topic = (topics.market_ticks if isinstance(event, AvailabilityTick)
                     else topics.job_events)
            sent.append(await send_event(self._require_producer(), topic, event, self._writer))
        await delivered(sent, self.settings, f"connector {self.connector.name} publishing")

    async def _dead_letter(self, message: ConsumerRecord, error: Exception,
                           kind: FailureKind) -> None:
        letter = DeadLetter.from_raw(
            message.value, error, source_topic=message.topic,
            event_time=message.timestamp / 1000.0 if message.timestamp else time.time(),
            partition=message.partition, offset=message.offset, key=message.key,
        )
        log.warning("dead letter (%s) from %s[%d]@%d: %s", kind, message.topic,
                    message.partition, message.offset, letter.reason)
        await delivered([await send_event(self._require_producer(),
                                          self.settings.topics.dead_letters, letter,
                                          self._writer, 1)],
                        self.settings, f"connector {self.connector.name} dead-lettering")
        self.metrics.failed[kind].inc()
        self.metrics.decisions["dead_lettered"].inc()

    @property
    def _writer(self) -> str:
        """The ``ce_source`` of what this connector writes."""
        return f"connector/{self.connector.name}"

    def _require_producer(self) -> AIOKafkaProducer:
        if self._producer is None:
            raise RuntimeError("the runtime publishes only while run() is running")
        return self._producer


class _Stopped(Exception):
    """``stop`` was set while a decision waited to be retried: it is left uncommitted."""


def _log_applied(decision: ProvisioningDecision, applied: Applied) -> None:
    log.info("applied %s (%s spot=%d on-demand=%d): launched %d, terminated %d, refused %d, "
             "preempted %d%s", decision.idempotency_key, decision.market, decision.spot,
             decision.on_demand, applied.launched, applied.terminated, applied.refused,
             applied.preempted, "".join(f"; {d}" for d in applied.details))
