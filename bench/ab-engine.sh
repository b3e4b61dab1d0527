#!/usr/bin/env bash
# Interleaved A/B of the engine path (TSU_BYPASS=0, issue 16 part 2): per
# round, the cache-line round trip (`tsu-bench limits`), then 8 B
# put/get/fetch-add latency and message rate at THREADS issuing threads with
# library A, then with library B (B's benchmark binaries for both).  Prints one
# line per op and build with the latency in round trips, so rounds taken under
# different load can be compared.
#   bench/ab-engine.sh A_BUILD_DIR B_BUILD_DIR [ROUNDS (3)] [THREADS (1,2,4)]
# A_BUILD_DIR needs src/libtsunagi.so* and tools/tsurun/tsurun only.
# A_ENV / B_ENV: settings for one side only (e.g. B_ENV=TSU_THREAD_RINGS=0 with
# the same build on both sides); PIN=1 pins the issuing threads (--pin), so the
# scheduler tends to leave the progress thread the other core.
set -euo pipefail
a=$1 b=$2 rounds=${3:-3} threads=${4:-1,2,4}
prio=${PRIO:-chrt -f 10}
for round in $(seq "$rounds"); do
  rt=$($prio "$b/bench/tsu-bench" limits --sizes 8 --reps 3 --duration-ms 30 2>&1 |
    awk -F'|' '/round trip, 2 threads/ {split($3, v, " "); print v[1]}')
  for v in A B; do
    d=$a e=${A_ENV:-}; [[ $v == B ]] && d=$b e=${B_ENV:-}
    # shellcheck disable=SC2086  # e: zero or more NAME=VALUE words
    env $e TSU_BYPASS=0 LD_LIBRARY_PATH=$d/src $prio "$d/tools/tsurun/tsurun" -n 2 "$b/bench/tsu-bench" rma \
      --ops put,get,fadd --threads "$threads" --sizes 8 --reps 3 --duration-ms 30 \
      ${PIN:+--pin} 2>&1 |
      awk -F'|' -v v="$v" -v r="$round" -v rt="$rt" '/^\| (put|get|fadd)/ {
        split($6, lat, " "); split($9, rate, " "); gsub(/ /, "", $2); gsub(/ /, "", $4)
        printf "%s r=%s %-4s thr=%s rt=%5.1f ns latency=%6.1f ns = %.2f rt  rate=%6.2f M/s\n",
          v, r, $2, $4, rt, lat[1], lat[1] / rt, rate[1] }'
  done
done
