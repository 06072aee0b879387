"""How the command line reports a user's mistake: one line on standard error naming the
flag, never a traceback, and the exit status that says what kind of failure it was."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from enum import IntEnum
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

console = Console(width=None if sys.stdout.isatty() else 120)
"""Standard output: what a command was asked for."""
diagnostics = Console(stderr=True, width=None if sys.stderr.isatty() else 120)
"""Standard error: errors, and what a command says about its own work."""


class ExitCode(IntEnum):
    """The exit status of every command (README, "Exit status")."""

    OK = 0
    REJECTED = 1
    """The service refused (a job rejected), or the work itself failed (a file not written)."""
    BAD_INPUT = 2
    """A flag, a file or a setting is not what was expected."""
    NO_BROKER = 3
    """The broker cannot be reached or refuses the connection."""


def exit_code(error: Exception) -> ExitCode:
    """The exit status of a command that ends in ``error``."""
    from aiokafka.errors import KafkaError

    from streams.kafka.connect import BrokerError

    broker = isinstance(error, BrokerError | KafkaError)
    return ExitCode.NO_BROKER if broker else ExitCode.BAD_INPUT


def say_error(message: str) -> None:
    """Print ``error: message`` on one logical line of standard error."""
    diagnostics.print(f"[red]error:[/red] {escape(message)}", highlight=False, soft_wrap=True)


def fail(error: Exception, code: ExitCode | None = None) -> NoReturn:
    """Print a one-line error and exit with ``code``, by default :func:`exit_code`'s."""
    say_error(str(error))
    raise typer.Exit(exit_code(error) if code is None else code) from error


@contextmanager
def writing() -> Iterator[None]:
    """Where a command writes its files: a write that fails all the same (a disk filling up)
    ends in one line naming the file, exit status 1."""
    try:
        yield
    except OSError as exc:
        where = f"{exc.filename}: cannot write" if exc.filename else "cannot write the output"
        fail(ValueError(f"{where} ({exc.strerror or exc})"), ExitCode.REJECTED)


def wrote(*paths: object) -> None:
    """Tell the user, on standard error, about each file a command wrote."""
    for path in paths:
        diagnostics.print(f"wrote {path}", highlight=False, soft_wrap=True)


class OneLineErrors(TyperGroup):
    """The command group whose usage errors (unknown option, bad value, failed check) print
    as ``error: ...`` on one line, exit status 2, instead of a boxed usage panel."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             windows_expand_args: bool = True, **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, windows_expand_args,
                                **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, windows_expand_args,
                                **extra)
        except typer.TyperException as exc:
            if type(exc).__name__ != "NoArgsIsHelpError":  # whose help is already printed
                say_error(exc.format_message())
            sys.exit(exc.exit_code)
        except typer.Abort:
            say_error("aborted")
            sys.exit(ExitCode.REJECTED)
        sys.exit(code if isinstance(code, int) else 0)
