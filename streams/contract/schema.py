"""JSON Schemas of the event contract: one per event type and one for the ``Event`` union.

The union is ``oneOf`` the event schemas, each fixing ``type`` with ``const``, which any JSON
Schema 2020-12 validator reads (OpenAPI's ``discriminator`` keyword is left out).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from streams.contract.events import EVENT_TYPES, SCHEMA_VERSION, Event

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def json_schemas() -> dict[str, dict[str, Any]]:
    """Schemas by name: each event ``type`` tag, and ``event`` for any event."""
    schemas = {name: cls.model_json_schema() for name, cls in EVENT_TYPES.items()}
    union = TypeAdapter(Event).json_schema()
    union.pop("discriminator", None)
    schemas["event"] = {
        "title": "Event",
        "description": f"Any spotsched event of schema version {SCHEMA_VERSION}; 'type' selects "
        "the event class (docs/contract.md).",
        **union,
    }
    return {name: {"$schema": JSON_SCHEMA_DIALECT, **schema} for name, schema in schemas.items()}


def write_schemas(directory: Path) -> list[Path]:
    """Write ``<name>.schema.json`` for every schema into ``directory``; return the paths."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, schema in sorted(json_schemas().items()):
        path = directory / f"{name}.schema.json"
        path.write_text(json.dumps(schema, sort_keys=True, indent=2) + "\n", encoding="utf-8")
        paths.append(path)
    return paths
