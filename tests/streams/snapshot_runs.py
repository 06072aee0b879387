"""A synthetic replay through the in-memory pipeline, logged stage partition by stage
partition, and a pickle that runs a command: what the snapshot tests restore and refuse."""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

from solver.policies import POLICY_NAMES, policy_class
from solver.synthetic import SyntheticMarketSpec
from streams.contract import JobSubmitted, dump_event
from streams.pipeline.declaration import PIPELINE, PipelineConfig
from streams.pipeline.driver import Handling
from streams.pipeline.stage import Message
from streams.pipeline.trace_events import trace_events
from streams.runners.memory import MemoryPipeline
from tests.scenarios import synthetic
from tests.streams.logged import logged

SPEC = SyntheticMarketSpec(seed=5, n_markets=3, days=5)
SLOT = 3600.0
ONLINE = sorted(n for n in POLICY_NAMES if "hindsight" not in policy_class(n).tags)
STAGES = {spec.name: spec for spec in PIPELINE}


def run(config: PipelineConfig, job_partitions: int = 2
        ) -> defaultdict[tuple[str, int], list[tuple[Message, Handling]]]:
    """Every message each stage partition took, and what it made of it."""
    ticks, _, jobs = synthetic(SPEC.seed, SPEC.n_markets, SPEC.days, 10, slot=SLOT)
    pipeline = MemoryPipeline(config, job_partitions)
    taken = logged(pipeline)
    for event in trace_events(ticks, jobs):
        topic = (pipeline.topics.job_events if isinstance(event, JobSubmitted)
                 else pipeline.topics.market_ticks)
        pipeline.send(topic, dump_event(event), event.key.encode())
    log: defaultdict[tuple[str, int], list[tuple[Message, Handling]]] = defaultdict(list)
    for stage, partition, message, handling in taken:
        log[stage, partition].append((message, handling))
    return log


class RunsACommand:
    """Unpickles as a call of ``os.system``."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)
