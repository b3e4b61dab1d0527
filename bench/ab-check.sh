#!/usr/bin/env bash
# Interleaved A/B spot check for a loaded machine: ROUNDS (3) rounds of
# {limits, tsunagi bypass rma 8 B/4 KiB/1 MiB, tsunagi bypass atomic alone,
# mpi-rma-bench --quick, ucx_perftest --quick}, back to back, so tsunagi and
# the peers see the same load; 5 reps x 20 ms per point.  Compare rounds, not
# runs minutes apart.
#   bench/ab-check.sh [BUILD_DIR (build/release)] [OUT.jsonl] [ROUNDS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
B=${1:-$here/../build/release}
out=${2:-ab-check.jsonl}
rounds=${3:-3}
rm -f "$out"
r=(--reps 5 --duration-ms 20 --json "$out")
echo "before: $(uptime)"
for round in $(seq "$rounds"); do
  "$B/bench/tsu-bench" limits --sizes 8,4K,1M "${r[@]}" > /dev/null
  TSU_BYPASS=1 "$B/tools/tsurun/tsurun" -n 2 "$B/bench/tsu-bench" rma --ops get,put,fadd \
    --threads 1 --sizes 8,4K,1M "${r[@]}" > /dev/null
  TSU_BYPASS=1 "$B/tools/tsurun/tsurun" -n 2 "$B/bench/tsu-bench" atomic --interference none \
    "${r[@]}" > /dev/null
  if [ -x "$B/bench/mpi-rma-bench" ]; then
    OMPI_MCA_osc=sm mpirun --allow-run-as-root --oversubscribe -n 2 "$B/bench/mpi-rma-bench" \
      --quick "${r[@]}" > /dev/null
  fi
  if command -v ucx_perftest > /dev/null; then
    python3 "$here/peers/ucx_perftest_json.py" --json "$out" --quick --reps 1 > /dev/null 2>&1
  fi
  echo "round $round done: $(uptime)"
done
echo "after: $(uptime)"
