#!/usr/bin/env bash
set -u
# 8 B put rate with 4 issuing threads over ofi between two namespaces,
# TSU_OFI_BULK=0 and 1 alternating per round (the one cell of the small-message
# A/B that read apart).   put_rate_4threads.sh OUT.jsonl ROUNDS  (root)
build=$(realpath build/release) out=$1 rounds=$2
source "$(dirname "$0")/../../../bench/net/veth_pair.sh"
a=tsr$$a b=tsr$$b
cleanup() { veth_pair_down "$a" "$b"; }
trap cleanup EXIT
veth_pair_up "$a" "$b" 10.93.0
export FI_TCP_IFACE=veth0
sleep 1
for r in $(seq 1 $rounds); do
  arms="0 1"; ((r % 2 == 0)) && arms="1 0"
  for arm in $arms; do
    ip netns exec "$a" env TSU_NET=ofi TSU_OFI_IFACE=veth0 TSU_OFI_BULK=$arm "$build/tools/tsurun/tsurun" -n 2 --hosts "$a,$b" \
      --spawn 'ip netns exec {host}' --bootstrap-addr 10.93.0.1 --timeout 300 \
      "$build/bench/net/tsu-bench-net" tsu --only rate 2>/dev/null | grep '"threads":4' | sed "s/^{/{\"round\":$r,\"bulk\":$arm,/" >> $out
  done
done
