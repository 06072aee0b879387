#!/usr/bin/env bash
# Idempotent: the project with its dev extra, Kafka's jars, and Debian's prometheus (promtool).
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q --disable-pip-version-check -e '.[dev]'
if [ -f deploy/kafka/install.sh ]; then
  bash deploy/kafka/install.sh
fi
