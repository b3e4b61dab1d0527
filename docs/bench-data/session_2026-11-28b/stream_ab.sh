#!/usr/bin/env bash
# Interleaved A/B of the stage writer's stores, same build: TSU_COLL_STAGE_STREAM
# 0 (plain), 1 (non-temporal), 2 (measured): ARMS, one 2-rank tsu-bench coll run at SIZE each
# (manual progress, --yield, ranks on CPUs 0 and 1, as bench/msg/run_coll.sh),
# with the cache-line round trip between the CPUs (tsu-bench limits) before
# and after every run, so runs can be binned by the host's near/far state.
#   [MPI=1] stream_ab.sh ROUNDS [SIZE] [RANKS]   (from the repository root; B = build dir)
set -u
ARMS=${ARMS:-0 2}  # TSU_COLL_STAGE_STREAM values, in turn (order reversed every other round)
rounds=${1:-10} size=${2:-1048576} ranks=${3:-2} B=${B:-build/release}
cpus=(); [ "$ranks" = 2 ] && cpus=(--cpus 0 1)
rt() { "$B/bench/tsu-bench" limits --sizes 8 --reps 3 --duration-ms 30 2>&1 |
  awk -F'|' '/round trip, 2 threads/ {split($3, v, " "); print v[1]}'; }
one() {
  local a b c
  a=$(rt)
  c=$(TSU_COLL_STAGE_STREAM=$1 TSU_PROGRESS=manual "$B/tools/tsurun/tsurun" -n "$ranks" "$B/bench/tsu-bench" coll \
    --min "$size" --max "$size" --yield "${cpus[@]}" 2>&1 | awk -v s="$size B" 'index($0, s) {printf "%s=%s ", $1, $(NF-1)}')
  b=$(rt)
  echo "$(date +%T) stream=$1 load $(cut -d' ' -f1 /proc/loadavg) rt $a $b $c"
}
# MPI=1: Open MPI's run too (all sizes, its cells at SIZE printed), after each pair.
mpi() {
  local a b c
  a=$(rt)
  c=$(mpirun --allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1 -np "$ranks" \
    "$B/bench/peers/tsu-peers-mpi" coll --max 1048576 2>&1 | awk -v s=" $size B" 'index($0, s) {printf "%s=%s ", $1, $(NF-3)}')
  b=$(rt)
  echo "$(date +%T) openmpi  load $(cut -d' ' -f1 /proc/loadavg) rt $a $b $c"
}
for ((i = 1; i <= rounds; i++)); do
  if ((i % 2)); then for a in $ARMS; do one "$a"; done
  else for a in $(echo $ARMS | tr ' ' '\n' | tac); do one "$a"; done; fi
  [ "${MPI:-0}" = 1 ] && mpi
done
