"""Which partition a key goes to: Kafka's default partitioner, so every client agrees."""

from __future__ import annotations

from aiokafka.partitioner import murmur2


def partition_for(key: str | bytes, partitions: int) -> int:
    """The partition of ``key`` among ``partitions`` (murmur2 of the key, as Kafka's Java
    clients and aiokafka compute it)."""
    data = key if isinstance(key, bytes) else key.encode()
    return (murmur2(data) & 0x7FFFFFFF) % partitions
