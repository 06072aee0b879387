#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh machine, then runs the whole suite.
# Real Kafka (from Maven Central) and Prometheus are started by the tests themselves.
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/install-test-deps.sh
python -m pytest -q "$@"
