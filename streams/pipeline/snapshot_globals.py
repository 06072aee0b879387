"""The globals a snapshot may name: the classes the stages' state is made of, and nothing else.

Unpickling calls whatever global a pickle names, so a snapshot that could name any would run
any code its writer chose. A snapshot is restored with :func:`find_global`, which resolves
only the pairs of :data:`ALLOWED`: the project's stage, engine, policy and forecaster state
classes, the numpy and river reconstructors that their arrays, generators and models pickle
to, and a few builtins. ``builtins.getattr`` (how a bound method pickles) resolves to
:func:`bound_method`, which yields public methods only, never an attribute such as
``__globals__``.

A stage whose state gains a class not listed here has its snapshots refused (and is rebuilt
from the log): add the class when adding it to a stage's state; the snapshot tests restore
every online policy's stages, so a missing one fails them.
"""

from __future__ import annotations

import importlib
import pickle
import types
from collections.abc import Callable

_BY_MODULE: dict[str, tuple[str, ...]] = {
    "builtins": ("bytearray", "complex", "float", "frozenset", "getattr", "int", "set"),
    "collections": ("OrderedDict", "defaultdict", "deque"),
    "datetime": ("date", "datetime", "timedelta", "timezone"),
    "numpy": ("dtype", "ndarray"),
    "numpy._core.multiarray": ("_reconstruct", "scalar"),
    "numpy._core.numeric": ("_frombuffer",),
    "numpy.random._pcg64": ("PCG64",),
    "numpy.random._pickle": ("__bit_generator_ctor", "__generator_ctor"),
    "numpy.random.bit_generator": ("SeedSequence", "__pyx_unpickle_SeedSequence"),
    "river._river_rust.vectordict": ("VectorDict",),
    "river.linear_model.lin_reg": ("LinearRegression",),
    "river.optim.ada_grad": ("AdaGrad",),
    "river.optim.initializers": ("Zeros",),
    "river.optim.losses": ("Quantile",),
    "river.optim.schedulers": ("Constant",),
    "solver.engine": ("Engine", "History", "JobState"),
    "solver.experts": ("Hedge", "RegretTrace", "Round"),
    "solver.forecast.drift": ("LearnedDrift",),
    "solver.forecast.hazards": ("HazardTable",),
    "solver.forecast.levels": ("CapacityLevels",),
    "solver.forecast.market": ("MarketForecast", "MarketForecaster"),
    "solver.forecast.registry": ("NamedMarketFactory",),
    "solver.forecast.semi_markov": ("SemiMarkovAvailability",),
    "solver.forecast.tracking": ("ErrorTracker",),
    "solver.job": ("Allocation", "Job"),
    "solver.market": ("Market",),
    "solver.migration": ("EgressRule", "MigrationTable", "Place"),
    "solver.optimize.backends": ("SolverLimits",),
    "solver.optimize.stochastic": ("SingleJob", "Solution", "SpotModel"),
    "solver.policies.baselines": ("Greedy", "OnDemandOnly", "SpotOnly", "UniformProgress"),
    "solver.policies.chc": ("CommittedHorizonControl", "WindowPrograms", "_Controller"),
    "solver.policies.eager_failover": ("EagerFailover",),
    "solver.policies.forecast_sources": ("DistributionForecast",),
    "solver.policies.prediction_free": ("PredictionFree", "ThresholdRule"),
    "solver.policies.programs": ("SingleJobPrograms", "_Program"),
    "solver.policies.registry": ("make_policy",),
    "solver.policies.risk_aware": ("RiskAware",),
    "solver.policies.routing": ("Router",),
    "solver.policies.selection": ("PolicySelection", "Selector", "Settlement", "_Assignment",
                                  "outlook_error"),
    "solver.policies.spec": ("PolicySpec",),
    "solver.slotting": ("SlotCutter",),
    "streams.contract.events": ("JobSubmitted", "MarketBoundary", "PublishedForecast"),
    "streams.contract.outlook": ("Hazards", "Outlook"),
    "streams.metrics": ("TimedPolicy",),
    "streams.pipeline.coordinator": ("EpochCoordinator", "_Open"),
    "streams.pipeline.market_stage": ("MarketStage", "_Candidate", "_MarketClock"),
    "streams.pipeline.outlooks": ("PendingForecasts",),
    "streams.pipeline.scheduler": ("PartitionScheduler",),
    "streams.pipeline.stage": ("Message", "Relayed"),
}

ALLOWED: frozenset[tuple[str, str]] = frozenset(
    (module, name) for module, names in _BY_MODULE.items() for name in names)
"""``(module, name)`` of every global a snapshot may name."""


def find_global(module: str, name: str) -> object:
    """The global ``module.name`` if :data:`ALLOWED`; else :class:`pickle.UnpicklingError`
    naming it."""
    if (module, name) not in ALLOWED:
        raise pickle.UnpicklingError(
            f"it names {module}.{name}, which is not among the classes a stage's state is "
            "made of (streams.pipeline.snapshot_globals)")
    if (module, name) == ("builtins", "getattr"):
        return bound_method
    found: object = getattr(importlib.import_module(module), name)
    return found


def bound_method(owner: object, name: str) -> Callable[..., object]:
    """``owner``'s public method ``name`` (what a pickled bound method is rebuilt with)."""
    if not isinstance(name, str) or name.startswith("_"):
        raise pickle.UnpicklingError(f"it asks for attribute {name!r}: only public methods "
                                     "are restored")
    method = getattr(owner, name)
    if not isinstance(method, types.MethodType):
        raise pickle.UnpicklingError(f"it asks for attribute {name!r}, which is not a method")
    return method
