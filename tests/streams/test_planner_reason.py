"""A decision on the wire says why its job has its planner, when the policy says."""

from datetime import UTC, datetime

from solver.engine import Engine
from streams.pipeline.decisions import DecidedSlot, run_or_idle
from tests.solver.helpers import flat_data
from tests.solver.test_evidence import FLICKER, RELEASE, _job, _policy


def test_the_decisions_reason_carries_the_evidence_its_planner_was_chosen_on():
    price, availability, overhead = FLICKER
    data = flat_data(price, availability)
    engine = Engine(data.markets, data.origin, data.slot_seconds, _policy(), data.n_slots)
    engine.add_job(_job(overhead))
    for t in range(RELEASE + 1):
        decided = engine.decide(data.boundary_price[:, t], data.boundary_availability[:, t])
        engine.settle(data.price[:, t], data.availability[:, t])
    slot = DecidedSlot(RELEASE, datetime(2024, 5, 1, tzinfo=UTC), data.slot_seconds,
                       "risk-aware", tuple(m.key for m in data.markets))
    decision = run_or_idle(slot, decided, "j")
    assert decision.planner == "rule"
    # no spot at the arrival's boundary, and the rule waits for it
    assert decision.reason == f"idle; planner rule: {decided.explain('j').planner_reason}"
    assert "backtest utility USD over the last 24 h" in decision.reason
