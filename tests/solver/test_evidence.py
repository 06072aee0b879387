"""The planner chosen on the market's own evidence: the backtest's best planner, on closed
slots only, the same every run, and said in the decision."""

import numpy as np
import pytest

from solver.engine import Engine
from solver.forecast.models import MarketModels
from solver.observation import Past
from solver.policies import make_policy
from solver.policies.evidence import EvidenceChooser, job_class
from solver.policies.risk_aware import RiskAware
from solver.policies.routing import PROGRAM, RULE
from solver.simulator import simulate
from tests.solver.evidence_markets import (
    COSTLY_RESTARTS,
    FLICKER,
    RELEASE,
    SLOTS,
    arriving_job,
    evidence_policy,
)
from tests.solver.helpers import HOUR, flat_data, job


class Watch:
    """Passes the policy's answers through and records the job's planner and reason when it is
    first routed."""

    def __init__(self, policy):
        self.policy = policy
        self.name = policy.name
        self.routed = None

    def decide(self, obs):
        answer = self.policy.decide(obs)
        if self.routed is None and self.policy.planner("j") is not None:
            self.routed = (self.policy.planner("j"), self.policy.planner_reason("j"))
        return answer


def _backtests(price, availability, overhead):
    """Each planner's utility over the 24 closed hours before the job, run here alone."""
    history = flat_data(price[:, :RELEASE], availability[:, :RELEASE])
    replay = job("j", workload=16.0, release=0.0, soft=RELEASE * HOUR, value=0.0,
                 restart_overhead=overhead)  # its 24 h to the deadline fit in the replay
    return {p: simulate(history, [replay], evidence_policy().routed_to(p)).total_utility
            for p in ("program", "window", "rule")}


@pytest.mark.parametrize(("market", "best"), [(FLICKER, RULE), (COSTLY_RESTARTS, PROGRAM)])
def test_the_planner_the_backtest_shows_best_is_chosen_and_named_with_its_reason(market, best):
    price, availability, overhead = market
    scores = _backtests(price, availability, overhead)
    assert max(scores, key=lambda p: scores[p]) == best  # the market is as constructed
    assert scores[best] > min(scores.values()) + 1.0
    watch = Watch(evidence_policy())
    result = simulate(flat_data(price, availability), [arriving_job(overhead)], watch)
    planner, reason = watch.routed
    assert planner == best
    assert reason.startswith("evidence: fixed-count single-market unshared jobs")
    assert all(f"{p} {u:.2f}" in reason for p, u in scores.items())
    # every decision names the planner
    assert {p for _, job_id, _ in result.decisions for p in [watch.policy.planner(job_id)]
            } <= {planner, None}


def test_the_choice_uses_no_future_slot():
    """Prices and availability after the job's arrival slot changed: the same choice and the
    same decisions up to that slot."""
    price, availability, overhead = FLICKER
    later_price, later_availability = price.copy(), availability.copy()
    later_price[:, RELEASE + 1:] = 0.3
    later_availability[:, RELEASE + 1:] = 1 - later_availability[:, RELEASE + 1:]
    runs = []
    for p, a in ((price, availability), (later_price, later_availability)):
        watch = Watch(evidence_policy())
        result = simulate(flat_data(p, a), [arriving_job(overhead)], watch)
        runs.append((watch.routed, [d for d in result.decisions if d[0] <= RELEASE]))
    assert runs[0] == runs[1]
    assert runs[0][1]  # the job was decided at its arrival


def test_the_same_market_gives_the_same_choice_and_plan():
    price, availability, overhead = COSTLY_RESTARTS
    runs = []
    for _ in range(2):
        watch = Watch(evidence_policy())
        result = simulate(flat_data(price, availability), [arriving_job(overhead)], watch)
        runs.append((watch.routed, result.decisions))
    assert runs[0] == runs[1]


def test_too_little_history_keeps_the_routing_table_and_says_so():
    price, availability, _ = FLICKER
    early = job("j", workload=4.0, release=2 * HOUR, soft=SLOTS * HOUR, value=0.0)
    watch = Watch(evidence_policy())
    simulate(flat_data(price, availability), [early], watch)
    assert watch.routed == (PROGRAM, "routes: 2 h of history, a backtest needs 6 h")


@pytest.mark.parametrize("market", [FLICKER, COSTLY_RESTARTS])
def test_a_past_before_the_first_slot_gives_the_choice_those_slots_give_inside_the_run(market):
    """The job arrives at the first slot of a run shown the 24 slots before it as its past (its
    forecasters trained on them): the same backtest, planner and reason as when those slots
    were played in the run."""
    price, availability, overhead = market
    inside = Watch(evidence_policy())
    simulate(flat_data(price, availability), [arriving_job(overhead)], inside)
    whole = flat_data(price, availability)
    window = whole.window(RELEASE, SLOTS - RELEASE)
    models = MarketModels(1, 0.0, HOUR)
    for t in range(RELEASE):
        models.learn(whole.price[:, t], whole.availability[:, t])
    shown = Watch(evidence_policy())
    simulate(window, [arriving_job(overhead)], shown, models=models,
             past=Past(whole.price[:, :RELEASE], whole.availability[:, :RELEASE]))
    assert shown.routed == inside.routed
    assert shown.routed[1].startswith("evidence: ")
    blind = Watch(evidence_policy())
    simulate(window, [arriving_job(overhead)], blind)
    assert blind.routed[1] == "routes: 0 h of history, a backtest needs 6 h"


def test_closed_slots_read_the_past_then_the_run():
    whole = flat_data(np.arange(10.0).reshape(1, 10), np.arange(10).reshape(1, 10))
    engine = Engine(whole.markets, 6 * HOUR, HOUR, make_policy("greedy"),
                    past=Past(whole.price[:, :6], whole.availability[:, :6]))
    for t in range(6, 9):
        engine.decide(whole.boundary_price[:, t], whole.boundary_availability[:, t])
        engine.settle(whole.price[:, t], whole.availability[:, t])
    obs = engine.decide(whole.boundary_price[:, 9], whole.boundary_availability[:, 9]).observation
    assert (obs.slot, obs.closed) == (3, 9)
    price, availability = obs.closed_slots(5)
    assert price.tolist() == [[4.0, 5.0, 6.0, 7.0, 8.0]]
    assert availability.tolist() == [[4, 5, 6, 7, 8]]
    assert obs.closed_slots(2)[0].tolist() == [[7.0, 8.0]]
    assert obs.closed_slots(50)[0].tolist() == [list(np.arange(9.0))]
    with pytest.raises(ValueError, match="past of 2 markets: expected 1"):
        Engine(whole.markets, 0.0, HOUR, make_policy("greedy"),
               past=Past(np.zeros((2, 3)), np.zeros((2, 3), dtype=int)))


def one_job_engine(data):
    """An engine on ``data`` run by greedy, with one 30-hour job due at 40 h."""
    engine = Engine(data.markets, data.origin, data.slot_seconds, make_policy("greedy"),
                    data.n_slots)
    engine.add_job(job("a", workload=30.0, release=0.0, soft=40 * HOUR))
    return engine


def test_a_class_keeps_its_choice_until_the_cadence_has_passed():
    """A backtest per class and cadence: a second job of the class within it gets the same
    answer without a new backtest."""
    price, availability, _ = FLICKER
    data = flat_data(price, availability)
    built = []

    def build(planner):
        built.append(planner)
        return make_policy("risk-aware").routed_to(planner)

    chooser = EvidenceChooser(build, history_hours=8.0, cadence_hours=10.0, margin=0.02)
    engine = one_job_engine(data)
    answers = []
    for t in range(20):
        decided = engine.decide(data.boundary_price[:, t], data.boundary_availability[:, t])
        view = decided.observation.jobs[0]
        if t in (8, 12, 18):
            answers.append(chooser.choose(decided.observation, view, (PROGRAM, RULE), PROGRAM))
            assert job_class(decided.observation, view) == (True, False, False)
        engine.settle(data.price[:, t], data.availability[:, t])
    assert built == [None, PROGRAM, RULE] * 2  # the table and each planner, at slots 8 and 18
    assert answers[0] == answers[1]


def test_a_class_the_evidence_names_no_better_planner_for_keeps_the_routing_table():
    """No planner beats the routing table by the margin: each job of the class keeps the route
    the table gives it, and the reason says the table was kept."""
    price, availability, _ = FLICKER
    data = flat_data(price, availability)
    chooser = EvidenceChooser(make_policy("risk-aware").routed_to, history_hours=8.0,
                              cadence_hours=10.0, margin=1e6)
    engine = one_job_engine(data)
    answers = []
    for t in range(13):
        decided = engine.decide(data.boundary_price[:, t], data.boundary_availability[:, t])
        view = decided.observation.jobs[0]
        if t in (8, 12):
            fallback = PROGRAM if t == 8 else RULE
            answers.append(chooser.choose(decided.observation, view, (PROGRAM, RULE), fallback))
        engine.settle(data.price[:, t], data.availability[:, t])
    assert [planner for planner, _ in answers] == [PROGRAM, RULE]
    assert answers[0][1] == answers[1][1]
    assert answers[0][1].endswith("; chosen: routes")


def test_a_chooser_refuses_a_negative_setting():
    with pytest.raises(ValueError, match=r"cadence_hours=-1\.0: expected a non-negative number"):
        EvidenceChooser(lambda p: make_policy("greedy"), history_hours=48.0, cadence_hours=-1.0,
                        margin=0.25)
    with pytest.raises(ValueError, match=r"choose='best': expected one of routes, evidence"):
        RiskAware(choose="best")


def test_a_decision_explains_why_its_job_has_its_planner():
    price, availability, overhead = FLICKER
    data = flat_data(price, availability)
    engine = Engine(data.markets, data.origin, data.slot_seconds, evidence_policy(), data.n_slots)
    engine.add_job(arriving_job(overhead))
    for t in range(RELEASE + 1):
        decided = engine.decide(data.boundary_price[:, t], data.boundary_availability[:, t])
        engine.settle(data.price[:, t], data.availability[:, t])
    why = decided.explain("j")
    assert why.planner == RULE
    assert why.planner_reason.startswith("evidence: fixed-count single-market unshared jobs")
    routes = Engine(data.markets, data.origin, data.slot_seconds, make_policy("risk-aware"),
                    data.n_slots)
    routes.add_job(arriving_job(overhead))
    for t in range(RELEASE + 1):
        decided = routes.decide(data.boundary_price[:, t], data.boundary_availability[:, t])
        routes.settle(data.price[:, t], data.availability[:, t])
    assert decided.explain("j").planner_reason == ""  # the routing table says nothing more
