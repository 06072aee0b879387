"""Fixtures for every test."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from streams.runtime import RateLimit

pytest_plugins = ["tests.kafka_fixture"]


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
