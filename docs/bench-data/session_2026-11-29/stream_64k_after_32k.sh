#!/usr/bin/env bash
# tsu-bench stream 32 KiB then 64 KiB in one job over ofi (tcp;ofi_rxm)
# across two namespaces: old library (A), new (B), and new with
# TSU_OFI_EAGER_MAX=16K (C: 32 KiB by rendezvous again), in turn per round.
#   stream_64k_after_32k.sh BUILD A_LIB_DIR B_LIB_DIR OUT ROUNDS
# OUT/rR_{A,B,C}_st.txt.  Needs root.
set -u
build=$(realpath "$1") la=$(realpath "$2") lb=$(realpath "$3") out=$4 rounds=${5:-6}
mkdir -p "$out"; out=$(realpath "$out")
source "$(dirname "$0")/../../../bench/net/veth_pair.sh"
a=tsy$$a b=tsy$$b
trap 'veth_pair_down $a $b' EXIT
veth_pair_up "$a" "$b" 10.84.0
export FI_TCP_IFACE=veth0
sleep 1
job() { local lib=$1; shift; ip netns exec "$a" env LD_LIBRARY_PATH="$lib" "$@" TSU_NET=ofi TSU_OFI_IFACE=veth0 \
    TSU_SEGMENT_SIZE=64M "$build/tools/tsurun/tsurun" -n 2 --hosts "$a,$b" --spawn "ip netns exec {host}" \
    --bootstrap-addr 10.84.0.1 --timeout 120 "$build/bench/tsu-bench" stream --min 32768 --max 65536 2>&1; }
for r in $(seq "$rounds"); do
  job "$la" X=1 >"$out/r${r}_A_st.txt"
  job "$lb" X=1 >"$out/r${r}_B_st.txt"
  job "$lb" TSU_OFI_EAGER_MAX=16K >"$out/r${r}_C_st.txt"
done
