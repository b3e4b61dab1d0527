#!/usr/bin/env bash
# Interleaved A/B of two libtsunagi builds over ofi (tcp;ofi_rxm) across two
# network namespaces on one veth pair (10.98.0.1 <-> 10.98.0.2), the setup of
# run_ofi_netns_bench.sh.  The benchmark binaries and tsurun are BUILD's; the
# library is taken from A_LIB_DIR or B_LIB_DIR (LD_LIBRARY_PATH), so only the
# library differs.  Each round runs A then B (B then A in even rounds):
#   tsu-bench-net tsu --only latency --wait quiet   (8 B put/get/fadd)
#   tsu-bench-net tsu --only rate --get-rate        (8 B put and get rate)
#   bench/net/ab_ofi_netns.sh BUILD A_LIB_DIR B_LIB_DIR ROUNDS OUT_DIR
# OUT_DIR/ab.jsonl: the benchmark's JSON lines with "v" (A|B) and "round";
# summarise with bench/net/ab_ofi_summary.py OUT_DIR/ab.jsonl.  Needs root.
# A_ENV / B_ENV (optional): settings for A's / B's runs only, e.g. one
# library A/B'd against itself with a feature off:
#   A_ENV="TSU_OFI_BUNDLE=0 TSU_OFI_RMA_MESSAGE_MAX=0" bench/net/ab_ofi_netns.sh \
#     build/release build/release/src build/release/src 3 out
set -u
build=$(realpath "$1") la=$(realpath "$2") lb=$(realpath "$3") rounds=$4 out=$5
mkdir -p "$out"
out=$(realpath "$out")
source "$(dirname "$0")/veth_pair.sh"
a=tsab$$a b=tsab$$b
cleanup() { veth_pair_down "$a" "$b"; }
trap cleanup EXIT
trap "exit 143" INT TERM
veth_pair_up "$a" "$b" 10.98.0
export FI_TCP_IFACE=veth0
sleep 1  # the veth pair comes up (a provider query right away can find no veth0)
res=$out/ab.jsonl
: >"$res"
job() {  # job LIB_DIR EXTRA_ENV ARGS...
  local lib=$1 extra=$2; shift 2
  # shellcheck disable=SC2086  # EXTRA_ENV is a list of NAME=VALUE words
  ip netns exec "$a" env LD_LIBRARY_PATH="$lib" TSU_NET=ofi TSU_OFI_IFACE=veth0 $extra \
    TSU_SEGMENT_SIZE=16M TSU_STATS=${TSU_STATS:-0} \
    "$build/tools/tsurun/tsurun" -n 2 --hosts "$a,$b" --spawn 'ip netns exec {host}' \
    --bootstrap-addr 10.98.0.1 --timeout 120 "$build/bench/net/tsu-bench-net" tsu "$@" \
    2>>"$out/stderr.txt"
}
for r in $(seq 1 "$rounds"); do
  echo "round $r: $(uptime | sed 's/.*load/load/')" | tee -a "$out/load.txt"
  if (( r % 2 )); then order="A B"; else order="B A"; fi
  for v in $order; do
    lib=$la extra=${A_ENV:-}
    [[ $v == B ]] && lib=$lb extra=${B_ENV:-}
    { job "$lib" "$extra" --only latency --wait quiet; job "$lib" "$extra" --only rate --get-rate; } |
      grep '^{' | sed "s/^{/{\"v\":\"$v\",\"round\":$r,/" | tee -a "$res"
  done
done
echo "results in $res"
