"""A policy as one is added: its own module and one line in the registry
(:data:`solver.policies.registry.REGISTERED`), and nothing else. The contract suite checks it
once registered (``test_policy_contract.py``)."""

from __future__ import annotations

import numpy as np

from solver.job import Allocation, Allocations
from solver.observation import JobView, Observation
from solver.policies.base import PolicyBase
from solver.policies.common import must_use_on_demand, on_demand, one_by_one, spot


class SpotWhenCheap(PolicyBase):
    """Spot while it costs at most ``share`` of on-demand, idle otherwise; on-demand once
    waiting longer would miss the target deadline."""

    name = "spot-when-cheap"
    quick = ({}, {"share": 0.4})

    def __init__(self, share: float = 0.8) -> None:
        if not 0 < share <= 1:
            raise ValueError(f"share={share!r}: expected a fraction of on-demand in (0, 1]")
        self.share = share

    def decide(self, obs: Observation) -> Allocations:
        def rule(view: JobView, left: np.ndarray) -> Allocation | None:
            if must_use_on_demand(obs, view):
                return on_demand(obs, view)
            cheap = obs.price_now <= self.share * np.array([m.on_demand_price
                                                            for m in obs.markets])
            return spot(obs, view, np.where(cheap, left, 0))

        return one_by_one(obs, rule)


class OverAsking(SpotWhenCheap):
    """:class:`SpotWhenCheap` counting on ``n_max`` spot in every market, whatever the boundary
    shows: what the contract suite must refuse."""

    name = "over-asking"

    def decide(self, obs: Observation) -> Allocations:
        return one_by_one(obs, lambda view, left: spot(
            obs, view, np.full(len(obs.markets), view.job.n_max)))
