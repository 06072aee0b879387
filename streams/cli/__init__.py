"""The ``spotsched`` command line: thin commands that parse, build inputs and call one function.

One module per command group; importing it registers its commands on :data:`app`."""

from importlib import import_module

from streams.cli.app import app

COMMAND_MODULES = ("replay", "schema", "forecast", "markets", "worker", "jobs", "service",
                   "decisions", "connectors", "evaluate", "feed", "dev")
"""The command modules, in the order ``spotsched --help`` lists their commands."""

for _module in COMMAND_MODULES:
    import_module(f"{__name__}.{_module}")

__all__ = ["app", "main"]


def main() -> None:
    app()
