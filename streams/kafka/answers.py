"""The service's answer to job submissions: each is decided (a first decision, at some
epoch), rejected (its dead letter, with the reason), or queued (a worker has read it past its
offset and set nothing aside: it waits for the epoch at or after its event time).

``spotsched submit`` publishes, then waits for these answers."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from aiokafka import TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.structs import RecordMetadata

from streams.contract import EpochClosed, JobSubmitted
from streams.kafka.connect import start_client
from streams.kafka.topic_reader import Offsets, read_topics
from streams.pipeline.job_book import JobBook
from streams.settings import Settings

Verdict = Literal["decided", "rejected", "queued", "unanswered"]
POLL_SECONDS = 1.0
SETTLE_SECONDS = 3.0
"""How long a submission a worker has read may still be dead-lettered: its dead letter is
sent before the worker commits, but may be acknowledged a little later."""


@dataclass(frozen=True, slots=True)
class Answer:
    job_id: str
    verdict: Verdict
    text: str


async def last_epoch(settings: Settings) -> EpochClosed | None:
    """The last epoch the coordinator closed, from the job-events topic."""
    last = None
    async for _, event in read_topics(settings, [settings.topics.job_events], ("epoch_closed",)):
        if isinstance(event, EpochClosed) and (last is None or event.epoch > last.epoch):
            last = event
    return last


async def await_answers(settings: Settings, submissions: Sequence[JobSubmitted],
                        placed: Sequence[RecordMetadata], since: Offsets,
                        wait_seconds: float) -> list[Answer]:
    """The answer to each submission (published at ``placed``), reading decisions and dead
    letters from ``since`` for up to ``wait_seconds``."""
    topics = settings.topics
    book = JobBook(topics.job_events)
    wanted = {s.job_id for s in submissions}
    read_at: dict[str, float] = {}

    async def follow() -> None:
        async for _, event in read_topics(settings, [topics.decisions, topics.dead_letters],
                                          ("provisioning_decision", "dead_letter"),
                                          follow=True, start=since):
            book.add(event)

    def answered(job_id: str) -> bool:
        return _final(book, job_id) or (
            job_id in read_at and time.monotonic() - read_at[job_id] >= SETTLE_SECONDS)

    reader = asyncio.create_task(follow())
    admin = await start_client(lambda: AIOKafkaAdminClient(**settings.kafka_options()),
                               settings, f"reading {settings.app_id}'s offsets")
    deadline = time.monotonic() + wait_seconds
    try:
        while time.monotonic() < deadline and not reader.done():
            committed = await admin.list_consumer_group_offsets(settings.app_id)
            for submission, where in zip(submissions, placed, strict=True):
                done = committed.get(TopicPartition(where.topic, where.partition))
                if done is not None and done.offset > where.offset:
                    read_at.setdefault(submission.job_id, time.monotonic())
            if all(answered(j) for j in wanted):
                break
            await asyncio.sleep(POLL_SECONDS)
    finally:
        await admin.close()
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader
    last = await last_epoch(settings) if not all(_final(book, j) for j in wanted) else None
    return [_answer(book, s, s.job_id in read_at, last, wait_seconds) for s in submissions]


def _final(book: JobBook, job_id: str) -> bool:
    view = book.jobs.get(job_id)
    return view is not None and bool(view.decisions or view.rejection)


def _answer(book: JobBook, submission: JobSubmitted, read: bool, last: EpochClosed | None,
            wait_seconds: float) -> Answer:
    job_id = submission.job_id
    view = book.jobs.get(job_id)
    if view is not None and view.decisions:
        first = view.decisions[min(view.decisions)]
        now = f"{view.state}" + (f" ({view.detail})" if view.detail else "")
        return Answer(job_id, "decided", f"accepted at the epoch of "
                      f"{first.slot_start:%Y-%m-%d %H:%M} UTC; {now}")
    if view is not None and view.rejection is not None:
        return Answer(job_id, "rejected", f"rejected: {view.rejection.reason}")
    service = ("no epoch closed yet" if last is None else
               f"the last epoch closed at {last.event_time:%Y-%m-%d %H:%M} UTC")
    if read and last is not None and last.event_time >= submission.event_time:
        return Answer(job_id, "queued", f"queued: decided at the next epoch; {service}")
    if read:
        return Answer(job_id, "queued", f"queued: decided from the epoch at or after "
                      f"{submission.event_time:%Y-%m-%d %H:%M} UTC; {service}")
    return Answer(job_id, "unanswered", f"no answer within {wait_seconds:g} s: no worker has "
                  f"read it yet ({service}; `spotsched status` shows the workers)")
