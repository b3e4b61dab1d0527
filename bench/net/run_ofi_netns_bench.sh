#!/usr/bin/env bash
# tsunagi over libfabric beside its peers and limits, in one run, across two
# network namespaces on one veth pair (10.98.0.1 <-> 10.98.0.2):
#   - tsunagi over ofi (tcp;ofi_rxm, pinned to veth0; with the default
#     TSU_OFI_WAIT=fd and, as "ofi_none", busy polling) and over its own udp:
#     tsu-bench-net tsu (8 B put/get/fetch-add latency, bandwidth 8 B..64 MiB,
#     put rate by threads), tsu-bench pingpong (tagged) and am;
#   - fi-rma-pingpong (bench/peers): raw fi_write/fi_read/fi_fetch_atomic
#     latency and fi_write bandwidth on the same provider (the RMA limit);
#   - fi_pingpong (libfabric-bin) on the same provider (the message limit),
#     msg and tagged, 8 B, 16, 32 and 64 KiB;
#   - UCX over tcp (ucx_perftest, UCX_TLS=tcp): put/get/fadd latency, AM and
#     tag latency (tag: 8 B, 16, 32 and 64 KiB), put bandwidth and rate;
#   - raw sockets: tsu-bench-net raw UDP pingpong and throughput.
#
#   bench/net/run_ofi_netns_bench.sh BUILD_DIR OUT_DIR [QUICK=0|1]
# Results: OUT_DIR/results.jsonl (JSON lines), OUT_DIR/*.txt (the tools' own
# output).  Needs root; removes its namespaces on exit whatever happens.
set -u
build=$(realpath "$1") out=$2 quick=${3:-0}
mkdir -p "$out"
out=$(realpath "$out")
source "$(dirname "$0")/veth_pair.sh"
a=tsf$$a b=tsf$$b
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  veth_pair_down "$a" "$b"
}
trap cleanup EXIT
trap "exit 143" INT TERM
veth_pair_up "$a" "$b" 10.98.0
export FI_TCP_IFACE=veth0 FI_UDP_IFACE=veth0 FI_SOCKETS_IFACE=veth0
prov="tcp;ofi_rxm"
res=$out/results.jsonl
: >"$res"
iters=5000; ((quick)) && iters=1000
# Runs "$@" in namespace b in the background (a server), then the client.
serve() { ip netns exec "$b" "$@" & pids+=($!); sleep 1.5; }
reap() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; pids=(); }

echo "== raw sockets (UDP pingpong, throughput)"
serve "$build/bench/net/tsu-bench-net" raw-server 9999
ip netns exec "$a" "$build/bench/net/tsu-bench-net" raw-client 10.98.0.2 9999 | tee -a "$res"
reap

echo "== fi-rma-pingpong ($prov): the RMA limit"
serve "$build/bench/peers/fi-rma-pingpong" -s -a 10.98.0.2 -P "$prov" -i veth0
timeout 300 ip netns exec "$a" "$build/bench/peers/fi-rma-pingpong" -c 10.98.0.2 -P "$prov" -i veth0 \
  -n "$iters" | tee -a "$res"
reap

echo "== fi_pingpong ($prov): the message limit"
if command -v fi_pingpong >/dev/null; then
  : >"$out/fi_pingpong.txt"
  for mode in msg tagged; do
    for size in 8 16384 32768 65536; do
      serve fi_pingpong -p "$prov" -e rdm -m "$mode" -d veth0 -I "$iters" -S $size
      echo "# fi_pingpong -p '$prov' -e rdm -m $mode -d veth0 -I $iters -S $size" >>"$out/fi_pingpong.txt"
      timeout 120 ip netns exec "$a" fi_pingpong -p "$prov" -e rdm -m "$mode" -d veth0 -I "$iters" \
        -S $size 10.98.0.2 >>"$out/fi_pingpong.txt" 2>&1
      reap
    done
  done
  cat "$out/fi_pingpong.txt"
else
  echo "fi_pingpong not installed (libfabric-bin)" | tee "$out/fi_pingpong.txt"
fi

# tsunagi: rank 0 in a, rank 1 in b, the bootstrap served from a.
tsu_job() {  # tsu_job NET LOG PROGRAM ARGS...   (NET: ofi, ofi_none or udp)
  local net=${1%_none} wait=fd log=$2
  [[ $1 == ofi_none ]] && wait=none  # busy polling (docs/ofi.md)
  shift 2
  ip netns exec "$a" env TSU_NET="$net" TSU_OFI_WAIT=$wait TSU_OFI_IFACE=veth0 TSU_SEGMENT_SIZE=160M \
    "$build/tools/tsurun/tsurun" -n 2 --hosts "$a,$b" --spawn 'ip netns exec {host}' \
    --bootstrap-addr 10.98.0.1 --timeout 300 "$@" 2>>"$out/$log"
}
for net in ofi ofi_none udp; do
  echo "== tsunagi over $net"
  : >"$out/tsu_$net.stderr"
  tsu_job "$net" "tsu_$net.stderr" "$build/bench/net/tsu-bench-net" tsu $( ((quick)) && echo --quick) |
    sed "s/^{/{\"net\":\"$net\",/" | tee -a "$res"
  tsu_job "$net" "tsu_$net.stderr" "$build/bench/net/tsu-bench-net" tsu --only latency --wait quiet |
    sed "s/^{/{\"net\":\"$net\",/" | tee -a "$res"
  # 8 B fetch-add to a CPU segment and to a NIC segment (TSU_SEG_NIC_ATOMICS),
  # interleaved in one run (ofi only: udp refuses NIC segments).
  [[ $net == ofi ]] && tsu_job "$net" "tsu_$net.stderr" "$build/bench/net/tsu-bench-net" tsu \
    --only fadd_sites $( ((quick)) && echo --quick) | sed "s/^{/{\"net\":\"$net\",/" | tee -a "$res"
  tsu_job "$net" "tsu_$net.stderr" "$build/bench/tsu-bench" pingpong --max 65536 |
    tee "$out/tsu_${net}_pingpong.txt"
  tsu_job "$net" "tsu_$net.stderr" "$build/bench/tsu-bench" am --threads 1 |
    tee "$out/tsu_${net}_am.txt"
done

echo "== UCX over tcp"
if command -v ucx_perftest >/dev/null; then
  : >"$out/ucx.txt"
  for t in "ucp_put_lat -s 8 -n $iters" "ucp_get -s 8 -n $iters" "ucp_fadd -s 8 -n $iters" \
           "ucp_am_lat -s 8 -n $iters" "tag_lat -s 8 -n $iters" "tag_lat -s 16384 -n $iters" \
           "tag_lat -s 32768 -n $iters" "tag_lat -s 65536 -n $iters" "ucp_put_bw -s 8 -n 100000" \
           "ucp_put_bw -s 65536 -n 10000" "ucp_put_bw -s 1048576 -n 1000" "ucp_put_bw -s 16777216 -n 64"; do
    serve env UCX_TLS=tcp,self UCX_NET_DEVICES=veth0 ucx_perftest -p 13337
    echo "== ucx_perftest -t $t" >>"$out/ucx.txt"
    timeout 120 ip netns exec "$a" env UCX_TLS=tcp,self UCX_NET_DEVICES=veth0 ucx_perftest 10.98.0.2 \
      -p 13337 -t $t >>"$out/ucx.txt" 2>&1
    reap
  done
  grep -E "^==|Final:" -A0 "$out/ucx.txt" | head -40
else
  echo "ucx_perftest not installed (ucx-utils)" | tee "$out/ucx.txt"
fi
echo "results in $out"
