#!/usr/bin/env bash
# Interleaved A/B of two builds on the netns veth bench (run_netns_bench.sh):
# on a small, shared machine only runs taken alternately are comparable.
#   bench/net/ab_netns.sh A_BUILD_DIR B_BUILD_DIR ROUNDS OUT_DIR [LOSS_PCT]
# Each round: raw UDP throughput (no loss only; NORAW=1 skips it), then A and
# B (order alternating), tsunagi part limited by ONLY (default bigbw).  Every
# rank runs under rusage_wrap.py, so its CPU time is printed beside the rate
# (less noisy than the rate on a loaded host).  Prints the load per round.
# Environment: ONLY, PAT (grep -E of the tsu_put_bw lines to show), NORAW.
set -u
a=$1 b=$2 rounds=$3 out=$4 loss=${5:-0}
here=$(cd "$(dirname "$0")" && pwd)
only=${ONLY:-bigbw} pat=${PAT:-'"bytes":(2097152|16777216)'}
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
  echo "round $r: $(uptime | sed 's/.*load/load/')"
  if [[ $loss == 0 && -z ${NORAW:-} ]]; then
    SKIP_UCX=1 TSU_BENCH_ARGS="--only latency" "$here/run_netns_bench.sh" "$a" "$out/raw$r" |
      grep raw_udp_throughput | sed 's/^/  raw /'
  fi
  if (( r % 2 )); then order="A B"; else order="B A"; fi
  for w in $order; do
    d=$a; [[ $w == B ]] && d=$b
    SKIP_PEERS=1 TSU_BENCH_WRAP="$here/rusage_wrap.py" TSU_BENCH_ARGS="--only $only" \
      "$here/run_netns_bench.sh" "$d" "$out/$w$r" "$loss" | grep tsu_put_bw | grep -E "$pat" | sed "s/^/  $w /"
    grep '^CPU' "$out/$w$r/tsu_stats.txt" | sort | sed "s/^/  $w /" | paste -sd' '
  done
done
