"""Fixtures of the real-broker tests."""

from __future__ import annotations

import pytest

from tests.kafka.pipeline_harness import Pipeline


@pytest.fixture
def pipelines(kafka_bootstrap, tmp_path):
    """Makes isolated pipelines (``pipelines(catalogue, **options)``); stops their workers
    after the test."""
    made: list[Pipeline] = []

    def make(catalogue, **options) -> Pipeline:
        workdir = tmp_path / f"pipeline-{len(made)}"
        workdir.mkdir()
        made.append(Pipeline(kafka_bootstrap, workdir, tuple(catalogue), **options))
        return made[-1]

    yield make
    for pipeline in made:
        pipeline.stop_workers()
