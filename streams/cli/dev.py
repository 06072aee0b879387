"""``spotsched dev``: development helpers, which run from the source checkout.

The development broker is not part of the package: its module, Maven POM and logging
configuration live in ``deploy/kafka/`` of the checkout this package was installed from
(``pip install -e .``), and are loaded from there."""

from __future__ import annotations

import importlib.util
import signal
import sys
from pathlib import Path
from types import ModuleType
from typing import Annotated

import typer

from streams.cli.app import app
from streams.cli.errors import ExitCode, fail
from streams.cli.options import writes_dir

DEVKAFKA = Path(__file__).resolve().parents[2] / "deploy" / "kafka" / "devkafka.py"
"""The development broker's module in the checkout, if the package runs from one."""

dev = typer.Typer(help="Development helpers.", no_args_is_help=True, rich_markup_mode=None)
app.add_typer(dev, name="dev")


def load_devkafka() -> ModuleType:
    """The checkout's ``deploy/kafka/devkafka.py``; a ValueError outside a checkout."""
    if not DEVKAFKA.is_file():
        raise ValueError(f"{DEVKAFKA}: not found; `spotsched dev kafka` runs from a source "
                         "checkout installed with `pip install -e .`")
    name = "devkafka"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, DEVKAFKA)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # before running it: its dataclasses look themselves up
        spec.loader.exec_module(module)
    return sys.modules[name]


@dev.command("kafka")
def dev_kafka(
    port: Annotated[int, typer.Option(help="Client port.")] = 9092,
    data_dir: Annotated[Path | None, writes_dir(
        "Keep the broker's data here (default: a temporary directory).")] = None,
) -> None:
    """Run a single-node Kafka (KRaft) on 127.0.0.1 until Ctrl-C."""
    try:
        devkafka = load_devkafka()
    except ValueError as exc:
        fail(exc, ExitCode.REJECTED)
    # Started with `&` from a script, the process inherits SIGINT ignored: `kill -INT` and
    # `kill %1` (SIGTERM, which serve handles) both stop it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        devkafka.serve(port, data_dir)
    except devkafka.DevKafkaError as exc:
        fail(exc, ExitCode.REJECTED)
