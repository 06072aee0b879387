"""Scheduling policies; build one with :func:`~solver.policies.registry.make_policy`."""

from solver.policies.registry import HINDSIGHT, POLICIES, check_spec, make_policy
from solver.policies.spec import PolicySpec

__all__ = ["HINDSIGHT", "POLICIES", "PolicySpec", "check_spec", "make_policy"]
