"""Scheduling policies by their CLI names."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from solver.policies.baselines import Greedy, OnDemandOnly, SpotOnly, UniformProgress
from solver.policies.chc import CommittedHorizonControl
from solver.policies.optimum import Optimum
from solver.policies.prediction_free import PredictionFree
from solver.policies.selection import PolicySelection
from solver.policy import Policy

POLICIES: dict[str, Callable[..., Policy]] = {
    OnDemandOnly.name: OnDemandOnly,
    SpotOnly.name: SpotOnly,
    Greedy.name: Greedy,
    UniformProgress.name: UniformProgress,
    Optimum.name: Optimum,
    CommittedHorizonControl.name: CommittedHorizonControl,
    PredictionFree.name: PredictionFree,
    PolicySelection.name: PolicySelection,
}


def make_policy(name: str, **params: Any) -> Policy:
    """A fresh policy by CLI name, with its parameters (a ``TypeError`` names a wrong one)."""
    try:
        factory = POLICIES[name]
    except KeyError:
        raise ValueError(
            f"policy={name!r}: expected one of {', '.join(sorted(POLICIES))}"
        ) from None
    try:
        return factory(**params)
    except TypeError as exc:
        raise ValueError(f"policy={name!r} with parameters {sorted(params)}: {exc}") from exc
