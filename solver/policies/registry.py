"""Every policy, in display order, and the one way to build one from a :class:`PolicySpec`.

:data:`REGISTERED` is the list of policies: evaluation, the command line, the pipeline and the
contract suite read it, and a policy not in it does not exist. A policy class declares its
spec parameters by its ``__init__`` and what a caller may hand it besides (``context``: e.g. the
realised market data a hindsight yardstick needs) (:class:`~solver.policies.base.PolicyBase`);
:func:`check_spec` checks a spec against that declaration, :func:`make_policy` builds it.
Classes load on first use, so that the names stay light to read (the command line's help).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from solver.policies.spec import ParamValue, PolicySpec
from solver.suggest import did_you_mean

if TYPE_CHECKING:
    from solver.policies.base import PolicyBase
    from solver.policies.protocol import Policy

REGISTERED: tuple[tuple[str, str], ...] = (
    ("on-demand", "solver.policies.baselines:OnDemandOnly"),
    ("spot-only", "solver.policies.baselines:SpotOnly"),
    ("greedy", "solver.policies.baselines:Greedy"),
    ("uniform-progress", "solver.policies.baselines:UniformProgress"),
    ("eager-failover", "solver.policies.eager_failover:EagerFailover"),
    ("prediction-free", "solver.policies.prediction_free:PredictionFree"),
    ("chc", "solver.policies.chc:CommittedHorizonControl"),
    ("risk-aware", "solver.policies.risk_aware:RiskAware"),
    ("policy-selection", "solver.policies.selection:PolicySelection"),
    ("optimum", "solver.policies.optimum:Optimum"),
)
"""Each policy's name and class (``module:Class``), in display order."""

POLICY_NAMES = tuple(name for name, _ in REGISTERED)
"""Every policy's name, in display order."""

_TYPE_NAMES = {bool: "true or false", int: "a whole number", float: "a number", str: "a name"}


def policy_class(name: str) -> type[PolicyBase]:
    """The class of the policy named ``name``."""
    where = dict(REGISTERED).get(name)
    if where is None:
        raise ValueError(f"policy={name!r}: expected one of {', '.join(POLICY_NAMES)}"
                         f"{did_you_mean(name, POLICY_NAMES)}")
    module, _, attribute = where.partition(":")
    cls: type[PolicyBase] = getattr(importlib.import_module(module), attribute)
    if cls.name != name:
        raise RuntimeError(f"{where}: its name {cls.name!r}: expected {name!r}")
    return cls


def policy_classes() -> dict[str, type[PolicyBase]]:
    """Every policy's class by name, in display order."""
    return {name: policy_class(name) for name in POLICY_NAMES}


def in_hindsight(spec: PolicySpec) -> bool:
    """True when ``spec``'s policy plans with the realised market (a yardstick, not online)."""
    return policy_class(spec.name).in_hindsight(spec.kwargs)


def check_spec(spec: str | PolicySpec, online: bool = False) -> PolicySpec:
    """The spec (or its text) with its parameters checked against what its policy declares,
    converted to their types, and their values checked by building the policy (but for
    policies that plan in hindsight, which need the realised market; with ``online`` those are
    refused: a live scheduler has no realised market)."""
    spec = _typed_spec(spec)
    if in_hindsight(spec):
        if online:
            raise ValueError(f"policy {spec}: expected an online policy (it needs the realised "
                             "market, which only a replay has)")
    else:
        make_policy(spec)
    return spec


def _typed_spec(spec: str | PolicySpec) -> PolicySpec:
    parsed = spec if isinstance(spec, PolicySpec) else PolicySpec.parse(spec)
    declared = policy_class(parsed.name).parameter_types()
    checked = {}
    for key, value in parsed.params:
        if key not in declared:
            expected = ", ".join(sorted(declared)) or "none"
            raise ValueError(
                f"policy {parsed.name}: parameter {key!r}: expected one of: {expected}"
                f"{did_you_mean(key, declared)}")
        checked[key] = _typed(parsed.name, key, value, declared[key])
    return PolicySpec(parsed.name, tuple(checked.items()))


def make_policy(spec: str | PolicySpec, **context: Any) -> Policy:
    """A fresh policy from a spec (or its text), with the ``context`` its class accepts;
    keyword arguments that are spec parameters are taken as such."""
    parsed = _typed_spec(spec)
    cls = policy_class(parsed.name)
    declared: Mapping[str, type] = cls.parameter_types()
    extra = {k: context.pop(k) for k in list(context) if k in declared}
    if extra:
        parsed = _typed_spec(PolicySpec(parsed.name, tuple({**parsed.kwargs, **extra}.items())))
    accepted = cls.context
    if "build" in accepted:
        context.setdefault("build", make_policy)
    unknown = sorted(set(context) - set(accepted))
    if unknown:
        raise ValueError(f"policy {parsed.name}: {unknown}: expected spec parameters "
                         f"({', '.join(sorted(declared)) or 'none'}) or context "
                         f"({', '.join(accepted) or 'none'})")
    try:
        policy: Policy = cls(**parsed.kwargs, **context)
    except ValueError as exc:
        message = str(exc)
        if message.startswith(parsed.name):
            raise
        raise ValueError(f"policy {parsed.name}: {message}") from exc
    return policy


def _typed(policy: str, key: str, value: ParamValue, kind: type) -> ParamValue:
    """``value`` as ``kind``, from its text when given as text."""
    where = f"policy {policy}: {key}={value!r}: expected {_TYPE_NAMES[kind]}"
    if isinstance(value, str) and kind is not str:
        text = value.strip().lower()
        try:
            if kind is bool:
                if text not in ("true", "false"):
                    raise ValueError
                return text == "true"
            value = int(text) if kind is int else float(text)
        except ValueError:
            raise ValueError(where) from None
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ValueError(where)
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(where.replace("expected a number", "expected a finite number"))
    return value
