"""Events of the topics a job book folds, one job's slots at a time from ``T0``."""

from datetime import UTC, datetime, timedelta

from streams.contract import (
    DeadLetter,
    EpochClosed,
    JobSubmitted,
    ProvisioningDecision,
    dump_event,
)
from streams.pipeline.job_book import JobBook

T0 = datetime(2023, 3, 6, 8, tzinfo=UTC)
HOUR = timedelta(hours=1)
MARKET = "aws/us-west-2/us-west-2b/p3.2xlarge"
JOB_EVENTS = "spotsched.job-events"


def submitted(job_id: str = "a", workload: float = 10.0) -> JobSubmitted:
    return JobSubmitted(event_time=T0, job_id=job_id, workload=workload, release=T0,
                        soft_deadline=T0 + 10 * HOUR, hard_deadline=T0 + 12 * HOUR,
                        n_min=1, n_max=4, alpha=1.0, beta=0.0)


def decided(slot: int, spot: int = 0, on_demand: int = 0, job_id: str = "a",
            cause: str | None = None, revision: int = 0, cost: float = 0.0,
            reason: str = "") -> ProvisioningDecision:
    action = "release" if cause else "run" if spot + on_demand else "idle"
    start = T0 + slot * HOUR
    return ProvisioningDecision(
        event_time=start, job_id=job_id, epoch=round(start.timestamp() / 3600),
        slot_start=start, slot_seconds=3600.0, market=MARKET, spot=spot, on_demand=on_demand,
        revision=revision, action=action, release_cause=cause, policy="risk-aware",
        expected_cost_usd=cost, slack_seconds=3600.0, reason=reason)


def epoch(slot: int) -> EpochClosed:
    start = T0 + slot * HOUR
    return EpochClosed(event_time=start, epoch=round(start.timestamp() / 3600),
                       slot_seconds=3600.0, markets=(MARKET,), price_now=(1.0,),
                       availability_now=(4,))


def rejected(event, topic: str = JOB_EVENTS, reason: str = "expected markets of the catalogue"):
    return DeadLetter.from_raw(dump_event(event), ValueError(reason), source_topic=topic,
                               event_time=T0, key=event.key.encode())


def book_of(*events) -> JobBook:
    book = JobBook(JOB_EVENTS)
    for event in events:
        book.add(event)
    return book
