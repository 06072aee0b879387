"""Reading a topic with Kafka's own console consumer, and checking what it shows against the
published JSON Schemas with an independent validator: what a team without spotsched's code
sees of the messages."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass

import jsonschema

from deploy.kafka.devkafka import fetch_jars, kafka_home
from streams.contract.schema import json_schemas

CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"
CLOUD_EVENT_HEADERS = ("ce_specversion", "ce_id", "ce_source", "ce_type", "ce_time",
                       "ce_subject", "content-type")


@dataclass(frozen=True)
class ConsoleRecord:
    headers: dict[str, str]
    key: str
    value: dict


def console_records(bootstrap: str, topic: str, count: int) -> list[ConsoleRecord]:
    """The first ``count`` records of ``topic`` as the console consumer prints them (headers
    ``name:value`` joined by ``|``, then the key and the value, tab-separated)."""
    java = shutil.which("java")
    assert java is not None, "java is needed for Kafka's console consumer"
    done = subprocess.run(
        [java, "-cp", f"{fetch_jars(kafka_home())}/*", CONSOLE_CONSUMER,
         "--bootstrap-server", bootstrap, "--topic", topic, "--from-beginning",
         "--max-messages", str(count), "--timeout-ms", "60000",
         "--property", "print.key=true", "--property", "print.headers=true",
         "--property", "headers.separator=|"],
        capture_output=True, text=True, timeout=120, check=False)
    lines = [line for line in done.stdout.splitlines() if line]
    assert len(lines) == count, (f"console consumer read {len(lines)} of {count} records of "
                                 f"{topic}: {done.stderr[-2000:]}")
    records = []
    for line in lines:
        headers, key, value = line.split("\t", 2)
        records.append(ConsoleRecord(dict(h.split(":", 1) for h in headers.split("|")), key,
                                     json.loads(value)))
    return records


def check_against_the_contract(records: list[ConsoleRecord]) -> None:
    """Every value valid under the union schema; CloudEvents headers that match it; the key
    is the event's key."""
    union = jsonschema.Draft202012Validator(json_schemas()["event"])
    for record in records:
        union.validate(record.value)
        assert tuple(record.headers) == CLOUD_EVENT_HEADERS, record.headers
        assert record.headers["ce_specversion"] == "1.0"
        assert record.headers["ce_type"] == f"spotsched.{record.value['type']}"
        assert record.headers["ce_id"] == record.value["idempotency_key"]
        assert record.headers["ce_subject"] == record.key == record.value["key"]
        assert record.headers["content-type"] == "application/json"
