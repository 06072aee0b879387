#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh machine, type-checks the packages (mypy as
# pyproject.toml configures it; a type error fails the script before any test runs), then runs
# the whole suite: every tier (`-m ""` lifts the developer loop's `not slow and not kafka`),
# every Hypothesis example (the `ci` profile) and the real 90 s broker outages. Most of the slow
# tests wait on brokers and worker processes, so four workers run the tests, handed one at a
# time, the slow ones first (tests/conftest.py orders them); the workers share one broker. The
# 25 slowest tests are listed at the end. Arguments go to pytest (e.g. `-n 2`, `-x`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/install-test-deps.sh
python -m mypy
python -m pytest -q -m "" --hypothesis-profile=ci --outage-seconds=90 \
  -n 4 --dist load --maxschedchunk 1 --durations=25 "$@"
