"""Full garbage collections run after a decided epoch's batch, not wherever counts run out."""

import gc

from solver.decision import SlotDecision
from streams.pipeline.driver import Batch, Handling
from streams.pipeline.stage import Message
from streams.runners.collector import NEVER, QuietCollector, defer_full_collections


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def batch(stage: str, message: Message, handling: Handling) -> Batch:
    taken = Batch(stage, message.topic)
    taken.add(message, handling)
    return taken


def full_collections() -> int:
    return gc.get_stats()[2]["collections"]


def test_a_full_collection_follows_a_decided_batch_at_most_every_min_interval():
    clock = Clock()
    collector = QuietCollector(min_interval=5.0, max_interval=60.0, clock=clock)
    message = Message("job-events", b"{}")
    decided = Handling(decided=[SlotDecision.__new__(SlotDecision)])
    before = full_collections()
    clock.now = 10.0
    assert not collector.delivered()  # nothing decided yet
    collector.observe(batch("scheduler", message, decided))
    assert collector.delivered() and full_collections() == before + 1
    clock.now = 12.0
    collector.observe(batch("scheduler", message, decided))
    assert not collector.delivered()  # within min_interval of the last
    clock.now = 15.0
    assert collector.delivered()  # the decision seen at 12 s is still due
    clock.now = 70.0
    collector.observe(batch("market", message, Handling()))
    assert not collector.delivered()
    clock.now = 75.0
    assert collector.delivered() and full_collections() == before + 3  # max_interval passed


def test_deferring_full_collections_keeps_the_young_thresholds():
    saved = gc.get_threshold()
    try:
        defer_full_collections()
        assert gc.get_threshold() == (*saved[:2], NEVER)
    finally:
        gc.set_threshold(*saved)
