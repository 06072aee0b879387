"""The Prometheus registry a long-running command (worker, connector, feed) serves: its own
metrics, and the process's (CPU, memory, open files), Python's (version, collections) and the
build's (``spotsched_build_info``), with no ``*_created`` series (each counter's and
histogram's creation time, which no alert or panel reads)."""

from __future__ import annotations

from importlib.metadata import version

from prometheus_client import (
    GCCollector,
    Info,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
)
from prometheus_client.registry import CollectorRegistry


def service_registry(component: str) -> CollectorRegistry:
    """A registry for ``component`` (``worker``, ``connector`` or ``feed``) holding the
    process's, Python's and the build's metrics; ``*_created`` series are turned off for the
    process."""
    disable_created_metrics()
    registry = CollectorRegistry()
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    Info("spotsched_build", "The running spotsched: its version and component.",
         registry=registry).info({"version": version("spotsched"), "component": component})
    return registry
