"""What a scheduling policy is to the engine: :class:`Policy`, and the optional hook of a
policy that learns from how slots turned out, :class:`SettlementObserver`."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from solver.observation import Decision, Observation


@runtime_checkable
class Policy(Protocol):
    """A scheduler: called once per slot, in order, with that slot's observation."""

    name: str

    def decide(self, obs: Observation) -> Decision:
        """The allocations for the observation's jobs; a job left out runs nothing."""
        ...


@runtime_checkable
class SettlementObserver(Protocol):
    """A policy's optional hook: the engine calls it once each slot has closed, after the
    policy's :meth:`Policy.decide` for that slot, with the slot's realised values."""

    def observe_settled(self, price: np.ndarray, availability: np.ndarray) -> None:
        """Learn from a closed slot's realised ``(markets,)`` prices and availability."""
        ...
