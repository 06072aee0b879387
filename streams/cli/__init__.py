"""The ``spotsched`` command line: thin commands that parse, build inputs and call one function.

One module per command group; importing it registers its commands on :data:`app`. Packages
that build on the stream add their command groups through the ``spotsched.commands`` entry
points (each a ``typer.Typer``, named by the entry point): the connectors and the live feeds
declare theirs beside their code, and the command line never imports them by name."""

from importlib import import_module
from importlib.metadata import entry_points

from streams.cli.app import app

COMMAND_MODULES = ("replay", "schema", "forecast", "markets", "worker", "jobs", "service",
                   "decisions", "evaluate", "dev")
"""The command modules, in the order ``spotsched --help`` lists their commands."""

COMMAND_GROUP_ENTRY_POINTS = "spotsched.commands"
"""The entry-point group of command groups declared outside this package."""

for _module in COMMAND_MODULES:
    import_module(f"{__name__}.{_module}")
for _plugin in sorted(entry_points(group=COMMAND_GROUP_ENTRY_POINTS), key=lambda e: e.name):
    app.add_typer(_plugin.load(), name=_plugin.name)

__all__ = ["app", "main"]


def main() -> None:
    app()
