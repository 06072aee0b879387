"""``spotsched dev``: development helpers."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from streams.cli.app import app
from streams.cli.errors import fail

dev = typer.Typer(help="Development helpers.", no_args_is_help=True)
app.add_typer(dev, name="dev")


@dev.command("kafka")
def dev_kafka(
    port: Annotated[int, typer.Option(help="Client port.")] = 9092,
    data_dir: Annotated[Path | None, typer.Option(
        help="Keep the broker's data here (default: a temporary directory).")] = None,
) -> None:
    """Run a single-node Kafka (KRaft) on 127.0.0.1 until Ctrl-C."""
    from streams.kafka.devkafka import DevKafkaError, serve

    try:
        serve(port, data_dir)
    except DevKafkaError as exc:
        fail(exc, 1)
