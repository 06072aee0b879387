"""A decision on the wire says when its market denied spot since it last held spot through a
whole slot."""

from datetime import UTC, datetime

import numpy as np

from solver.engine import Engine
from solver.market import MarketData
from solver.policies import make_policy
from streams.pipeline.decision_encoder import DecidedSlot, run_or_idle
from tests.solver.helpers import HOUR, job, markets


def test_a_decision_asking_spot_where_it_was_just_refused_says_so():
    # Market 0's boundaries show spot its slots do not keep; market 1 never has any.
    data = MarketData(tuple(markets(2)), 0.0, HOUR, np.ones((2, 3)), np.zeros((2, 3), int),
                      np.ones((2, 3)), np.array([[1] * 3, [0] * 3]))
    engine = Engine(data.markets, data.origin, data.slot_seconds, make_policy("prediction-free"),
                    data.n_slots)
    engine.add_job(job(workload=1.0, soft=12 * HOUR))
    seen = []
    for t in range(2):
        decided = engine.decide(data.boundary_price[:, t], data.boundary_availability[:, t])
        slot = DecidedSlot(t, datetime(2024, 5, 1, t, tzinfo=UTC), HOUR, "prediction-free",
                           tuple(m.key for m in data.markets))
        seen.append(run_or_idle(slot, decided, "j"))
        engine.settle(data.price[:, t], data.availability[:, t])
    assert [(d.market, d.spot) for d in seen] == [(data.markets[0].key, 1)] * 2
    assert [d.market_view.spot_denied for d in seen if d.market_view] == [False, True]
