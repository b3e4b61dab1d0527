#!/usr/bin/env bash
# Large-put bandwidth over ofi (tcp;ofi_rxm) across two namespaces, one
# library, native puts in one piece (A: TSU_OFI_RMA_PIECE=1G, as before) or
# in pieces (B: the setting's default or B_PIECE), interleaved.
#   ofi_piece_bw_ab.sh BUILD OUT ROUNDS
set -u
build=$(realpath "$1") out=$2 rounds=${3:-3}
mkdir -p "$out"; out=$(realpath "$out")
source "$(dirname "$0")/../../../bench/net/veth_pair.sh"
a=tsw$$a b=tsw$$b
cleanup() { veth_pair_down "$a" "$b"; }
trap cleanup EXIT
trap "exit 143" INT TERM
veth_pair_up "$a" "$b" 10.88.0
export FI_TCP_IFACE=veth0
sleep 1
job() {
  ip netns exec "$a" env TSU_NET=ofi TSU_OFI_IFACE=veth0 TSU_SEGMENT_SIZE=160M "$@" \
    "$build/tools/tsurun/tsurun" -n 2 --hosts "$a,$b" --spawn 'ip netns exec {host}' \
    --bootstrap-addr 10.88.0.1 --timeout 300 "$build/bench/net/tsu-bench-net" tsu --only ${ONLY:-bandwidth} \
    2>>"$out/stderr.txt"
}
: >"$out/ab.jsonl"
for r in $(seq 1 "$rounds"); do
  echo "# round $r load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/load.txt"
  order="A B"; ((r % 2 == 0)) && order="B A"
  for v in $order; do
    if [[ $v == A ]]; then job TSU_OFI_RMA_PIECE=1G; else job TSU_OFI_RMA_PIECE=${B_PIECE:-4M}; fi |
      grep '^{' | sed "s/^{/{\"v\":\"$v\",\"round\":$r,/" | tee -a "$out/ab.jsonl"
  done
done
