#!/usr/bin/env bash
# TSU_OFI_WAIT=fd (the default: the completion queue has a wait descriptor
# and an idle engine sleeps on it) against TSU_OFI_WAIT=none (no wait object,
# busy polling) over tcp;ofi_rxm between two namespaces, in manual and thread
# progress, interleaved per round (the order of the two alternates) with the
# limits and the peer in the same round: the raw fi_write / fi_read /
# fi_fetch_atomic pingpong (bench/peers, both sides spin), fi_pingpong
# (tagged and msg, 8 B) and UCX over tcp (put/get/fadd/AM/tag latency, 8 B).
#   ofi_wait_none.sh BUILD OUT ROUNDS          (root)
# OUT/results.jsonl (RMA latency), OUT/rR_*.txt (pingpong, AM, fi, UCX).
set -u
build=$(realpath "$1") out=$2 rounds=${3:-4}
mkdir -p "$out"; out=$(realpath "$out")
source "$(dirname "$0")/../../../bench/net/veth_pair.sh"
a=tsw$$a b=tsw$$b
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; veth_pair_down "$a" "$b"; }
trap cleanup EXIT
trap "exit 143" INT TERM
veth_pair_up "$a" "$b" 10.89.0
export FI_TCP_IFACE=veth0
sleep 1
prov="tcp;ofi_rxm"
res=$out/results.jsonl
serve() { ip netns exec "$b" "$@" >/dev/null 2>&1 & pids+=($!); sleep 1.5; }
reap() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; pids=(); }
tsu_job() {  # tsu_job WAIT PROGRESS PROGRAM ARGS...
  local wait=$1 progress=$2; shift 2
  ip netns exec "$a" env TSU_OFI_WAIT="$wait" TSU_PROGRESS="$progress" TSU_NET=ofi TSU_OFI_IFACE=veth0 \
    TSU_SEGMENT_SIZE=16M "$build/tools/tsurun/tsurun" -n 2 --hosts "$a,$b" --spawn 'ip netns exec {host}' \
    --bootstrap-addr 10.89.0.1 --timeout 120 "$@" 2>>"$out/stderr.txt"
}
for r in $(seq 1 "$rounds"); do
  echo "{\"round\":$r,\"load\":\"$(cut -d' ' -f1-3 /proc/loadavg)\"}" >>"$res"
  serve "$build/bench/peers/fi-rma-pingpong" -s -a 10.89.0.2 -P "$prov" -i veth0
  timeout 120 ip netns exec "$a" "$build/bench/peers/fi-rma-pingpong" -c 10.89.0.2 -P "$prov" -i veth0 \
    -n 5000 2>/dev/null | grep latency | sed "s/^{/{\"round\":$r,\"who\":\"raw\",/" >>"$res"
  reap
  order="fd none"; ((r % 2 == 0)) && order="none fd"
  for progress in manual thread; do
    for wait in $order; do
      tsu_job "$wait" "$progress" "$build/bench/net/tsu-bench-net" tsu --only latency --wait quiet |
        sed "s/^{/{\"round\":$r,\"who\":\"tsu_${progress}_$wait\",/" >>"$res"
      tsu_job "$wait" "$progress" "$build/bench/tsu-bench" pingpong --min 8 --max 8 --iters 5000 \
        >"$out/r${r}_${progress}_${wait}_pingpong.txt"
      tsu_job "$wait" "$progress" "$build/bench/tsu-bench" am --threads 1 >"$out/r${r}_${progress}_${wait}_am.txt"
    done
  done
  : >"$out/r${r}_fi.txt"
  for mode in tagged msg; do
    serve fi_pingpong -p "$prov" -e rdm -m $mode -d veth0 -I 5000 -S 8
    echo "# fi_pingpong -p '$prov' -e rdm -m $mode -d veth0 -I 5000 -S 8" >>"$out/r${r}_fi.txt"
    timeout 60 ip netns exec "$a" fi_pingpong -p "$prov" -e rdm -m $mode -d veth0 -I 5000 -S 8 \
      10.89.0.2 >>"$out/r${r}_fi.txt" 2>&1
    reap
  done
  if command -v ucx_perftest >/dev/null; then
    : >"$out/r${r}_ucx.txt"
    for t in ucp_put_lat ucp_get ucp_fadd ucp_am_lat tag_lat; do
      serve env UCX_TLS=tcp,self UCX_NET_DEVICES=veth0 ucx_perftest -p 13351
      echo "== ucx_perftest -t $t -s 8 -n 5000" >>"$out/r${r}_ucx.txt"
      timeout 60 ip netns exec "$a" env UCX_TLS=tcp,self UCX_NET_DEVICES=veth0 ucx_perftest \
        10.89.0.2 -p 13351 -t $t -s 8 -n 5000 >>"$out/r${r}_ucx.txt" 2>&1
      reap
    done
  fi
done
echo "results in $out"
