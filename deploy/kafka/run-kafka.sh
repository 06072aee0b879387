#!/usr/bin/env bash
# Run a single-node development Kafka broker until Ctrl-C.
# Options: --port PORT (default 9092), --data-dir DIR (keep data), --fetch-only.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
exec python "$root/deploy/kafka/devkafka.py" "$@"
