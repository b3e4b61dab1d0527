#!/usr/bin/env bash
# 8 B fetch-add latency over ofi (tcp;ofi_rxm) between two network
# namespaces on one veth pair: to a segment with CPU atomics and to one with
# NIC atomics (TSU_SEG_NIC_ATOMICS), interleaved in blocks of 100 in one
# run (tsu-bench-net tsu --only fadd_sites).  Rank 0 in the first namespace
# measures; rank 1 in the second owns the words.
#
#   bench/net/ofi_fadd_sites.sh BUILD_DIR [--quick] [--wait quiet]
# Prints one JSON line per site (median, mean, p99 in us).  Needs root;
# removes its namespaces on exit.
set -u
build=$(realpath "$1"); shift
source "$(dirname "$0")/veth_pair.sh"
a=tfs$$a b=tfs$$b
trap 'veth_pair_down "$a" "$b"' EXIT
trap "exit 143" INT TERM
veth_pair_up "$a" "$b" 10.97.0
sleep 2  # libfabric lists veth0 in the second namespace only once the link is up
ip netns exec "$a" env TSU_NET=ofi TSU_OFI_PROVIDER='tcp;ofi_rxm' TSU_OFI_IFACE=veth0 \
  FI_TCP_IFACE=veth0 TSU_SEGMENT_SIZE=16M \
  "$build/tools/tsurun/tsurun" -n 2 --hosts "$a,$b" --spawn 'ip netns exec {host}' \
  --bootstrap-addr 10.97.0.1 --timeout 300 "$build/bench/net/tsu-bench-net" tsu --only "${ONLY:-fadd_sites}" "$@"
