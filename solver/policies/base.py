"""What every registered policy inherits: its spec parameters, ``repr`` and copies read off its
``__init__`` signature, its declared capabilities (:data:`Tag`) and its quick settings for the
contract suite.

A policy's spec parameters are the arguments of its ``__init__`` but those it names in
``context`` (what a caller hands it besides a spec: the realised market, a forecast source, a
solver backend...); each has a default, whose type is the parameter's, and is kept under its
own name as an attribute.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, Literal, Self

from solver.job import Allocations
from solver.observation import Observation
from solver.policies.forecast_sources import FORECAST_SOURCES
from solver.policies.spec import ParamValue

Tag = Literal["hindsight", "needs_forecasts", "learns"]
"""``hindsight``: plans with the realised market and workload (a yardstick, never online);
``needs_forecasts``: plans on the forecast kind its ``forecast`` parameter names (the oracle's
is the realised market: hindsight too); ``learns``: learns from one run to the next (one
learner for every episode of a case)."""

PARAM_TYPES: tuple[type, ...] = (bool, int, float, str)
"""The types a spec parameter may have."""


class PolicyBase(ABC):
    """A registered policy (:mod:`solver.policies.registry`), a
    :class:`~solver.policies.protocol.Policy`: its ``name``, ``tags``, ``context`` and
    ``quick`` settings, and its spec parameters from its ``__init__``."""

    name: str
    tags: ClassVar[frozenset[Tag]] = frozenset()
    context: ClassVar[tuple[str, ...]] = ()
    """The ``__init__`` arguments that are not spec parameters."""
    quick: ClassVar[tuple[Mapping[str, ParamValue], ...]] = ({},)
    """Parameters the contract suite runs the policy with, one set per way it works, each quick
    on small generated markets."""

    @abstractmethod
    def decide(self, obs: Observation) -> Allocations:
        """The allocations for the observation's jobs
        (:meth:`~solver.policies.protocol.Policy.decide`)."""

    @classmethod
    def defaults(cls) -> dict[str, ParamValue]:
        """Each spec parameter's default, in ``__init__`` order."""
        out: dict[str, ParamValue] = {}
        for name, parameter in inspect.signature(cls.__init__).parameters.items():
            if name == "self" or name in cls.context or parameter.kind in (
                    parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                continue
            default: ParamValue = parameter.default
            if not isinstance(default, PARAM_TYPES):
                raise TypeError(f"{cls.__name__}.__init__ {name}={default!r}: "
                                "expected a default of bool, int, float or str, or the name "
                                "in context")
            out[name] = default
        return out

    @classmethod
    def parameter_types(cls) -> dict[str, type]:
        """Each spec parameter's type: its default's."""
        return {name: type(default) for name, default in cls.defaults().items()}

    @classmethod
    def in_hindsight(cls, params: Mapping[str, ParamValue]) -> bool:
        """True when the policy, given ``params``, plans with the realised market: tagged
        ``hindsight``, or tagged ``needs_forecasts`` and planning on an exact source (the
        oracle)."""
        if "hindsight" in cls.tags:
            return True
        kind = params.get("forecast", cls.defaults().get("forecast"))
        source = FORECAST_SOURCES.get(kind) if isinstance(kind, str) else None
        return "needs_forecasts" in cls.tags and source is not None and source.exact

    def params(self) -> dict[str, Any]:
        """This policy's spec parameters, read from its attributes."""
        return {name: getattr(self, name) for name in self.defaults()}

    def clone(self, **overrides: Any) -> Self:
        """A fresh policy of the same parameters, ``overrides`` (parameters or context)
        replacing them."""
        return type(self)(**(self.params() | overrides))

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({shown})"
