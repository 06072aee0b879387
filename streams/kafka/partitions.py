"""Which partition a key goes to: Kafka's default partitioner, so every client agrees."""

from __future__ import annotations

from functools import lru_cache

from aiokafka.partitioner import murmur2

KEYS_REMEMBERED = 1 << 16
"""Keys whose hash is kept (markets, recent jobs): murmur2 is computed in Python."""


def partition_for(key: str | bytes, partitions: int) -> int:
    """The partition of ``key`` among ``partitions`` (murmur2 of the key, as Kafka's Java
    clients and aiokafka compute it)."""
    return _hashed(key if isinstance(key, bytes) else key.encode()) % partitions


@lru_cache(maxsize=KEYS_REMEMBERED)
def _hashed(data: bytes) -> int:
    return murmur2(data) & 0x7FFFFFFF
