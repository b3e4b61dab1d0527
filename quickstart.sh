#!/usr/bin/env bash
# Installs what tsunagi needs (Debian/Ubuntu packages), builds it, and runs the
# demo — a distributed hash table updated with remote atomics from 4 threads
# on each of 4 ranks — checking its own result.
set -euo pipefail
cd "$(dirname "$0")"
scripts/install-deps.sh
cmake --preset release
cmake --build --preset release
build/release/tools/tsurun/tsurun -n 4 --tag-output build/release/examples/dht_demo
