#!/usr/bin/env bash
# One tsu-bench-net run across two namespaces, stderr kept (TSU_STATS etc.).
# one_run.sh "ENV words" [bench args...]   (from the repository root; B=build dir)
set -u
cd "$(git rev-parse --show-toplevel)"
source bench/net/veth_pair.sh
e=$1; shift
na=tso$$a nb=tso$$b
trap 'veth_pair_down $na $nb' EXIT
veth_pair_up "$na" "$nb" 10.95.0; sleep 0.5
B=${B:-build/release}
nice -n -20 ip netns exec "$na" env TSU_SEGMENT_SIZE=16M TSU_OFI_IFACE=veth0 FI_TCP_IFACE=veth0 $e "$B/tools/tsurun/tsurun" -n 2 --hosts "$na,$nb" --spawn 'ip netns exec {host}' \
  --bootstrap-addr 10.95.0.1 --timeout 120 "$B/bench/net/tsu-bench-net" tsu "${@:---only latency --wait quiet}"
