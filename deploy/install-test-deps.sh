#!/usr/bin/env bash
# Idempotent: the project with its dev and ray extras, Kafka's jars, and Debian's prometheus
# (promtool).
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q --disable-pip-version-check -e '.[dev,ray]'
if [ -f deploy/kafka/install.sh ]; then
  bash deploy/kafka/install.sh
fi
# promtool and the Prometheus server for the alert tests, from Debian when missing (as root).
if ! command -v promtool >/dev/null && command -v apt-get >/dev/null && [ "$(id -u)" -eq 0 ]; then
  log="$(mktemp)"
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
         apt-get install -y -qq --no-install-recommends prometheus; } >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    exit 1
  fi
  rm -f "$log"
  # The tests start their own servers; the package's system service is not needed.
  if command -v systemctl >/dev/null; then
    systemctl disable --now prometheus >/dev/null 2>&1 || true
  fi
fi
