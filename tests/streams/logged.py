"""Every message the stages of an in-memory pipeline take, and what each made its stage do, in
the order they were taken (observers are told only of the messages that did something)."""

from __future__ import annotations

from typing import NamedTuple

from streams.pipeline.driver import Driver, Handling
from streams.pipeline.stage import AnyStage, Message
from streams.runners.memory import MemoryPipeline


class Taken(NamedTuple):
    stage: str
    partition: int
    message: Message
    handling: Handling


class _Logging(Driver):
    def __init__(self, stage: AnyStage, name: str, partition: int, log: list[Taken]) -> None:
        super().__init__(stage)
        self.name, self.partition, self.log = name, partition, log

    def process(self, message: Message) -> Handling:
        handling = super().process(message)
        self.log.append(Taken(self.name, self.partition, message, handling))
        return handling


def logged(pipeline: MemoryPipeline) -> list[Taken]:
    """The log the pipeline's stages add to from now on."""
    log: list[Taken] = []
    for (topic, partition), driver in pipeline.drivers.items():
        pipeline.drivers[topic, partition] = _Logging(
            driver.stage, pipeline.stages[topic].name, partition, log)
    return log
