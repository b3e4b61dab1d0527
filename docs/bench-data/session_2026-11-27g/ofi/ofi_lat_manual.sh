#!/usr/bin/env bash
# 8 B put/get/fetch-add latency over tcp;ofi_rxm between two namespaces on one
# veth pair: the raw fi_write/fi_read/fi_fetch_atomic pingpong (both sides
# poll their queues), tsunagi ofi with progress threads (the requester waits
# in tsu_quiet, the target's progress thread sleeps on the queue's descriptor
# when idle), and tsunagi ofi in manual progress (both sides poll: the
# requester in tsu_progress, the target in its barrier's progress loop),
# interleaved per round; manual_quiet: manual progress, the requester waiting
# in tsu_quiet.  With OLD_LIB set (a build's lib dirs, colon-separated), each
# tsunagi mode also runs with those libraries (LD_LIBRARY_PATH), interleaved.
#   [OLD_LIB=...] [NET=ofi|udp] ofi_lat_manual.sh BUILD_DIR OUT_DIR ROUNDS      (root)
set -u
build=$(realpath "$1") out=$2 rounds=${3:-3}
mkdir -p "$out"; out=$(realpath "$out")
source "$(dirname "$0")/../../../../bench/net/veth_pair.sh"
a=tso$$a b=tso$$b
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; veth_pair_down "$a" "$b"; }
trap cleanup EXIT
trap "exit 143" INT TERM
veth_pair_up "$a" "$b" 10.97.0
export FI_TCP_IFACE=veth0
prov="tcp;ofi_rxm"
res=$out/results.jsonl
for r in $(seq 1 "$rounds"); do
  echo "{\"round\":$r,\"load\":\"$(cut -d' ' -f1-3 /proc/loadavg)\"}" >>"$res"
  ip netns exec "$b" "$build/bench/peers/fi-rma-pingpong" -s -a 10.97.0.2 -P "$prov" -i veth0 & pids+=($!)
  sleep 1.5
  timeout 300 ip netns exec "$a" "$build/bench/peers/fi-rma-pingpong" -c 10.97.0.2 -P "$prov" -i veth0 -n 5000 |
    sed "s/^{/{\"round\":$r,\"who\":\"raw\",/" >>"$res"
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; pids=()
  for lib in new ${OLD_LIB:+old}; do
    libpath=; [[ $lib == old ]] && libpath=$OLD_LIB
    for mode in thread manual manual_quiet; do
      wait=quiet; pm=$mode
      [[ $mode == manual ]] && wait=yield
      [[ $mode == manual_quiet ]] && pm=manual
      ip netns exec "$a" env ${libpath:+LD_LIBRARY_PATH=$libpath} TSU_NET=${NET:-ofi} TSU_OFI_IFACE=veth0 \
        TSU_PROGRESS=$pm "$build/tools/tsurun/tsurun" -n 2 --hosts "$a,$b" \
        --spawn 'ip netns exec {host}' --bootstrap-addr 10.97.0.1 --timeout 300 \
        "$build/bench/net/tsu-bench-net" tsu --only latency --wait $wait 2>>"$out/stderr.txt" |
        sed "s/^{/{\"round\":$r,\"lib\":\"$lib\",\"who\":\"tsu_$mode\",/" >>"$res"
    done
  done
done
grep -v '"bw' "$res"
