"""The jobs submitted on the job-events topic, as a background reader keeps them."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from aiokafka import AIOKafkaConsumer

from connectors.base import TransientError
from solver.job import Job
from streams.contract import EventError, JobSubmitted, parse_event
from streams.kafka.connect import start_client
from streams.settings import Settings

log = logging.getLogger(__name__)


class JobEventsReader:
    """Reads every partition of job-events from the beginning, keeping each submitted job.

    :meth:`job` waits up to ``wait_seconds`` for a job's submission; after that it raises a
    :class:`TransientError`, so the runtime retries the decision later.
    """

    def __init__(self, settings: Settings, wait_seconds: float = 30.0) -> None:
        self.settings = settings
        self.wait_seconds = wait_seconds
        self._jobs: dict[str, Job] = {}
        self._changed = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None

    async def job(self, job_id: str) -> Job:
        if self._task is None:
            self._task = asyncio.create_task(self._read(), name="job-events reader")
        async with self._changed:
            try:
                await asyncio.wait_for(self._changed.wait_for(lambda: job_id in self._jobs),
                                       self.wait_seconds)
            except TimeoutError:
                failure = self._task.exception() if self._task.done() else None
                if failure is not None:
                    raise failure from None
                raise TransientError(
                    f"job_id={job_id!r}: no job_submitted on {self.settings.topics.job_events} "
                    f"after {self.wait_seconds:g} s; expected the job's submission first"
                ) from None
        return self._jobs[job_id]

    async def _read(self) -> None:
        settings = self.settings
        consumer = await start_client(
            lambda: AIOKafkaConsumer(settings.topics.job_events, **settings.kafka_options(),
                                     group_id=None, enable_auto_commit=False,
                                     auto_offset_reset="earliest"),
            settings, f"reading {settings.topics.job_events}")
        try:
            async for message in consumer:
                try:
                    event = parse_event(message.value or b"")
                except EventError:
                    continue  # the scheduler dead-letters it
                if isinstance(event, JobSubmitted) and event.job_id not in self._jobs:
                    async with self._changed:
                        self._jobs[event.job_id] = Job(**event.job_fields())
                        self._changed.notify_all()
        finally:
            await consumer.stop()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
