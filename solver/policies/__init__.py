"""Scheduling policies; build one with :func:`~solver.policies.registry.make_policy`.

The registry lists every policy by name and loads a policy's class on first use, so that
reading a spec or the policies' names stays light."""

from solver.policies.registry import (
    POLICY_NAMES,
    check_spec,
    in_hindsight,
    make_policy,
    policy_class,
    policy_classes,
)
from solver.policies.spec import RECOMMENDED, PolicySpec

__all__ = ["POLICY_NAMES", "RECOMMENDED", "PolicySpec", "check_spec", "in_hindsight",
           "make_policy", "policy_class", "policy_classes"]
