"""The options several commands share, declared once, and the checks that run on a flag
while the command line is parsed, before any work starts."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

Number = TypeVar("Number", int, float)


class FlagError(typer.BadParameter):
    """A flag's value failed a check; the message names the flag and the value."""

    def format_message(self) -> str:
        return self.message


def flag_error(param: typer.CallbackParam, value: object, expected: str) -> FlagError:
    """``--flag value: expected ...``."""
    flag = max(param.opts, key=len) if param.opts else str(param.name)
    return FlagError(f"{flag} {value}: expected {expected}")


def at_least(low: Number, expected: str, high: Number | None = None) -> Callable[..., Any]:
    """A check that a number (or each of a list of them) is at least ``low`` (and at most
    ``high``), saying ``expected`` otherwise."""

    def check(param: typer.CallbackParam, value: Any) -> Any:
        for number in value if isinstance(value, list) else [value]:
            if number is not None and not (low <= number and (high is None or number <= high)):
                raise flag_error(param, number, expected)
        return value

    return check


def one_of(choices: Callable[[], Sequence[str]]) -> Callable[..., Any]:
    """A check that a value (or each of a list of them) is one of ``choices()``, read only
    when a value other than the default is given (so that the declaring module loads only
    then)."""

    def check(param: typer.CallbackParam, value: Any) -> Any:
        if value is None or value == param.default:
            return value
        from solver.suggest import did_you_mean

        allowed = choices()
        for item in value if isinstance(value, list) else [value]:
            if item not in allowed:
                raise flag_error(param, item, f"one of {', '.join(allowed)}"
                                 f"{did_you_mean(item, allowed)}")
        return value

    return check


def check_policies(specs: list[str] | None) -> list[str] | None:
    """The check of ``--policy`` specs: known names and parameters."""
    if not specs:
        return specs
    from solver.policies import check_spec  # heavy: only when a spec is given

    for spec in specs:
        try:
            check_spec(spec)
        except ValueError as exc:
            raise FlagError(f"--policy {spec}: {exc}") from None
    return specs


def unwritable(folder: Path) -> str | None:
    """What a folder to write files in should be, when ``folder`` is not that (it is created
    when missing, and a file is created in it: permissions do not tell for ``/proc`` or a
    read-only mount); ``None`` when it is."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"a folder that exists or can be created ({exc.strerror})"
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        return f"a folder this user may write in ({exc.strerror})"
    return None


def _output(param: typer.CallbackParam, path: Path | None, folder: Path) -> Path | None:
    """``path`` once files can be written in ``folder``; a usage error otherwise."""
    expected = unwritable(folder)
    if expected is not None:
        raise flag_error(param, path, expected if folder == path else
                         f"a file in {expected.replace(' (', f' ({folder}: ', 1)}")
    return path


def output_file(param: typer.CallbackParam, path: Path | None) -> Path | None:
    """The check of a file a command writes: a regular file or none yet (not a folder or a
    device), its folder created."""
    if path is None:
        return None
    if path.is_dir():
        raise flag_error(param, path, "a file name, not a folder")
    if path.exists() and not path.is_file():
        raise flag_error(param, path, "a regular file, not a device or a pipe")
    if path.exists() and not os.access(path, os.W_OK):
        raise flag_error(param, path, "a file this user may write")
    return _output(param, path, path.parent)


def output_dir(param: typer.CallbackParam, path: Path | None) -> Path | None:
    """The check of a folder a command writes files in: created when missing."""
    if path is None:
        return None
    if path.exists() and not path.is_dir():
        raise flag_error(param, path, "a folder, not a file" if path.is_file() else
                         "a folder, not a device or a pipe")
    return _output(param, path, path)


def available_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
        os.cpu_count() or 1)


def writes_file(help_text: str, *names: str) -> Any:
    """An option naming a file the command writes."""
    return typer.Option(*names, help=help_text, callback=output_file, metavar="<file>")


def writes_dir(help_text: str, *names: str) -> Any:
    """An option naming a folder the command writes files in."""
    return typer.Option(*names, help=help_text, callback=output_dir, metavar="<dir>")


non_negative = at_least(0, "a non-negative integer")
positive_count = at_least(1, "a whole number >= 1")

Traces = Annotated[list[Path], typer.Option(
    "--trace", metavar="<file>", help="Trace file (formats in docs/traces.md); repeat for more.",
    exists=True, dir_okay=False)]
TracesOrSynthetic = Annotated[list[Path] | None, typer.Option(
    "--trace", metavar="<file>", help="Trace file (formats in docs/traces.md); repeat for more. "
    "Default: the synthetic market (--seed, --synthetic-markets, --days).", exists=True,
    dir_okay=False)]
Seed = Annotated[int, typer.Option(
    help="Seed of the synthetic market and the workload.", callback=non_negative)]
SyntheticMarkets = Annotated[int, typer.Option(
    "--synthetic-markets", help="Markets of the synthetic market.",
    callback=at_least(1, "between 1 and 8", 8))]
SyntheticDays = Annotated[float, typer.Option(
    help="Length of the synthetic market in days.", callback=at_least(1.0, "at least 1 day"))]
SlotSeconds = Annotated[float, typer.Option(
    help="Slot length Δ in seconds.", callback=at_least(1.0, "at least 1 second"))]
SlotSecondsSetting = Annotated[float | None, typer.Option(
    help="Slot length Δ in seconds (env SPOTSCHED_SLOT_SECONDS).",
    callback=at_least(1.0, "at least 1 second"))]
MarketPartitions = Annotated[int | None, typer.Option(
    help="Partitions of market ticks (env SPOTSCHED_MARKET_PARTITIONS).",
    callback=positive_count)]
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
DEFAULT_LOG_LEVEL = "INFO"
"""The log level of every long-running command (worker, connector, feed)."""


def log_level(param: typer.CallbackParam, value: str) -> str:
    """The check of ``--log-level``: a level name, in any case."""
    if value.upper() not in LOG_LEVELS:
        raise flag_error(param, value, f"one of {', '.join(LOG_LEVELS)}")
    return value.upper()


LogLevel = Annotated[str, typer.Option(
    metavar="<level>", help=f"Log level: {', '.join(LOG_LEVELS)}; logs go to standard error.",
    callback=log_level)]
def check_on_demand_prices(values: list[str] | None) -> list[str] | None:
    """The check of ``--on-demand-price``: each ``TYPE=USD`` with a positive price, whatever
    market the command runs on."""
    if not values:
        return values
    from solver.traces.price_table import parse_flag

    for value in values:
        try:
            parse_flag(value)
        except ValueError as exc:
            raise FlagError(str(exc)) from None
    return values


OnDemandPrice = Annotated[list[str] | None, typer.Option(
    "--on-demand-price", metavar="<type=usd>", callback=check_on_demand_prices,
    help="On-demand price of an instance type in USD per hour; repeatable. Wins over --prices "
    "and the built-in table.")]
MigrationTableFile = Annotated[Path | None, typer.Option(
    "--migration-table", metavar="<file>", exists=True, dir_okay=False,
    help="JSON or CSV migration table laid over the built-in one: bandwidths, egress USD per "
    "GB, continents (docs/solver.md).")]
PricesFile = Annotated[Path | None, typer.Option(
    "--prices", exists=True, dir_okay=False,
    help="JSON or CSV table of instance type to on-demand USD per hour (docs/traces.md).")]
MarketsFile = Annotated[Path | None, typer.Option(
    "--markets-file", help="Market catalogue JSON, as `spotsched markets` prints it (env "
    "SPOTSCHED_MARKETS_FILE).", exists=True, dir_okay=False)]
Ec2Endpoint = Annotated[str | None, typer.Option(
    "--endpoint-url", help="aws: EC2 endpoint, e.g. a local moto server.")]
Broker = Annotated[str | None, typer.Option(
    "--bootstrap-servers", metavar="<host:port>",
    help="Kafka host:port[,host:port] (env SPOTSCHED_BOOTSTRAP_SERVERS).")]
MetricsPort = Annotated[int | None, typer.Option(
    help="Port of Prometheus /metrics; 0 = off (env SPOTSCHED_METRICS_PORT).")]
MetricsHost = Annotated[str | None, typer.Option(
    help="Address /metrics binds to (env SPOTSCHED_METRICS_HOST; default 127.0.0.1, "
    "0.0.0.0 for every interface).")]
