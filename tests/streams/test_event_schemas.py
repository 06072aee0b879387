import json

import pytest
from hypothesis import given

from streams.contract import EVENT_TYPES, dump_event, parse_event
from streams.contract.schema import json_schemas, write_schemas
from tests.streams.strategies import events

jsonschema = pytest.importorskip("jsonschema")
VALIDATORS = {
    name: jsonschema.Draft202012Validator(schema) for name, schema in json_schemas().items()
}


def test_one_schema_per_event_type_and_one_for_the_union():
    schemas = json_schemas()
    assert set(schemas) == {*EVENT_TYPES, "event"}
    union = schemas["event"]
    assert "discriminator" not in json.dumps(union)  # plain JSON Schema: oneOf + const
    members = [union["$defs"][ref["$ref"].rsplit("/", 1)[-1]] for ref in union["oneOf"]]
    assert sorted(m["properties"]["type"]["const"] for m in members) == sorted(EVENT_TYPES)
    for name, schema in schemas.items():
        assert json.loads(json.dumps(schema)) == schema
        jsonschema.Draft202012Validator.check_schema(schema)
        if name != "event":
            assert schema["properties"]["type"]["const"] == name
            assert "type" in schema["required"]
            assert schema["additionalProperties"] is False


@given(events)
def test_dumped_events_satisfy_their_schemas(event):
    data = json.loads(dump_event(event))
    VALIDATORS[event.type].validate(data)
    VALIDATORS["event"].validate(data)


def test_schemas_reject_what_the_models_reject():
    bad = {"type": "price_tick", "event_time": 1e9, "market": "a/b", "spot_price": -1}
    errors = list(VALIDATORS["price_tick"].iter_errors(bad))
    assert {error.path[0] for error in errors} == {"market", "spot_price"}


def test_write_schemas_writes_sorted_indented_files(tmp_path):
    out = tmp_path / "schemas"
    paths = write_schemas(out)
    assert sorted(path.name for path in paths) == sorted(
        f"{name}.schema.json" for name in (*EVENT_TYPES, "event")
    )
    schemas = json_schemas()
    for path in paths:
        text = path.read_text(encoding="utf-8")
        schema = json.loads(text)
        assert schema == schemas[path.name.removesuffix(".schema.json")]
        assert text == json.dumps(schema, sort_keys=True, indent=2) + "\n"
    assert write_schemas(out) == paths


def _integers_as_floats(value):
    """The same JSON as a writer that prints every number as a float (``1`` → ``1.0``)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return float(value)
    if isinstance(value, dict):
        return {k: _integers_as_floats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integers_as_floats(v) for v in value]
    return value


@given(events)
def test_what_the_schema_accepts_with_float_integers_the_reader_accepts(event):
    data = _integers_as_floats(json.loads(dump_event(event)))
    VALIDATORS["event"].validate(data)  # 1.0 is an integer to JSON Schema
    assert parse_event(json.dumps(data).encode()) == event
