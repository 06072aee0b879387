"""The ``spotsched`` command group: its help, its ``--version`` and its one-line errors."""

from __future__ import annotations

from typing import Annotated

import typer

from streams.cli.errors import OneLineErrors, console

app = typer.Typer(
    cls=OneLineErrors,
    help="Deadline-aware scheduling of fine-tuning jobs on spot and on-demand instances.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,  # plain help: wrapped to the terminal, no type tags
)


def _print_version(value: bool) -> None:
    from importlib.metadata import version

    if value:
        console.print(f"spotsched {version('spotsched')}", highlight=False)
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option(
        "--version", is_eager=True, callback=_print_version,
        help="Print the installed version and exit.")] = False,
) -> None:
    """Deadline-aware scheduling of fine-tuning jobs on spot and on-demand instances."""
