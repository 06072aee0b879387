"""Where decisions come from: the Kafka cluster's id and the decisions topic's id.

Both change when the broker's data is new (a fresh development broker) or the topic is
deleted and created again under the same name; a record of applied decisions is only valid on
the cluster and topic it was made on. The cluster id is in every metadata answer since
version 2; the topic id needs metadata version 10 (Kafka 2.8), which aiokafka does not speak,
so this module declares that one request. A broker too old for it leaves the id unknown.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from io import BytesIO

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.protocol.abstract import AbstractType
from aiokafka.protocol.api import Request, RequestStruct, Response
from aiokafka.protocol.types import (
    Boolean,
    CompactArray,
    CompactString,
    Int16,
    Int32,
    Schema,
    TaggedFields,
)

from streams.kafka.connect import start_client
from streams.settings import Settings

UNKNOWN = "unknown"
"""The topic id of a broker older than Kafka 2.8."""


@dataclass(frozen=True, slots=True)
class Origin:
    """A topic of a cluster, by the ids the broker gave them."""

    cluster_id: str
    topic: str
    topic_id: str

    def __str__(self) -> str:
        return f"topic {self.topic} (id {self.topic_id}) of cluster {self.cluster_id}"


async def decisions_origin(settings: Settings) -> Origin:
    """The origin of the settings' decisions topic; a ``ValueError`` if it is not on the
    broker."""
    topic = settings.topics.decisions
    admin = await start_client(lambda: AIOKafkaAdminClient(**settings.kafka_options()),
                               settings, f"reading the id of {topic}")
    try:
        try:
            response = await admin._send_request(_TopicIdRequest(topic))
        except NotImplementedError:  # the broker answers no metadata version 10
            cluster = await admin.describe_cluster()
            return Origin(str(cluster["cluster_id"]), topic, UNKNOWN)
    finally:
        await admin.close()
    answer = response.to_object()
    (found,) = answer["topics"]
    if found["error_code"]:
        raise ValueError(f"topic {topic!r} is not on the broker at "
                         f"{settings.bootstrap_servers} (error {found['error_code']}): "
                         "expected the decisions topic")
    return Origin(str(answer["cluster_id"]), topic, str(uuid.UUID(bytes=found["topic_id"])))


class _Uuid(AbstractType[bytes]):
    """Kafka's UUID: 16 bytes as they are."""

    @classmethod
    def encode(cls, value: bytes) -> bytes:
        return value

    @classmethod
    def decode(cls, data: BytesIO) -> bytes:
        value = data.read(16)
        if len(value) != 16:
            raise ValueError("Buffer underrun decoding a UUID")
        return value


class _MetadataResponse_v10(Response):
    API_KEY = 3
    API_VERSION = 10
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        ("brokers", CompactArray(("node_id", Int32), ("host", CompactString("utf-8")),
                                 ("port", Int32), ("rack", CompactString("utf-8")),
                                 ("tags", TaggedFields))),
        ("cluster_id", CompactString("utf-8")),
        ("controller_id", Int32),
        ("topics", CompactArray(
            ("error_code", Int16), ("name", CompactString("utf-8")), ("topic_id", _Uuid),
            ("is_internal", Boolean),
            ("partitions", CompactArray(
                ("error_code", Int16), ("partition_index", Int32), ("leader_id", Int32),
                ("leader_epoch", Int32), ("replica_nodes", CompactArray(Int32)),
                ("isr_nodes", CompactArray(Int32)), ("offline_replicas", CompactArray(Int32)),
                ("tags", TaggedFields))),
            ("topic_authorized_operations", Int32),
            ("tags", TaggedFields))),
        ("cluster_authorized_operations", Int32),
        ("tags", TaggedFields),
    )


class _MetadataRequest_v10(RequestStruct):
    FLEXIBLE_VERSION = True
    API_KEY = 3
    API_VERSION = 10
    RESPONSE_TYPE = _MetadataResponse_v10
    SCHEMA = Schema(
        ("topics", CompactArray(("topic_id", _Uuid), ("name", CompactString("utf-8")),
                                ("tags", TaggedFields))),
        ("allow_auto_topic_creation", Boolean),
        ("include_cluster_authorized_operations", Boolean),
        ("include_topic_authorized_operations", Boolean),
        ("tags", TaggedFields),
    )


class _TopicIdRequest(Request[_MetadataRequest_v10]):
    """Metadata of one topic by name, with its id; never creates the topic."""

    API_KEY = 3

    def __init__(self, topic: str) -> None:
        self._topic = topic

    def build(self, request_struct_class: type[_MetadataRequest_v10]) -> _MetadataRequest_v10:
        return request_struct_class([(bytes(16), self._topic, {})], False, False, False, {})
