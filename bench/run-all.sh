#!/usr/bin/env bash
# Runs every tsu-bench measurement and the summary, in one command:
#   limits (no tsunagi), rma 8 B for 1/2/4 threads, rma size sweep (1 thread),
#   bw, copy (3 ranks), atomic -- each tsunagi part in both modes (TSU_BYPASS=1: intra-node bypass,
#   TSU_BYPASS=0: through the progress engine), as separate tsurun jobs because
#   tsu_init reads the mode from the environment.
#
#   bench/run-all.sh [--quick] [--pin] [--out FILE] [--build DIR] [--wait-idle]
#                    [--tsurun PATH] [--bench PATH] [--reps N] [--duration-ms D]
#
# --wait-idle: before each job wait (up to 60 s) for a second in which the CPUs
# were at least 90% idle -- on a shared machine other work skews every figure.
#
# All results go to one JSON lines file (default: tsu-bench-results.jsonl);
# the tables go to stdout.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build="$here/../build/release"
out=tsu-bench-results.jsonl
tsurun="" bench="" quick=0 wait_idle=0
common=()

while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1; common+=(--quick) ;;
    --pin) common+=(--pin) ;;
    --wait-idle) wait_idle=1 ;;
    --out) out=$2; shift ;;
    --build) build=$2; shift ;;
    --tsurun) tsurun=$2; shift ;;
    --bench) bench=$2; shift ;;
    --reps|--duration-ms) common+=("$1" "$2"); shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "run-all.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done

# The build tree first, then PATH (an installed tsunagi).
find_tool() {  # name, path in the build tree
  if [ -x "$build/$2" ]; then echo "$build/$2"; return; fi
  command -v "$1" || { echo "run-all.sh: cannot find $1 (use --$1 PATH or --build DIR)" >&2; exit 2; }
}
[ -n "$tsurun" ] || tsurun=$(find_tool tsurun tools/tsurun/tsurun)
[ -n "$bench" ] || bench=$(find_tool tsu-bench bench/tsu-bench)

if [ "$quick" = 1 ]; then
  timeout=60 sweep_sizes=64,4K
else
  timeout=600 sweep_sizes=1-4M
fi

cpu_idle_total() { awk '/^cpu /{t=0; for(i=2;i<=NF;i++) t+=$i; print $5+$6, t}' /proc/stat; }
wait_until_idle() {
  [ "$wait_idle" = 1 ] || return 0
  local i0 t0 i1 t1 try
  for try in $(seq 60); do
    read -r i0 t0 < <(cpu_idle_total); sleep 1; read -r i1 t1 < <(cpu_idle_total)
    if [ $(( (i1 - i0) * 100 )) -ge $(( (t1 - t0) * 90 )) ]; then return 0; fi
  done
  echo "run-all.sh: the machine stayed busy; measuring anyway" >&2
}

rm -f "$out"
run_job() {  # TSU_BYPASS value, tsu-bench arguments... (RANKS=n: job size, default 2)
  local bypass=$1; shift
  wait_until_idle
  # 160 MiB segments: bw needs 64 MiB per side, with room to spare.
  TSU_BYPASS=$bypass TSU_SEGMENT_SIZE=160M \
    "$tsurun" -n "${RANKS:-2}" --timeout "$timeout" "$bench" "$@" "${common[@]}" --json "$out"
}

wait_until_idle
"$bench" limits "${common[@]}" --json "$out"
for bypass in 1 0; do
  run_job "$bypass" rma --ops get,put,fadd --threads 1,2,4 --sizes 8
  run_job "$bypass" rma --ops put,get --threads 1 --sizes "$sweep_sizes"
  run_job "$bypass" bw
  RANKS=3 run_job "$bypass" copy
  run_job "$bypass" atomic
done
"$bench" summary "$out"
echo
echo "results: $out"
