#!/usr/bin/env bash
# Large tagged messages between two network namespaces on one veth pair:
# tsunagi over ofi (tcp;ofi_rxm) with bulk payloads (TSU_OFI_BULK=1: the
# provider's tagged send/receive carries the rendezvous payload) and without
# (TSU_OFI_BULK=0: CTS + DATA messages), interleaved per round, the order
# alternating; in the same rounds libfabric's fi_pingpong (tagged, the
# provider's limit), UCX over tcp (tag_lat / tag_bw) and tsunagi over its own
# udp.  Output: one file per run under OUT_DIR.
#   ofi_bulk_ab.sh BUILD_DIR OUT_DIR ROUNDS      (root)
set -u
build=$(realpath "$1") out=$2 rounds=${3:-3}
mkdir -p "$out"; out=$(realpath "$out")
source "$(dirname "$0")/../../../bench/net/veth_pair.sh"
a=tsb$$a b=tsb$$b
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; veth_pair_down "$a" "$b"; }
trap cleanup EXIT
trap "exit 143" INT TERM
veth_pair_up "$a" "$b" 10.94.0
export FI_TCP_IFACE=veth0
prov="tcp;ofi_rxm"
serve() { ip netns exec "$b" "$@" & pids+=($!); sleep 1.5; }
reap() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; pids=(); }
tsu_job() {  # tsu_job NET ENV... -- PROGRAM ARGS...
  local net=$1; shift; local envs=()
  while [[ $1 != -- ]]; do envs+=("$1"); shift; done; shift
  ip netns exec "$a" env TSU_NET="$net" TSU_OFI_IFACE=veth0 TSU_SEGMENT_SIZE=160M "${envs[@]}" \
    "$build/tools/tsurun/tsurun" -n 2 --hosts "$a,$b" --spawn 'ip netns exec {host}' \
    --bootstrap-addr 10.94.0.1 --timeout 300 "$@" 2>>"$out/stderr.txt"
}
for r in $(seq 1 "$rounds"); do
  echo "# round $r load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/load.txt"
  arms="0 1"; ((r % 2 == 0)) && arms="1 0"
  for arm in $arms; do
    tsu_job ofi TSU_OFI_BULK=$arm -- "$build/bench/tsu-bench" pingpong --min 8192 --max 4194304 \
      >"$out/r${r}_ofi_bulk${arm}_pingpong.txt"
    tsu_job ofi TSU_OFI_BULK=$arm -- "$build/bench/tsu-bench" stream --min 16384 --max 2097152 --window 32 \
      >"$out/r${r}_ofi_bulk${arm}_stream.txt"
  done
  tsu_job udp -- "$build/bench/tsu-bench" pingpong --min 8192 --max 4194304 >"$out/r${r}_udp_pingpong.txt"
  tsu_job udp -- "$build/bench/tsu-bench" stream --min 16384 --max 2097152 --window 32 >"$out/r${r}_udp_stream.txt"
  : >"$out/r${r}_fi_pingpong.txt"
  for size in 16384 65536 1048576 4194304; do
    iters=2000; ((size > 65536)) && iters=200
    serve fi_pingpong -p "$prov" -e rdm -m tagged -d veth0 -I $iters -S $size
    echo "# fi_pingpong -p '$prov' -e rdm -m tagged -d veth0 -I $iters -S $size" >>"$out/r${r}_fi_pingpong.txt"
    timeout 120 ip netns exec "$a" fi_pingpong -p "$prov" -e rdm -m tagged -d veth0 -I $iters \
      -S $size 10.94.0.2 >>"$out/r${r}_fi_pingpong.txt" 2>&1
    reap
  done
  if command -v ucx_perftest >/dev/null; then
    : >"$out/r${r}_ucx.txt"
    for t in "tag_lat -s 16384 -n 2000" "tag_lat -s 65536 -n 2000" "tag_lat -s 1048576 -n 200" \
             "tag_lat -s 4194304 -n 100" "tag_bw -s 65536 -n 4000" "tag_bw -s 1048576 -n 400" \
             "tag_bw -s 4194304 -n 100"; do
      serve env UCX_TLS=tcp,self UCX_NET_DEVICES=veth0 ucx_perftest -p 13338
      echo "== ucx_perftest -t $t" >>"$out/r${r}_ucx.txt"
      timeout 120 ip netns exec "$a" env UCX_TLS=tcp,self UCX_NET_DEVICES=veth0 ucx_perftest \
        10.94.0.2 -p 13338 -t $t >>"$out/r${r}_ucx.txt" 2>&1
      reap
    done
  fi
done
echo "results in $out"
