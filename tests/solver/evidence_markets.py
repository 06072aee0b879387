"""Markets on which the evidence of a backtest picks the planner, and the job and policy
the tests run on them."""

import numpy as np

from solver.policies.risk_aware import RiskAware
from tests.solver.helpers import HOUR, job

SLOTS = 48
RELEASE = 24
"""Each market runs 48 hourly slots; the job arrives after 24 of them, which the backtest
replays."""

FLICKER = (np.full((1, SLOTS), 1.0), np.array([[t % 2 for t in range(SLOTS)]]), 0.0)
"""Cheap spot every other hour and no restart overhead: taking spot whenever it shows up (the
rule) beats planning on it."""
COSTLY_RESTARTS = (np.full((1, SLOTS), 2.5), np.array([[(t // 4) % 2 for t in range(SLOTS)]]),
                   1800.0)
"""Spot at 2.5 of 3.0 USD/h in 4 h runs and a half-hour restart: the rule's restarts cost more
than spot saves; the program keeps on-demand."""


def arriving_job(overhead):
    """The job arriving after ``RELEASE`` slots, due at the end."""
    return job("j", workload=16.0, release=RELEASE * HOUR, soft=SLOTS * HOUR, value=0.0,
               restart_overhead=overhead)


def evidence_policy():
    """The risk-aware policy choosing its planner on the evidence of a day's backtest."""
    return RiskAware(choose="evidence", backtest_hours=24.0, window_hours=12.0, margin=0.02)
