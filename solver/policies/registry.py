"""Every policy by name, and the one way to build one from a :class:`PolicySpec`.

Each policy class declares its spec parameters (``PARAMETERS``: name → type) and what a caller
may hand it besides (``CONTEXT``: e.g. the realised market data a hindsight yardstick needs).
:func:`check_spec` checks a spec against that declaration; :func:`make_policy` builds it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from solver.policies.baselines import Greedy, OnDemandOnly, SpotOnly, UniformProgress
from solver.policies.chc import CommittedHorizonControl
from solver.policies.eager_failover import EagerFailover
from solver.policies.optimum import Optimum
from solver.policies.prediction_free import PredictionFree
from solver.policies.protocol import Policy
from solver.policies.risk_aware import RiskAware
from solver.policies.selection import PolicySelection
from solver.policies.spec import POLICY_NAMES, ParamValue, PolicySpec
from solver.suggest import did_you_mean

POLICIES: dict[str, Callable[..., Policy]] = {
    cls.name: cls
    for cls in (OnDemandOnly, SpotOnly, Greedy, UniformProgress, EagerFailover, PredictionFree,
                CommittedHorizonControl, RiskAware, PolicySelection, Optimum)
}
"""Policy classes by name, in report order."""

if tuple(POLICIES) != POLICY_NAMES:
    raise RuntimeError(f"POLICY_NAMES {POLICY_NAMES} do not name the registered policies "
                       f"{tuple(POLICIES)} in order")

HINDSIGHT = frozenset({Optimum.name})
"""Policies that plan with the whole market data and workload: yardsticks, not online."""

_TYPE_NAMES = {bool: "true or false", int: "a whole number", float: "a number", str: "a name"}


def check_spec(spec: str | PolicySpec, online: bool = False) -> PolicySpec:
    """The spec (or its text) with its parameters checked against what its policy declares,
    converted to their types, and their values checked by building the policy (but for
    hindsight yardsticks and oracle forecasts, which need the realised market; with ``online``
    those are refused: a live scheduler has no realised market)."""
    spec = _typed_spec(spec)
    if spec.name in HINDSIGHT or spec.kwargs.get("forecast") == "oracle":
        if online:
            raise ValueError(f"policy {spec}: expected an online policy (it needs the realised "
                             "market, which only a replay has)")
    else:
        make_policy(spec)
    return spec


def _typed_spec(spec: str | PolicySpec) -> PolicySpec:
    parsed = spec if isinstance(spec, PolicySpec) else PolicySpec.parse(spec)
    declared: Mapping[str, type] = getattr(_policy_class(parsed.name), "PARAMETERS", {})
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
    cls = _policy_class(parsed.name)
    declared: Mapping[str, type] = getattr(cls, "PARAMETERS", {})
    extra = {k: context.pop(k) for k in list(context) if k in declared}
    if extra:
        parsed = _typed_spec(PolicySpec(parsed.name, tuple({**parsed.kwargs, **extra}.items())))
    accepted = getattr(cls, "CONTEXT", ())
    if "build" in accepted:
        context.setdefault("build", make_policy)
    unknown = sorted(set(context) - set(accepted))
    if unknown:
        raise ValueError(f"policy {parsed.name}: {unknown}: expected spec parameters "
                         f"({', '.join(sorted(declared)) or 'none'}) or context "
                         f"({', '.join(accepted) or 'none'})")
    try:
        return cls(**parsed.kwargs, **context)
    except ValueError as exc:
        message = str(exc)
        if message.startswith(parsed.name):
            raise
        raise ValueError(f"policy {parsed.name}: {message}") from exc


def _policy_class(name: str) -> Callable[..., Policy]:
    try:
        return POLICIES[name]
    except KeyError:
        raise ValueError(f"policy={name!r}: expected one of {', '.join(POLICIES)}"
                         f"{did_you_mean(name, POLICIES)}") from None


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
