"""The job book: each job's state, cost, work and projected finish folded from the topics."""

from datetime import datetime, timedelta

import pytest

from streams.contract import (
    DeadLetter,
    JobCancelled,
    JobFinished,
    JobProgress,
    JobSubmitted,
)
from streams.pipeline.job_book import JobBook
from tests.streams.job_book_events import (
    HOUR,
    MARKET,
    T0,
    book_of,
    decided,
    epoch,
    rejected,
    submitted,
)


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


def finished_job(soft: timedelta, reported: datetime | None = None) -> JobBook:
    """A job of 2.5 work units on one instance from 08:00, released finished at 11:00, with
    its soft deadline ``soft`` after 08:00 and its hard deadline at 12:00."""
    job = JobSubmitted(event_time=T0, job_id="a", workload=2.5, release=T0,
                       soft_deadline=T0 + soft, hard_deadline=T0 + 4 * HOUR, value=100.0,
                       value_at_hard_deadline=40.0)
    events = [job, decided(0, spot=1, cost=1.0), decided(1, spot=1, cost=1.0),
              decided(2, spot=1, cost=1.0), decided(3, cause="finished")]
    if reported is not None:
        events.append(JobFinished(event_time=reported, job_id="a"))
    return book_of(*events, epoch(4))


def test_a_finished_job_says_whether_it_met_each_deadline():
    # done at 10:30 by its instances: the soft deadline at 10:53 met
    book = finished_job(soft=2 * HOUR + timedelta(minutes=53))
    view = book.jobs["a"]
    assert view.completion() == T0 + 2.5 * HOUR
    assert (view.standing("soft", book.now), view.standing("hard", book.now)) == ("met", "met")
    assert view.utility_usd(book.now) == pytest.approx(100.0 - 3.0)
    # reported done at 11:00 against a soft deadline at 10:53: missed, the hard one met
    late = finished_job(soft=2 * HOUR + timedelta(minutes=53), reported=T0 + 3 * HOUR)
    fields = late.jobs["a"].as_dict(late.now)
    assert fields["completion"] == "2023-03-06T11:00:00Z"
    assert (fields["soft_deadline_standing"], fields["hard_deadline_standing"]) == (
        "missed", "met")
    share = 7 / 67  # of the way from the soft deadline to the hard one
    assert fields["utility_usd"] == pytest.approx(100.0 + share * (40.0 - 100.0) - 3.0)
    assert (fields["started"], fields["ended"], fields["run_seconds"]) == (
        "2023-03-06T08:00:00Z", "2023-03-06T11:00:00Z", 3 * 3600.0)


def test_a_running_job_is_at_risk_when_its_projected_finish_is_past_a_deadline():
    # 10 units at 1 an hour from 08:00: projected 18:00, after the soft deadline at 17:00,
    # before the hard one at 20:00; once 18:00 has passed, the soft deadline is missed
    job = JobSubmitted(event_time=T0, job_id="a", workload=10.0, release=T0,
                       soft_deadline=T0 + 9 * HOUR, hard_deadline=T0 + 12 * HOUR)
    book = book_of(job, decided(0, spot=1), epoch(0))
    view = book.jobs["a"]
    assert view.projected_finish(book.now) == T0 + 10 * HOUR
    assert view.standing("soft", book.now) == "at risk"
    assert view.standing("hard", book.now) == "on track"
    assert book_of(job, decided(0, spot=1), epoch(10)).jobs["a"].standing(
        "soft", T0 + 10 * HOUR) == "missed"  # active past its deadline


def test_restarts_count_the_launches_after_the_first():
    view = book_of(submitted(), decided(0, spot=1), decided(1, spot=1), decided(2),
                   decided(3, spot=1), decided(4, spot=2), decided(5, spot=2)).jobs["a"]
    assert view.restarts == 2  # after the idle slot, and at the change to two instances
    assert book_of(submitted(), decided(0, spot=1), decided(1, spot=1)).jobs["a"].restarts == 0


def test_the_job_now_runs_where_its_newest_decision_runs_it():
    fields = book_of(submitted(), decided(0, spot=2, on_demand=1)).jobs["a"].as_dict(None)
    assert (fields["market"], fields["spot"], fields["on_demand"]) == (MARKET, 2, 1)
    released = book_of(submitted(), decided(0, spot=2), decided(1, cause="finished"))
    fields = released.jobs["a"].as_dict(None)
    assert (fields["market"], fields["spot"], fields["on_demand"]) == (None, 0, 0)


def test_the_book_selects_the_active_jobs_unless_told_otherwise():
    book = book_of(submitted("a"), decided(0, spot=1, job_id="a"),
                   submitted("b"), decided(0, job_id="b", cause="finished"), submitted("c"))
    assert [v.job_id for v in book.select()] == ["a", "c"]
    assert [v.job_id for v in book.select(every=True)] == ["a", "b", "c"]
    assert [v.job_id for v in book.select(["finished", "pending"])] == ["b", "c"]
