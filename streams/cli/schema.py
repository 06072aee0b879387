"""``spotsched schema``: the JSON Schemas of the events on the wire."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from streams.cli.app import app
from streams.cli.errors import writing, wrote
from streams.cli.options import writes_dir


@app.command()
def schema(
    out: Annotated[Path, writes_dir("Folder for the JSON Schema files.")] = Path("schemas"),
) -> None:
    """Write the JSON Schemas of every event on the wire."""
    from streams.contract.schema import write_schemas

    with writing():
        wrote(*write_schemas(out))
