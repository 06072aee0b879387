"""CloudEvents (1.0) Kafka headers, binary mode: the message value is the event's JSON and its
attributes travel as headers, so standard tooling can route and trace every message the
service writes without reading it."""

from __future__ import annotations

from streams.contract.events import Envelope
from streams.contract.fields import iso

SPEC_VERSION = "1.0"
CONTENT_TYPE = "application/json"
TYPE_PREFIX = "spotsched."
"""``ce_type`` is this prefix and the event's ``type``, e.g. ``spotsched.price_tick``."""

Headers = list[tuple[str, bytes]]


def cloud_event_headers(event: Envelope, source: str) -> Headers:
    """The headers of ``event`` written by ``source`` (a URI reference naming the writer, e.g.
    ``/spotsched/scheduler``): ``ce_id`` is the idempotency key, ``ce_time`` the event time,
    ``ce_subject`` the message key."""
    return [
        ("ce_specversion", SPEC_VERSION.encode()),
        ("ce_id", event.idempotency_key.encode()),
        ("ce_source", source.encode()),
        ("ce_type", (TYPE_PREFIX + event.type).encode()),
        ("ce_time", iso(event.event_time).encode()),
        ("ce_subject", event.key.encode()),
        ("content-type", CONTENT_TYPE.encode()),
    ]


def source(component: str) -> str:
    """The ``ce_source`` of a spotsched component, e.g. ``source("scheduler")``."""
    return f"/spotsched/{component}"
