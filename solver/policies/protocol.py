"""What a scheduling policy is to the engine: :class:`Policy`, and its optional hooks: that of a
policy that learns from how slots turned out, :class:`SettlementObserver`, and that of a policy
made of planners, :class:`PlannerNamer`."""

from __future__ import annotations

from functools import cache
from typing import Protocol, cast, runtime_checkable

import numpy as np

from solver.job import Allocations
from solver.observation import Observation


@runtime_checkable
class Policy(Protocol):
    """A scheduler: called once per slot, in order, with that slot's observation."""

    name: str

    def decide(self, obs: Observation) -> Allocations:
        """The allocations for the observation's jobs; a job left out runs nothing."""
        ...


@runtime_checkable
class SettlementObserver(Protocol):
    """A policy's optional hook: the engine calls it once each slot has closed, after the
    policy's :meth:`Policy.decide` for that slot, with the slot's realised values."""

    def observe_settled(self, price: np.ndarray, availability: np.ndarray) -> None:
        """Learn from a closed slot's realised ``(markets,)`` prices and availability."""
        ...


@runtime_checkable
class PlannerNamer(Protocol):
    """A policy's optional hook when it is made of planners (:mod:`solver.policies.routing`):
    the name of the planner deciding a job, which every decision carries."""

    def planner(self, job_id: str) -> str | None:
        """The planner of ``job_id`` (``None``: a job not seen yet)."""
        ...


def planner_of(policy: Policy, job_id: str) -> str:
    """The planner that decides ``job_id`` under ``policy``: the policy's answer when it is made
    of planners, else the policy's name."""
    named = cast(PlannerNamer, policy).planner(job_id) if names_planners(type(policy)) else None
    return named or policy.name


def planner_reason_of(policy: Policy, job_id: str) -> str:
    """Why ``policy`` gave ``job_id`` its planner, when a policy made of planners says
    (``planner_reason``, e.g. the evidence it chose on), else empty."""
    explain = getattr(policy, "planner_reason", None)
    return str(explain(job_id)) if callable(explain) else ""


@cache
def names_planners(kind: type) -> bool:
    """Whether policies of type ``kind`` are :class:`PlannerNamer` s, known once per type: the
    engine asks for every job at every boundary, and a protocol check takes tens of
    microseconds."""
    return issubclass(kind, PlannerNamer)
