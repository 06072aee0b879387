"""Scheduling policies; build one with :func:`~solver.policies.registry.make_policy`.

The registry (and with it every policy) loads on first use, so that reading a spec or the
recommended policy's name stays light."""

from typing import TYPE_CHECKING, Any

from solver.policies.spec import POLICY_NAMES, RECOMMENDED, PolicySpec

if TYPE_CHECKING:
    from solver.policies.registry import HINDSIGHT, POLICIES, check_spec, make_policy

__all__ = ["HINDSIGHT", "POLICIES", "POLICY_NAMES", "RECOMMENDED", "PolicySpec", "check_spec",
           "make_policy"]


def __getattr__(name: str) -> Any:
    if name in ("HINDSIGHT", "POLICIES", "check_spec", "make_policy"):
        from solver.policies import registry

        return getattr(registry, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
