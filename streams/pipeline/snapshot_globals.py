"""What a snapshot may name: the classes the stages' state is made of, a few value types, and
the rebuilders of this module; nothing that can reach code, files or attributes.

Unpickling calls whatever global a pickle names with whatever arguments the pickle holds, so a
snapshot that could name any callable would run any code its writer chose. Snapshots are
therefore written so that they name few globals (:func:`reduce_state`), and restored with
:func:`find_global`, which resolves only :data:`ADMITTED`:

- an object of a class in :data:`STATE_CLASSES` is written as :func:`new_object` with the
  class's name, then its state: no class of the project or of river is ever a global of a
  snapshot (so none is called with the snapshot's arguments, nor has its attributes set);
- numpy arrays and scalars are :func:`array` and :func:`scalar` of a dtype named by string
  among :data:`DTYPES` (no dtype state is read from a snapshot), random generators
  :func:`random_generator` of their bit generator's state, river's ``VectorDict``
  :func:`vector_dict` of its mapping;
- the value types of :data:`VALUE_TYPES` (immutable types of the standard library, called
  only as their own constructors) and the functions a policy holds (:data:`FUNCTIONS`).

Bound methods are never globals: the one method a stage holds, of an object of the worker's
environment, is written by name (:data:`ENVIRONMENT_METHODS`, :mod:`streams.pipeline.snapshot`).

A stage whose state gains a class not listed here cannot be snapshotted (the snapshot fails,
saying which class): add it to :data:`STATE_CLASSES`. The snapshot tests pickle every online
policy's stages and check that every global they name is admitted.
"""

from __future__ import annotations

import collections
import copyreg
import datetime
import importlib
import pickle
import types
from typing import Any

import numpy as np

STATE_CLASSES: frozenset[str] = frozenset({
    "river.linear_model.lin_reg.LinearRegression",
    "river.optim.ada_grad.AdaGrad",
    "river.optim.initializers.Zeros",
    "river.optim.losses.Quantile",
    "river.optim.schedulers.Constant",
    "solver.engine.Engine",
    "solver.engine.History",
    "solver.engine.JobState",
    "solver.experts.Hedge",
    "solver.experts.RegretTrace",
    "solver.experts.Round",
    "solver.forecast.drift.LearnedDrift",
    "solver.forecast.hazards.HazardTable",
    "solver.forecast.levels.CapacityLevels",
    "solver.forecast.market.MarketForecast",
    "solver.forecast.market.MarketForecaster",
    "solver.forecast.registry.NamedMarketFactory",
    "solver.forecast.semi_markov.SemiMarkovAvailability",
    "solver.forecast.tracking.ErrorTracker",
    "solver.job.Allocation",
    "solver.job.Job",
    "solver.market.Market",
    "solver.migration.EgressRule",
    "solver.migration.MigrationTable",
    "solver.migration.Place",
    "solver.optimize.backends.SolverLimits",
    "solver.optimize.stochastic.SingleJob",
    "solver.optimize.stochastic.Solution",
    "solver.optimize.stochastic.SpotModel",
    "solver.policies.baselines.Greedy",
    "solver.policies.baselines.OnDemandOnly",
    "solver.policies.baselines.SpotOnly",
    "solver.policies.baselines.UniformProgress",
    "solver.policies.chc.CommittedHorizonControl",
    "solver.policies.chc.WindowPlanner",
    "solver.policies.chc._Controller",
    "solver.policies.eager_failover.EagerFailover",
    "solver.policies.forecast_sources.DistributionForecast",
    "solver.policies.prediction_free.PredictionFree",
    "solver.policies.prediction_free.ThresholdRule",
    "solver.policies.risk_aware.RiskAware",
    "solver.policies.routing.Router",
    "solver.policies.selection.PolicySelection",
    "solver.policies.selection.Selector",
    "solver.policies.selection.Settlement",
    "solver.policies.selection._Assignment",
    "solver.policies.spec.PolicySpec",
    "solver.policies.stochastic_planner.StochasticPlanner",
    "solver.policies.stochastic_planner._JobSolutions",
    "solver.slotting.SlotCutter",
    "streams.contract.events.JobSubmitted",
    "streams.contract.events.PublishedForecast",
    "streams.contract.outlook.Hazards",
    "streams.contract.outlook.Outlook",
    "streams.metrics.TimedPolicy",
    "streams.pipeline.coordinator.EpochCoordinator",
    "streams.pipeline.coordinator._Open",
    "streams.pipeline.market_stage.MarketStage",
    "streams.pipeline.market_stage._Candidate",
    "streams.pipeline.market_stage._MarketClock",
    "streams.pipeline.outlooks.PendingForecasts",
    "streams.pipeline.scheduler.PartitionScheduler",
    "streams.pipeline.stage.Message",
    "streams.pipeline.stage.Relayed",
})
"""``module.qualname`` of every class whose objects a stage's state holds."""

DTYPES: frozenset[str] = frozenset({"<f8", "<f4", "<i8", "|b1"})
"""The dtypes of the state's arrays and scalars (plain numbers: no fields, no objects)."""

ENVIRONMENT_METHODS: frozenset[tuple[str, str]] = frozenset({("config", "make_policy")})
"""``(environment object, method)`` of the bound methods a stage holds."""

VALUE_TYPES: tuple[type, ...] = (float, collections.defaultdict, collections.deque,
                                 datetime.datetime, datetime.timedelta, datetime.timezone)
"""Immutable types of the standard library a snapshot names (``float``: a defaultdict's
factory)."""

FUNCTIONS: frozenset[tuple[str, str]] = frozenset({
    ("solver.policies.registry", "make_policy"), ("solver.policies.selection", "outlook_error")})
"""``(module, name)`` of the functions a policy holds (a policy selection's policy builder and
its forecast error)."""


def new_object(name: str, *args: object) -> object:
    """A new, empty object of the state class ``name`` (its state is set next); ``args`` are a
    named tuple's fields."""
    if not isinstance(name, str) or name not in STATE_CLASSES:
        raise pickle.UnpicklingError(f"it asks for an object of {str(name)[:80]!r}, which is "
                                     "not among the classes a stage's state is made of")
    cls = _class(name)
    if args and not issubclass(cls, tuple):
        raise pickle.UnpicklingError(f"it gives {name} arguments: only a named tuple takes any")
    return cls.__new__(cls, *args)


def array(dtype: str, shape: tuple[int, ...], data: bytes | bytearray) -> np.ndarray:
    """A numpy array of ``shape`` of a dtype of :data:`DTYPES`, from its bytes in C order."""
    if not isinstance(shape, tuple) or not all(type(n) is int and n >= 0 for n in shape):
        raise pickle.UnpicklingError(f"array shape {str(shape)[:80]}: expected a tuple of "
                                     "counts")
    return np.frombuffer(data, _dtype(dtype)).reshape(shape)


def scalar(dtype: str, data: bytes) -> np.generic:
    """A numpy scalar of a dtype of :data:`DTYPES`, from its bytes."""
    found: np.generic = np.frombuffer(data, _dtype(dtype), count=1)[0]
    return found


def random_generator(state: dict[str, Any]) -> np.random.Generator:
    """A numpy random generator (PCG64) in ``state``, its bit generator's state."""
    bit_generator = np.random.PCG64(0)
    bit_generator.state = state  # type: ignore[assignment]  # numpy checks its kind and fields
    return np.random.Generator(bit_generator)


def vector_dict(data: dict[Any, float]) -> object:
    """A river VectorDict of ``data``."""
    from river._river_rust.vectordict import VectorDict

    if not isinstance(data, dict):
        raise pickle.UnpicklingError("a VectorDict of something other than a dict")
    return VectorDict(data)


REBUILDERS = (new_object, array, scalar, random_generator, vector_dict)


ADMITTED: frozenset[tuple[str, str]] = frozenset(
    {(item.__module__, item.__qualname__) for item in (*REBUILDERS, *VALUE_TYPES)}  # type: ignore[attr-defined]  # functions and types
    | FUNCTIONS)
"""``(module, name)`` of every global a snapshot may name."""


def find_global(module: str, name: str) -> object:
    """The global ``module.name`` if :data:`ADMITTED`; else :class:`pickle.UnpicklingError`
    naming it."""
    if (module, name) not in ADMITTED:
        raise pickle.UnpicklingError(
            f"it names {module[:80]}.{name[:80]}, which is not among the globals a stage's "
            "state is made of (streams.pipeline.snapshot_globals)")
    found: object = getattr(importlib.import_module(module), name)
    return found


def reduce_state(obj: object) -> tuple[Any, ...] | None:
    """How :func:`find_global`'s unpickler rebuilds ``obj``: for the objects of numpy, river
    and the state classes; ``None`` for the rest (pickled as usual: builtins, value types,
    functions). :class:`pickle.PicklingError` for an object of a class not admitted."""
    kind = type(obj)
    if kind is np.ndarray:
        contiguous = np.ascontiguousarray(obj)
        return array, (contiguous.dtype.str, contiguous.shape,
                       pickle.PickleBuffer(contiguous))  # type: ignore[arg-type]  # an array is a buffer
    if isinstance(obj, np.generic):
        return scalar, (obj.dtype.str, obj.tobytes())
    if kind is np.random.Generator:
        assert isinstance(obj, np.random.Generator)
        return random_generator, (obj.bit_generator.state,)
    if (kind.__module__, kind.__qualname__) == _VECTOR_DICT:
        return vector_dict, (obj.to_dict(),)  # type: ignore[attr-defined]  # a VectorDict
    if kind in VALUE_TYPES or kind in _BUILTINS or isinstance(obj, _NAMED):
        return None
    name = f"{kind.__module__}.{kind.__qualname__}"
    if name not in STATE_CLASSES:
        raise pickle.PicklingError(
            f"a stage's state holds an object of {name}, which is not among "
            "streams.pipeline.snapshot_globals.STATE_CLASSES: add it there")
    reduced = obj.__reduce_ex__(pickle.HIGHEST_PROTOCOL)
    if not (isinstance(reduced, tuple) and reduced[0] is _NEWOBJ and reduced[1][0] is kind):
        raise pickle.PicklingError(f"{name} pickles in a way of its own, which snapshots do "
                                   "not restore")
    return (new_object, (name, *reduced[1][1:]), *reduced[2:])


_NEWOBJ = copyreg.__dict__["__newobj__"]
"""How an object of a plain class pickles (its class's ``__new__``, then its state)."""


_VECTOR_DICT = ("river._river_rust.vectordict", "VectorDict")
_NAMED = (type, types.FunctionType)
"""Pickled by name: a defaultdict's factory, a policy's functions (admitted or refused by
:func:`find_global`)."""
_BUILTINS = (type(None), bool, int, float, complex, str, bytes, bytearray, tuple, list, dict,
             set, frozenset)


def _class(name: str) -> type:
    module, _, qualname = name.rpartition(".")
    found: Any = importlib.import_module(module)
    for part in qualname.split("."):  # names of STATE_CLASSES only
        found = getattr(found, part)
    assert isinstance(found, type)
    return found


def _dtype(name: str) -> np.dtype[Any]:
    if not isinstance(name, str) or name not in DTYPES:
        raise pickle.UnpicklingError(f"dtype {str(name)[:80]!r}: expected one of "
                                     f"{sorted(DTYPES)}")
    return np.dtype(name)
