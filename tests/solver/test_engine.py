import numpy as np
import pytest

from solver.decision import Departure
from solver.engine import Engine, History
from solver.job import Allocation
from solver.market import MarketData
from solver.observation import Past
from solver.policies.baselines import OnDemandOnly
from solver.simulator import simulate
from tests.solver.helpers import HOUR, Scripted, flat_data, job, markets


def test_history_grows_and_never_shows_unclosed_slots():
    history = History(2, capacity=1)
    for t in range(5):
        price, _ = history.views()
        assert price.shape == (2, t)
        assert price.base is None or np.isnan(np.asarray(price.base)[:, t:]).all()
        history.append(np.array([t, t + 0.5]), np.array([t, 1]), np.array([t + 1, 1]))
    price, avail = history.views()
    assert price[1].tolist() == [0.5, 1.5, 2.5, 3.5, 4.5] and avail[0].tolist() == [0, 1, 2, 3, 4]
    assert history.shown()[0].tolist() == [1, 2, 3, 4, 5]
    with pytest.raises(ValueError):
        price[0, 0] = 1.0


def test_stepwise_engine_matches_the_simulator():
    data = flat_data([[1.0, 2.0, 1.5, 1.0] * 3, [2.0] * 12], [[1, 0, 2, 2] * 3, [1] * 12])
    jobs = [job("a", workload=3.0, soft=8 * HOUR, restart_overhead=600.0),
            job("b", workload=5.0, release=HOUR, soft=12 * HOUR, n_max=2)]
    expected = simulate(data, jobs, OnDemandOnly())
    engine = Engine(data.markets, data.origin, data.slot_seconds, OnDemandOnly(), 1)
    for j in jobs:
        engine.add_job(j)
    for t in range(data.n_slots):
        engine.decide(data.boundary_price[:, t], data.boundary_availability[:, t])
        engine.settle(data.price[:, t], data.availability[:, t])
    assert tuple(engine.results()) == expected.jobs


def test_cancel_and_progress_reports_change_what_remains():
    data = flat_data([[1.0] * 6], [[0] * 6])
    engine = Engine(data.markets, 0.0, HOUR, OnDemandOnly())
    engine.add_job(job("a", workload=4.0, soft=6 * HOUR))
    engine.add_job(job("b", workload=4.0, soft=6 * HOUR))
    assert engine.decide(data.price[:, 0], data.availability[:, 0]).allocations == {
        "a": Allocation(0, 0, 1), "b": Allocation(0, 0, 1)}
    engine.settle(data.price[:, 0], data.availability[:, 0])
    engine.cancel_job("b")
    engine.report_progress("a", work_done=3.5, remaining=None)
    decided = engine.decide(data.price[:, 1], data.availability[:, 1])
    assert decided.departures == {"b": Departure(0, "cancelled")}
    engine.settle(data.price[:, 1], data.availability[:, 1])
    assert engine.decide(data.price[:, 2], data.availability[:, 2]).departures == {
        "a": Departure(0, "finished")}
    engine.settle(data.price[:, 2], data.availability[:, 2])
    a, b = engine.results()
    assert a.completion == pytest.approx(1.5 * HOUR) and a.utility == pytest.approx(-6.0)
    assert b.cancelled and b.cost == pytest.approx(3.0) and b.completion is None
    with pytest.raises(ValueError, match="job id='zz': expected a known job"):
        engine.cancel_job("zz")
    with pytest.raises(RuntimeError, match="not decided"):
        engine.settle(data.price[:, 3], data.availability[:, 3])
    with pytest.raises(ValueError, match="duplicate"):
        engine.add_job(job("a", workload=1.0, soft=6 * HOUR))
    with pytest.raises(ValueError, match="allowed_markets"):
        engine.add_job(job("c", allowed_markets=(markets(3)[2].key,)))


def test_a_decision_shows_each_job_as_the_policy_saw_it():
    data = flat_data([[1.0] * 4], [[0] * 4])
    engine = Engine(data.markets, 0.0, HOUR, OnDemandOnly())
    engine.add_job(job("a", workload=2.0, soft=4 * HOUR))
    engine.add_job(job("b", workload=3.0, soft=4 * HOUR))
    decided = engine.decide(data.price[:, 0], data.availability[:, 0])
    assert [decided.view(j).remaining for j in ("a", "b")] == [2.0, 3.0]
    assert decided.explain("b").slack_seconds == decided.view("b").job.slack(0.0, 3.0)
    with pytest.raises(KeyError, match="job_id='c': expected a job active at slot 0"):
        decided.view("c")


def test_a_market_that_denied_spot_is_marked_until_it_holds_spot_through_a_slot():
    # The boundaries of market 0 show spot every slot; the slots keep none in slots 0-2.
    realised = np.array([[0, 0, 0, 1, 1, 1], [1] * 6])
    data = MarketData(tuple(markets(2)), 0.0, HOUR, np.ones((2, 6)), realised, np.ones((2, 6)),
                      np.ones((2, 6), dtype=np.int64))
    run = Scripted({0: {"j": Allocation(0, 1)}, 1: {"j": Allocation(1, 1)},
                    3: {"j": Allocation(0, 1)}, 4: {"j": Allocation(0, 2)}})
    result = simulate(data, [job(workload=6.0, soft=6 * HOUR, n_max=2)], run)
    # Refused in slot 0; still empty through slot 2 though nobody asked; held through slot 3;
    # two asked where one was left in slot 4.
    assert [set(obs.denied) for obs in run.seen] == [set(), {0}, {0}, {0}, set(), {0}]
    assert result.jobs[0].refusals == 2


def test_a_policy_sees_what_each_closed_slot_showed_at_its_boundary():
    # Market 0's boundaries show two instances every slot; its slots keep them in slot 1 only.
    realised = np.array([[0, 2, 0, 0], [1] * 4])
    shown = np.array([[2] * 4, [1] * 4])
    data = MarketData(tuple(markets(2)), 0.0, HOUR, np.ones((2, 4)), realised, np.ones((2, 4)),
                      shown)
    run = Scripted({})
    simulate(data, [job(workload=1.0, soft=4 * HOUR)], run, until_end=True)
    last = run.seen[-1]
    assert last.closed_shown(3).tolist() == shown[:, :3].tolist()
    assert last.closed_slots(3)[1].tolist() == realised[:, :3].tolist()
    assert last.closed_shown(2).tolist() == shown[:, 1:3].tolist()


def test_closed_slots_before_the_first_read_their_shown_boundaries_from_the_past():
    past = Past(np.ones((1, 3)), np.array([[0, 1, 0]]), np.array([[1, 1, 1]]))
    data = flat_data([[1.0, 1.0]], [[1, 1]])
    run = Scripted({})
    simulate(data, [job(workload=1.0, soft=2 * HOUR)], run, past=past, until_end=True)
    assert run.seen[-1].closed_shown(4).tolist() == [[1, 1, 1, 1]]
    assert run.seen[-1].closed_slots(4)[1].tolist() == [[0, 1, 0, 1]]
    # a past without its boundaries reads as realised
    run = Scripted({})
    simulate(data, [job(workload=1.0, soft=2 * HOUR)], run,
             past=Past(np.ones((1, 3)), np.array([[0, 1, 0]])), until_end=True)
    assert run.seen[-1].closed_shown(4).tolist() == [[0, 1, 0, 1]]
