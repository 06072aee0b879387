"""What a snapshot may name is exactly what the stages' snapshots name: every global, state
class and dtype the stages of every online policy pickle to (at several points of a run, as a
worker's pipeline holds them) is admitted, and nothing else is; and nothing admitted reaches
pickle, eval, files, the operating system or attributes."""

from __future__ import annotations

import builtins
import io
import os
import pickle
import subprocess
from collections import defaultdict

import numpy as np
import pydantic
import pytest
from prometheus_client import CollectorRegistry

from solver.market import build_market_data
from solver.policies import PolicySpec
from solver.synthetic import synthetic_ticks
from streams.metrics import PipelineMetrics
from streams.pipeline import snapshot_globals
from streams.pipeline.declaration import PipelineConfig
from streams.pipeline.driver import Driver
from streams.pipeline.snapshot import pickle_state
from streams.pipeline.snapshot_globals import (
    ADMITTED,
    DTYPES,
    ENVIRONMENT_METHODS,
    REBUILDERS,
    STATE_CLASSES,
    VALUE_TYPES,
    find_global,
    new_object,
)
from streams.pipeline.written import Written
from tests.streams.snapshot_runs import ONLINE, SLOT, SPEC, STAGES, run


class Named(pickle.Unpickler):
    """Records what a pickle names: globals, the state classes of ``new_object``, the dtypes
    of arrays and scalars, the environment's methods."""

    def __init__(self, data: bytes, environment: dict[str, object], seen: defaultdict) -> None:
        super().__init__(io.BytesIO(data))
        self.environment, self.seen = environment, seen

    def find_class(self, module: str, name: str) -> object:
        self.seen["globals"].add((module, name))
        found = find_global(module, name)
        if found is new_object:
            return lambda name, *args: self.seen["classes"].add(name) or new_object(name, *args)
        if found in (snapshot_globals.array, snapshot_globals.scalar):
            def rebuild(dtype: str, *args: object) -> object:
                self.seen["dtypes"].add(dtype)
                return found(dtype, *args)
            return rebuild
        return found

    def persistent_load(self, pid: tuple) -> object:
        kind, *rest = pid
        if kind == "environment-method":
            self.seen["methods"].add(tuple(rest))
            return getattr(self.environment[rest[0]], rest[1])
        if kind == "environment":
            return self.environment[rest[0]]
        return set() if kind in ("set", "same-set") else frozenset()


@pytest.mark.slow
def test_the_admitted_globals_are_exactly_those_the_stages_of_every_policy_pickle_to():
    seen: defaultdict[str, set] = defaultdict(set)
    for policy in ONLINE:
        metrics = PipelineMetrics(CollectorRegistry(), markets=[], topics=[], slot_seconds=SLOT,
                                  started=0.0)
        config = PipelineConfig(build_market_data(synthetic_ticks(SPEC), SLOT).markets, SLOT,
                                PolicySpec(policy), timed=metrics.timed)
        written = Written()
        environment = {"config": config, "solve_seconds": metrics.solve_seconds,
                       "written": written}
        for (name, _), log in run(config).items():
            driver = Driver(STAGES[name].make(config, written))
            cuts = set(range(0, len(log), max(1, len(log) // 12)))
            for at, (message, _) in enumerate(log):
                driver.process(message)
                if at in cuts or at == len(log) - 1:
                    data = pickle_state(driver.stage, environment)
                    Named(data, environment, seen).load()
    assert seen["globals"] == set(ADMITTED)
    assert seen["classes"] == set(STATE_CLASSES)
    assert seen["dtypes"] == set(DTYPES)
    assert seen["methods"] == set(ENVIRONMENT_METHODS)


def test_nothing_admitted_reaches_pickle_eval_files_the_system_or_attributes(tmp_path):
    admitted = {find_global(module, name) for module, name in ADMITTED}
    dangerous = {pickle.loads, pickle.load, builtins.eval, builtins.exec, builtins.compile,
                 builtins.open, builtins.getattr, builtins.setattr, builtins.__import__,
                 io.open, os.system, subprocess.run, type, object}
    assert not admitted & dangerous
    for item in admitted:
        if isinstance(item, type):  # only immutable types of the standard library
            assert item in VALUE_TYPES and item.__module__ in {"builtins", "collections",
                                                                "datetime"}, item
            with pytest.raises(TypeError):
                item.loads = pickle.loads  # type: ignore[attr-defined]
        else:
            assert item in REBUILDERS or (item.__module__, item.__name__) in {
                ("solver.policies.registry", "make_policy"),
                ("solver.policies.selection", "outlook_error")}, item
    # No model class, no method: a pydantic model's class methods (parse_raw, parse_file)
    # are out of reach, and so is any attribute.
    assert not any(isinstance(i, type) and issubclass(i, pydantic.BaseModel) for i in admitted)
    for name in ("streams.contract.events.JobSubmitted.parse_raw",
                 "streams.contract.events.JobSubmitted.parse_file", "os.system",
                 "builtins.getattr", "solver.policies.registry.make_policy", "", None):
        with pytest.raises(pickle.UnpicklingError, match="not among the classes"):
            new_object(name)  # type: ignore[arg-type]
    with pytest.raises(pickle.UnpicklingError, match="only a named tuple takes any"):
        new_object("solver.job.Job", str(tmp_path / "x"))
    for name in sorted(DTYPES):  # plain numbers: no fields whose offsets a snapshot gives
        assert np.dtype(name).fields is None and not np.dtype(name).hasobject
    for dtype in ("V8", "O", "<U4", "|S4", [("a", "<f8")]):
        with pytest.raises(pickle.UnpicklingError, match="dtype"):
            snapshot_globals.array(dtype, (1,), b"\0" * 8)  # type: ignore[arg-type]
