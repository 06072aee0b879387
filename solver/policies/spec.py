"""A policy name and its parameters, as written ``NAME[:key=value,...]``.

``chc:window_hours=12,commitment=2`` on the command line and in settings. A policy-selection
pool is one parameter, its members joined by ``+``, each member's parameters in parentheses and
separated by ``;`` (:func:`parse_pool`):
``policy-selection:pool=risk-aware+prediction-free(sigma=0.5)+chc(window_hours=12;commitment=2)``.
A spec is syntax; :func:`solver.policies.registry.check_spec` checks it against what the named
policy declares.
"""

from __future__ import annotations

from dataclasses import dataclass

ParamValue = bool | int | float | str


RECOMMENDED = "risk-aware"
"""The policy the worker runs unless told otherwise: the online planner that plans on the
markets' forecast distributions."""


@dataclass(frozen=True)
class PolicySpec:
    """A policy name and its parameters (sorted by name)."""

    name: str
    params: tuple[tuple[str, ParamValue], ...] = ()

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("policy: expected a name")
        keys = [k for k, _ in self.params]
        if len(set(keys)) != len(keys):
            raise ValueError(f"policy {self.name}: parameters {keys}: expected each once")
        object.__setattr__(self, "params", tuple(sorted(self.params)))

    @staticmethod
    def of(name: str, **params: ParamValue) -> PolicySpec:
        return PolicySpec(name, tuple(params.items()))

    @staticmethod
    def parse(text: str) -> PolicySpec:
        """``NAME`` or ``NAME:key=value,...``."""
        name, _, rest = text.strip().partition(":")
        params: list[tuple[str, ParamValue]] = []
        for item in filter(None, (part.strip() for part in rest.split(","))):
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise ValueError(f"policy {text!r}: {item!r}: expected key=value")
            params.append((key.strip(), value.strip()))
        return PolicySpec(name.strip(), tuple(params))

    def __str__(self) -> str:
        if not self.params:
            return self.name
        return self.name + ":" + ",".join(f"{k}={_show(v)}" for k, v in self.params)

    @property
    def kwargs(self) -> dict[str, ParamValue]:
        return dict(self.params)


def _show(value: ParamValue) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return f"{value:g}" if isinstance(value, float) else str(value)


def parse_pool(text: str) -> tuple[PolicySpec, ...]:
    """The members of a pool written ``NAME(key=value;...)+NAME+...``."""
    members = []
    for member in text.split("+"):
        name, paren, rest = member.strip().partition("(")
        if paren and not rest.endswith(")"):
            raise ValueError(f"pool={text!r}: {member.strip()!r}: expected NAME or "
                             "NAME(key=value;...)")
        members.append(PolicySpec.parse(name + ":" + rest[:-1].replace(";", ",")
                                        if paren else name))
    return tuple(members)


def format_pool(members: tuple[PolicySpec, ...]) -> str:
    """``members`` as :func:`parse_pool` reads them."""
    return "+".join(m.name + (f"({str(m).partition(':')[2].replace(',', ';')})" if m.params
                              else "") for m in members)
