"""The import graph keeps the layers apart, each package importing only those beneath it:

- ``solver``: the model, the policies and the trace readers; pure, it imports only itself;
- ``evaluation``: plays the solver's evaluation plans (executors, cache, progress) and lays
  out reports (tables, plots); only the solver beneath it;
- ``streams``: the event contract (standing alone), the pipeline (the contract, the settings
  and the partitioner), its runners, the Kafka clients, metrics, settings and the command
  line, which alone may run evaluations;
- ``connectors``: decision consumers and live feeds, on the contract, the settings, the client
  layer and the command line's shared options, with which they declare their own commands;
  nothing of ``streams`` imports them.

Nothing imports in a circle.

Every import counts, those inside functions too: a cycle dodged by a late import is still a
cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("solver", "evaluation", "streams", "connectors")
CONNECTOR_MAY_USE = ("streams.contract", "streams.settings", "streams.kafka.clients",
                     "streams.kafka.connect", "streams.kafka.partitions", "streams.kafka.topics",
                     "streams.runtime", "streams.metrics_registry", "streams.cli.common",
                     "streams.cli.errors", "streams.cli.options",
                     # the retries and the log rate limit the broker clients use too
                     "streams.backoff", "streams.rate_limit")
PIPELINE_MAY_USE = ("streams.pipeline", "streams.contract", "streams.settings",
                    "streams.kafka.partitions")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(module: str, path: Path) -> set[str]:
    names: set[str] = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package
                for _ in range(node.level - 1):
                    anchor = anchor.rpartition(".")[0]
                base = f"{anchor}.{base}" if base else anchor
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def _graph() -> dict[str, set[str]]:
    paths = {_module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}

    def project_module(name: str) -> str | None:
        while name and name not in paths:
            name = name.rpartition(".")[0]
        return name or None

    return {m: {d for name in _imported(m, p) if (d := project_module(name)) and d != m}
            for m, p in paths.items()}


GRAPH = _graph()


def _edges(source: str) -> list[tuple[str, str]]:
    return sorted((m, d) for m, deps in GRAPH.items() if m.split(".")[0] == source
                  for d in deps)


def test_the_solver_imports_only_itself():
    assert [(m, d) for m, d in _edges("solver") if not d.startswith("solver")] == []


def test_the_contract_imports_nothing_of_the_solver_or_the_pipeline():
    leaks = [(m, d) for m, deps in GRAPH.items() if m.startswith("streams.contract")
             for d in deps if not d.startswith("streams.contract")]
    assert leaks == []


def test_evaluation_runs_the_solver_only():
    assert [(m, d) for m, d in _edges("evaluation")
            if not d.startswith(("solver", "evaluation"))] == []


def test_the_pipeline_knows_no_runner_client_or_command():
    leaks = [(m, d) for m, deps in GRAPH.items() if m.startswith("streams.pipeline")
             for d in deps if d.startswith("streams") and not d.startswith(PIPELINE_MAY_USE)]
    assert leaks == []


def test_streams_imports_no_connector_and_only_its_command_line_runs_evaluations():
    leaks = [(m, d) for m, d in _edges("streams")
             if d.startswith("connectors")
             or (d.startswith("evaluation") and not m.startswith("streams.cli"))]
    assert leaks == []


def test_connectors_use_the_contract_settings_and_client_layer_only():
    leaks = [(m, d) for m, d in _edges("connectors")
             if d.startswith("streams") and not d.startswith(CONNECTOR_MAY_USE)]
    assert leaks == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = [stack.pop()]
            while component[-1] != v:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_module_imports_in_a_circle():
    assert _cycles(GRAPH) == []


@pytest.mark.parametrize("graph, cycle", [
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
    ({"a": {"b"}, "b": set(), "c": {"b"}}, []),
])
def test_the_cycle_check_finds_cycles(graph, cycle):
    assert _cycles(graph) == cycle
