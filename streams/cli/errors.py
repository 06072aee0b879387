"""How the command line reports a user's mistake: one line naming the flag, never a
traceback."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

console = Console(width=None if sys.stdout.isatty() else 120)


def say_error(message: str) -> None:
    """Print ``error: message`` on one logical line."""
    console.print(f"[red]error:[/red] {escape(message)}", highlight=False, soft_wrap=True)


def fail(error: Exception, code: int = 2) -> NoReturn:
    """Print a one-line error and exit."""
    say_error(str(error))
    raise typer.Exit(code) from error


@contextmanager
def writing() -> Iterator[None]:
    """Where a command writes its files: a write that fails all the same (a disk filling up)
    ends in one line naming the file, exit status 1."""
    try:
        yield
    except OSError as exc:
        where = f"{exc.filename}: cannot write" if exc.filename else "cannot write the output"
        fail(ValueError(f"{where} ({exc.strerror or exc})"), 1)


def wrote(*paths: object) -> None:
    """Tell the user about each file a command wrote."""
    for path in paths:
        console.print(f"wrote {path}", highlight=False, soft_wrap=True)


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
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)
