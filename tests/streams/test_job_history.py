"""``spotsched jobs JOB``: the job's figures with consistent rounding, epochs as times, and a
decision written twice marked as a harmless replay."""

from streams.cli.reports.decisions import REPLAY_NOTE
from streams.cli.service import _print_history
from streams.contract import JobSubmitted
from tests.streams.job_book_events import HOUR, T0, book_of, decided, epoch


def test_a_jobs_history_marks_a_replayed_decision_and_rounds_alike(capsys):
    job = JobSubmitted(event_time=T0, job_id="a", workload=6.577, release=T0,
                       soft_deadline=T0 + 9 * HOUR, hard_deadline=T0 + 12 * HOUR)
    first = decided(0, spot=2, cost=1.5)
    book = book_of(job, first, decided(1, spot=2, cost=1.5), first, epoch(3))
    _print_history(book.jobs["a"], book)
    out = capsys.readouterr().out
    assert "work 4.00 of 6.58 (planned)" in out, out
    assert "last epoch closed at 2023-03-06 11:00 UTC" in out and "epoch 4" not in out
    runs = [line for line in out.splitlines() if line.startswith("  2023-03-06 08:00 ")
            and " run " in line]
    assert [line.split(" run ")[0] for line in runs] == ["  2023-03-06 08:00",
                                                         "  2023-03-06 08:00 *"], out
    assert runs[0].endswith("$1.50 [risk-aware]: ")  # the planner, else the policy
    assert out.count(REPLAY_NOTE) == 1
    book = book_of(job, first, epoch(0))
    _print_history(book.jobs["a"], book)
    assert REPLAY_NOTE not in capsys.readouterr().out
