#!/usr/bin/env bash
# Idempotent: check for Java and Maven, then fetch the Kafka jars into the cache
# ($SPOTSCHED_KAFKA_HOME, by default ~/.cache/spotsched/kafka-<version>).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
for tool in java mvn; do
    if ! command -v "$tool" >/dev/null; then
        echo "error: '$tool' not found; install a JDK 17+ and Maven 3.6+" >&2
        exit 1
    fi
done
python "$root/deploy/kafka/devkafka.py" --fetch-only
