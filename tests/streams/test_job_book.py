"""The job book: each job's state, cost, work and projected finish folded from the topics."""

from datetime import UTC, datetime, timedelta

import pytest

from streams.contract import (
    DeadLetter,
    EpochClosed,
    JobCancelled,
    JobProgress,
    JobSubmitted,
    ProvisioningDecision,
    dump_event,
)
from streams.reports.job_book import JobBook

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


def test_a_submitted_job_is_pending_until_decided_then_waits_or_runs():
    assert book_of(submitted()).jobs["a"].state == "pending"
    assert book_of(submitted(), decided(0)).jobs["a"].state == "waiting"
    view = book_of(submitted(), decided(0), decided(1, spot=2, on_demand=1)).jobs["a"]
    assert (view.state, view.detail) == ("running", f"{MARKET}: 2 spot + 1 on-demand")


def test_cost_sums_the_newest_revision_of_each_slot():
    view = book_of(submitted(), decided(0, spot=2, cost=2.0), decided(0, spot=1, cost=1.0,
                                                                       revision=1),
                   decided(1, spot=1, cost=1.5)).jobs["a"]
    assert view.cost_usd == pytest.approx(2.5)
    assert view.decisions[min(view.decisions)].revision == 1


def test_work_done_counts_the_closed_slots_and_projects_the_finish_at_the_current_rate():
    book = book_of(submitted(workload=10.0), decided(0, spot=2), decided(1, on_demand=4),
                   epoch(0), epoch(1), epoch(2))
    view = book.jobs["a"]
    # slots 0 and 1 closed by epoch 2: 2 + 4 work units; 4 left at 4 per hour from slot 1
    assert view.work_done(book.now) == (6.0, "planned")
    assert view.projected_finish(book.now) == T0 + HOUR + HOUR
    assert view.as_dict(book.now)["projected_finish"] == "2023-03-06T10:00:00Z"


def test_a_progress_report_replaces_the_plan_up_to_its_time():
    report = JobProgress(event_time=T0 + HOUR, job_id="a", work_done=0.5)
    book = book_of(submitted(), decided(0, spot=2), decided(1, spot=2), report, epoch(2))
    assert book.jobs["a"].work_done(book.now) == (2.5, "reported+planned")


@pytest.mark.parametrize(("cause", "state"), [
    ("finished", "finished"), ("deadline_missed", "missed"), ("cancelled", "cancelled"),
    ("failed", "failed")])
def test_a_released_job_says_why(cause, state):
    view = book_of(submitted(), decided(0, spot=1),
                   decided(1, cause=cause, reason="boom" if cause == "failed" else "")).jobs["a"]
    assert view.state == state
    assert view.detail == ("boom" if cause == "failed" else "")


def test_a_cancellation_not_yet_decided_is_cancelling():
    cancel = JobCancelled(event_time=T0 + HOUR, job_id="a")
    assert book_of(submitted(), decided(0, spot=1), cancel).jobs["a"].state == "cancelling"


def test_a_dead_lettered_submission_is_a_rejected_job_with_the_reason():
    job = submitted("b")
    view = book_of(job, rejected(job)).jobs["b"]
    assert (view.state, view.detail) == ("rejected", "expected markets of the catalogue")
    assert book_of(rejected(job)).jobs["b"].state == "rejected"  # its submission not read yet


def test_dead_letters_that_are_no_job_of_the_service_are_left_out():
    job = submitted("c")
    orphan = JobCancelled(event_time=T0, job_id="nobody")
    book = book_of(rejected(job, topic="spotsched.market-ticks"), rejected(orphan))
    assert book.jobs == {}
    cancelled_late = book_of(job, decided(0, job_id="c"),
                             rejected(JobCancelled(event_time=T0, job_id="c")))
    assert cancelled_late.jobs["c"].state == "waiting"
    assert isinstance(cancelled_late.jobs["c"].history[-1], DeadLetter)


def test_the_service_time_is_the_newest_epoch_whatever_the_order():
    book = book_of(epoch(3), epoch(1))
    assert book.now == T0 + 3 * HOUR and book_of().now is None
