#!/usr/bin/env bash
# Tagged pingpong 8-256 KiB over ofi (tcp;ofi_rxm, manual progress) across
# two namespaces with rxm's eager limit at its default (0 here) and raised
# to 32832, 65600 and 131200 B, tsunagi's eager limit 56 B below each; then
# fi_pingpong tagged at rxm's default, 16-128 KiB.  One library (BUILD's).
#   rxm_eager_limit_sweep.sh BUILD OUT ROUNDS
# OUT/rR_<limit>.txt (tsu-bench pingpong), OUT/rR_fi.txt.  Needs root.
set -u
build=$(realpath "$1") out=$2 rounds=${3:-3}
mkdir -p "$out"
source "$(dirname "$0")/../../../bench/net/veth_pair.sh"
a=tsw$$a b=tsw$$b
trap 'veth_pair_down $a $b' EXIT
veth_pair_up "$a" "$b" 10.86.0
export FI_TCP_IFACE=veth0
sleep 1
job() {
  ip netns exec "$a" env "$@" TSU_PROGRESS=manual TSU_NET=ofi TSU_OFI_IFACE=veth0 TSU_SEGMENT_SIZE=64M \
    "$build/tools/tsurun/tsurun" -n 2 --hosts "$a,$b" --spawn "ip netns exec {host}" \
    --bootstrap-addr 10.86.0.1 --timeout 120 "$build/bench/tsu-bench" pingpong --min 8192 \
    --max 262144 --iters 1000 2>&1
}
for r in $(seq "$rounds"); do
  for el in 0 32832 65600 131200; do
    if [[ $el == 0 ]]; then job TSU_OFI_EAGER_MAX=16328 FI_OFI_RXM_EAGER_LIMIT=16384 >"$out/r${r}_$el.txt"
    else job FI_OFI_RXM_EAGER_LIMIT=$el TSU_OFI_EAGER_MAX=$((el - 56)) >"$out/r${r}_$el.txt"; fi
  done
  for s in 16384 32768 65536 131072; do
    ip netns exec "$b" fi_pingpong -p "tcp;ofi_rxm" -e rdm -m tagged -d veth0 -I 1000 -S $s >/dev/null 2>&1 &
    p=$!; sleep 1.5
    timeout 60 ip netns exec "$a" fi_pingpong -p "tcp;ofi_rxm" -e rdm -m tagged -d veth0 -I 1000 \
      -S $s 10.86.0.2 >>"$out/r${r}_fi.txt" 2>&1
    kill $p 2>/dev/null; wait $p 2>/dev/null
  done
done
