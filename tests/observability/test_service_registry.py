"""What every long-running command serves besides its own metrics: the process's, Python's and
the build's, and no ``*_created`` series."""

from importlib.metadata import version

import pytest
from prometheus_client import Counter, enable_created_metrics, generate_latest

from streams.metrics_registry import service_registry


@pytest.fixture
def registry():
    yield service_registry("worker")
    enable_created_metrics()  # the switch is the process's: back as other tests expect it


def test_a_service_serves_process_python_and_build_metrics(registry):
    Counter("probe_messages", "A probe.", registry=registry).inc()
    text = generate_latest(registry).decode()
    for name in ("process_cpu_seconds_total", "process_resident_memory_bytes",
                 "process_open_fds", "python_info{", "python_gc_collections_total",
                 "probe_messages_total 1.0"):
        assert name in text, name
    build = f'spotsched_build_info{{component="worker",version="{version("spotsched")}"}} 1.0'
    assert build in text
    assert "_created" not in text
