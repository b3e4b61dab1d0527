#!/usr/bin/env bash
# Tagged pingpong 8-64 KiB over udp across two namespaces, the same library
# with TSU_UDP_EAGER_MAX=0 (A: the old limit, TSU_EAGER_MAX) and 32K (B: the
# new default), alternating per round, manual and thread progress.
#   udp_eager_ab.sh BUILD OUT_FILE ROUNDS
# One line per run: round, limit, progress mode, then size:median/mean/p99
# (half round trip, us, of tsu-bench pingpong).  Needs root.
set -u
build=$(realpath "$1") out=$2 rounds=${3:-6}
source "$(dirname "$0")/../../../bench/net/veth_pair.sh"
a=tsu$$a b=tsu$$b
trap 'veth_pair_down $a $b' EXIT
veth_pair_up "$a" "$b" 10.83.0
sleep 1
job() {  # job LIMIT MODE
  ip netns exec "$a" env TSU_UDP_EAGER_MAX="$1" TSU_PROGRESS="$2" TSU_SEGMENT_SIZE=64M \
    "$build/tools/tsurun/tsurun" -n 2 --hosts "$a,$b" --spawn 'ip netns exec {host}' \
    --bootstrap-addr 10.83.0.1 --timeout 120 "$build/bench/tsu-bench" pingpong --min 8192 \
    --max 65536 --iters 2000 2>/dev/null | awk '/^ +[0-9]/ {printf "%s:%s/%s/%s ", $1, $2, $8, $9}'
}
: >"$out"
for r in $(seq "$rounds"); do
  order="0 32K"; ((r % 2 == 0)) && order="32K 0"
  for e in $order; do
    for mode in manual thread; do echo "r$r eager=$e $mode $(job "$e" "$mode")" >>"$out"; done
  done
done
