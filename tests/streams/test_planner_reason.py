"""A decision on the wire says why its job has its planner, when the policy says, through the
worker's timing wrapper and policy selection's members."""

from datetime import UTC, datetime

from prometheus_client import CollectorRegistry, Histogram

from solver.engine import Engine
from solver.policies import make_policy
from streams.metrics import TimedPolicy
from streams.pipeline.decisions import DecidedSlot, run_or_idle
from tests.solver.evidence_markets import FLICKER, RELEASE, arriving_job, evidence_policy
from tests.solver.helpers import flat_data


def _decided_at_arrival(policy):
    price, availability, overhead = FLICKER
    data = flat_data(price, availability)
    engine = Engine(data.markets, data.origin, data.slot_seconds, policy, data.n_slots)
    engine.add_job(arriving_job(overhead))
    for t in range(RELEASE + 1):
        decided = engine.decide(data.boundary_price[:, t], data.boundary_availability[:, t])
        engine.settle(data.price[:, t], data.availability[:, t])
    return data, decided


def test_the_decisions_reason_carries_the_evidence_its_planner_was_chosen_on():
    data, decided = _decided_at_arrival(TimedPolicy(evidence_policy(), Histogram(
        "decide_seconds", "", registry=CollectorRegistry())))  # as the worker runs it
    slot = DecidedSlot(RELEASE, datetime(2024, 5, 1, tzinfo=UTC), data.slot_seconds,
                       "risk-aware", tuple(m.key for m in data.markets))
    decision = run_or_idle(slot, decided, "j")
    assert decision.planner == "rule"
    # no spot at the arrival's boundary, and the rule waits for it
    assert decision.reason == f"idle; planner rule: {decided.explain('j').planner_reason}"
    assert "backtest utility USD over the last 24 h" in decision.reason


def test_policy_selection_says_why_its_member_gave_the_job_its_planner():
    member = "risk-aware(choose=evidence;backtest_hours=24;window_hours=12;margin=0.02)"
    selection = make_policy(f"policy-selection:pool={member},fallback={member}")
    _, decided = _decided_at_arrival(selection)
    why = decided.explain("j")
    assert why.planner == "rule"
    assert why.planner_reason.startswith("evidence: fixed-count single-market unshared jobs")
