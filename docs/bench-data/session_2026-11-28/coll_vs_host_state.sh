#!/usr/bin/env bash
# Samples, every PERIOD s for N samples: the cache-line round trip between
# the two CPUs (tsu-bench limits) before and after one 2-rank tsu-bench coll
# run at 1 MiB (manual progress, --yield, ranks on CPUs 0 and 1, as
# bench/msg/run_coll.sh runs them): does the staged path's slow mode go with
# the host's far state?
#   coll_vs_host_state.sh N PERIOD   (from the repository root; B = build dir)
set -u
n=${1:-30} period=${2:-20} B=${B:-build/release}
rt() { "$B/bench/tsu-bench" limits --sizes 8 --reps 3 --duration-ms 30 2>&1 |
  awk -F'|' '/round trip, 2 threads/ {split($3, v, " "); print v[1]}'; }
for ((i = 1; i <= n; i++)); do
  a=$(rt)
  c=$(TSU_PROGRESS=manual "$B/tools/tsurun/tsurun" -n 2 "$B/bench/tsu-bench" coll --min 1048576 \
    --max 1048576 --yield --cpus 0 1 2>&1 | awk '/1048576 B/ {printf "%s=%s ", $1, $(NF-1)}')
  b=$(rt)
  echo "$(date +%T) load $(cut -d' ' -f1 /proc/loadavg) rt_before $a rt_after $b $c"
  sleep "$period"
done
