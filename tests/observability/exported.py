"""Which metric names the code exports, and which ones a PromQL expression refers to."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

from prometheus_client import CollectorRegistry, enable_created_metrics

from connectors.feeds.metrics import FeedMetrics
from streams.metrics import PipelineMetrics
from streams.metrics_registry import service_registry

REPO = Path(__file__).resolve().parents[2]
OPERATIONS = REPO / "docs" / "operations.md"
PROMETHEUS_NAMES = frozenset({"up", "ALERTS", "ALERTS_FOR_STATE"})
"""Series Prometheus itself makes (scrape health, alert states)."""

_SUFFIXES = {"counter": ("_total", "_created"), "gauge": ("",),
             "histogram": ("_bucket", "_sum", "_count", "_created"), "info": ("_info",)}
_KEYWORDS = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right", "bool",
                       "offset", "and", "or", "unless", "inf", "nan"})


def series_names(registry: CollectorRegistry) -> set[str]:
    """Every series name the registry's metric families can produce."""
    return {family.name + suffix for family in registry.collect()
            for suffix in _SUFFIXES[family.type]}


def pipeline_registry() -> CollectorRegistry:
    """A registry holding a worker's metrics."""
    registry = CollectorRegistry()
    PipelineMetrics(registry, markets=[], topics=[], slot_seconds=3600.0, started=0.0)
    return registry


def documented_connector_names() -> set[str]:
    """The connector metrics listed in docs/operations.md (series names, as written)."""
    return set(re.findall(r"`(spotsched_connector_\w+)`", OPERATIONS.read_text()))


def connector_series() -> set[str]:
    """Series of the connectors' metrics: from ``connectors.metrics`` when it exists (every
    ``*Metrics`` class built on a fresh registry, its other arguments placeholder strings),
    else the names documented in docs/operations.md with the suffixes they may carry."""
    try:
        module = importlib.import_module("connectors.metrics")
    except ModuleNotFoundError as exc:
        if exc.name not in ("connectors.metrics", "connectors"):
            raise
        return {name + suffix for name in documented_connector_names()
                for suffix in ("", "_bucket", "_sum", "_count", "_created")}
    registry = CollectorRegistry()
    classes = [c for name, c in inspect.getmembers(module, inspect.isclass)
               if name.endswith("Metrics") and c.__module__ == module.__name__]
    for cls in classes:
        required = [p for p in inspect.signature(cls).parameters.values()
                    if p.default is p.empty][1:]
        cls(registry, *["probe"] * len(required))  # e.g. the connector's name
    return series_names(registry)


def feed_series() -> set[str]:
    """Series of a market feed's metrics."""
    registry = CollectorRegistry()
    FeedMetrics(registry, "probe")
    return series_names(registry)


def service_series() -> set[str]:
    """Series every worker, connector and feed serves besides its own: the process's,
    Python's and the build's."""
    registry = service_registry("probe")
    enable_created_metrics()  # the switch is the process's: back as other tests expect it
    return series_names(registry)


def exported_series() -> set[str]:
    return (series_names(pipeline_registry()) | connector_series() | feed_series()
            | service_series() | PROMETHEUS_NAMES)


def metric_names(expr: str) -> set[str]:
    """Metric names an expression selects: identifiers that are not functions, keywords,
    labels (in matchers, ``by``/``on`` lists), strings, numbers or durations.

    >>> sorted(metric_names('sum by (le) (rate(a_bucket{x="y"}[5m])) / on (z) b offset 1h'))
    ['a_bucket', 'b']
    """
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    text = re.sub(r"\{[^}]*\}", "", text)
    text = re.sub(r"\[[^\]]*\]", "", text)
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", text)
    names = set()
    for match in re.finditer(r"(?<![\w.$])([A-Za-z_:][\w:]*)(\s*\()?", text):
        name, call = match.groups()
        if not call and name.lower() not in _KEYWORDS:
            names.add(name)
    return names


def variable_query_names(query: str) -> set[str]:
    """Metric names of a Grafana template query (``label_values(selector, label)`` or PromQL)."""
    match = re.fullmatch(r"\s*label_values\((.*),\s*\w+\s*\)\s*", query)
    return metric_names(match.group(1) if match else query)
