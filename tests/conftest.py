"""Fixtures for every test, and the test tiers.

A bare ``pytest`` is the developer loop: it leaves out the tests marked ``slow`` and those that
need a broker (``kafka``, which every test using the session broker gets); ``bash
deploy/test.sh`` runs every tier with the CI Hypothesis profile (see ``tests/properties.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

import tests.properties  # noqa: F401 (registers and loads the Hypothesis profiles)
from streams.runtime import RateLimit

pytest_plugins = ["tests.kafka_fixture"]

TIERS = ("slow", "kafka")
"""The markers of the tiers the developer loop leaves out."""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--outage-seconds", type=float, default=20.0,
        help="how long the broker outage tests keep their broker down (CI: 90)")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that uses the session broker ``kafka``, so that no broker starts for a
    run that deselects them; then order the slow tests first and the broker tests next (each
    tier in its files' order), so that parallel workers start the longest tests early and do
    not end on one of them."""
    for item in items:
        if "kafka_bootstrap" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.kafka)
    items.sort(key=lambda item: (item.get_closest_marker("slow") is None,
                                 item.get_closest_marker("kafka") is None))


def pytest_deselected(items: list[pytest.Item]) -> None:
    for item in items:
        if any(item.get_closest_marker(name) for name in TIERS):
            item.config.stash[_left_out] = item.config.stash.get(_left_out, 0) + 1


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter,
                            config: pytest.Config) -> None:
    """In the developer loop (the ``-m`` of the configured ``addopts``), say what it left out
    and how to run it."""
    addopts = config.getini("addopts")
    loop = addopts[addopts.index("-m") + 1] if "-m" in addopts[:-1] else None
    left_out = config.stash.get(_left_out, 0)
    if left_out and config.option.markexpr == loop:
        terminalreporter.write_line(
            f"deselected {left_out} tests marked slow/kafka: `pytest -m slow`, "
            "`pytest -m kafka`, or `bash deploy/test.sh` for the whole suite")


_left_out = pytest.StashKey[int]()


@pytest.fixture(autouse=True)
def _root_handlers_restored() -> Iterator[None]:
    """Commands run in a test configure the root logger (level, rate limits); each test starts
    from the configuration it had before."""
    root = logging.getLogger()
    level, filters = root.level, {h: list(h.filters) for h in root.handlers}
    yield
    root.setLevel(level)
    for handler in root.handlers:
        handler.filters[:] = filters.get(handler, [h for h in handler.filters
                                                   if not isinstance(h, RateLimit)])


@pytest.fixture(autouse=True, scope="session")
def _cache_in_a_temporary_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Commands that keep a cache (``spotsched evaluate``) keep it in a folder of the session,
    not in the user's."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
        yield


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """Every matplotlib figure saved during the test, by file name, to inspect its axes."""
    from pathlib import Path

    from matplotlib.figure import Figure

    figures: dict[str, object] = {}
    save = Figure.savefig

    def record(figure: Figure, path: object, *args: object, **kwargs: object) -> None:
        figures[Path(str(path)).name] = figure
        save(figure, path, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", record)
    return figures
