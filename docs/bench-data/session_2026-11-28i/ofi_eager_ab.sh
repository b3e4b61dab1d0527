#!/usr/bin/env bash
# Tagged pingpong over ofi (tcp;ofi_rxm) across two namespaces, old library
# (A) against new (B), interleaved, with fi_pingpong tagged and UCX tcp
# tag_lat at the same sizes in every round.  The benchmark binaries and
# tsurun are BUILD's; only the library differs (LD_LIBRARY_PATH).
#   ofi_eager_ab.sh BUILD A_LIB_DIR B_LIB_DIR OUT ROUNDS
# OUT/rR_{A,B}_pp.txt: tsu-bench pingpong 8 B..16 KiB and 12 KiB (half round
# trip: median of 5 repetitions, best, protocol counts, mean and p99 of
# single round trips); OUT/rR_fi.txt, OUT/rR_ucx.txt: the peers.  Needs root.
# TSU_ENV: extra settings for the tsunagi runs (e.g. TSU_PROGRESS=manual);
# PP_MIN: smallest pingpong size (8); PP_ARGS: more tsu-bench pingpong options
# (e.g. --prepost).
set -u
build=$(realpath "$1") la=$(realpath "$2") lb=$(realpath "$3") out=$4 rounds=${5:-4}
mkdir -p "$out"; out=$(realpath "$out")
source "$(dirname "$0")/../../../bench/net/veth_pair.sh"
a=tse$$a b=tse$$b
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; veth_pair_down "$a" "$b"; }
trap cleanup EXIT
trap "exit 143" INT TERM
veth_pair_up "$a" "$b" 10.89.0
export FI_TCP_IFACE=veth0
sleep 1
prov="tcp;ofi_rxm"
serve() { ip netns exec "$b" "$@" >/dev/null 2>&1 & pids+=($!); sleep 1.5; }
reap() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; pids=(); }
tsu_job() {  # tsu_job LIB ARGS...
  local lib=$1; shift
  # shellcheck disable=SC2086  # TSU_ENV is a list of NAME=VALUE words
  ip netns exec "$a" env LD_LIBRARY_PATH="$lib" ${TSU_ENV:-} TSU_NET=ofi TSU_OFI_IFACE=veth0 TSU_SEGMENT_SIZE=64M \
    "$build/tools/tsurun/tsurun" -n 2 --hosts "$a,$b" --spawn 'ip netns exec {host}' \
    --bootstrap-addr 10.89.0.1 --timeout 120 "$build/bench/tsu-bench" pingpong "$@" 2>>"$out/stderr.txt"
}
for r in $(seq 1 "$rounds"); do
  echo "# round $r load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/load.txt"
  order="A B"; ((r % 2 == 0)) && order="B A"
  for v in $order; do
    lib=$la; [[ $v == B ]] && lib=$lb
    # shellcheck disable=SC2086  # PP_ARGS is a list of options
    { tsu_job "$lib" --min "${PP_MIN:-8}" --max 16384 --iters 2000 ${PP_ARGS:-}
      tsu_job "$lib" --min 12288 --max 12288 --iters 2000 ${PP_ARGS:-}; } \
      >"$out/r${r}_${v}_pp.txt"
  done
  : >"$out/r${r}_fi.txt"
  for size in 8 4096 8192 12288 16384; do
    serve fi_pingpong -p "$prov" -e rdm -m tagged -d veth0 -I 2000 -S $size
    echo "# fi_pingpong -p '$prov' -e rdm -m tagged -d veth0 -I 2000 -S $size" >>"$out/r${r}_fi.txt"
    timeout 60 ip netns exec "$a" fi_pingpong -p "$prov" -e rdm -m tagged -d veth0 -I 2000 \
      -S $size 10.89.0.2 >>"$out/r${r}_fi.txt" 2>&1
    reap
  done
  if command -v ucx_perftest >/dev/null; then
    : >"$out/r${r}_ucx.txt"
    for size in 8 8192 12288 16384; do
      serve env UCX_TLS=tcp,self UCX_NET_DEVICES=veth0 ucx_perftest -p 13339
      echo "== ucx_perftest -t tag_lat -s $size -n 2000" >>"$out/r${r}_ucx.txt"
      timeout 60 ip netns exec "$a" env UCX_TLS=tcp,self UCX_NET_DEVICES=veth0 ucx_perftest \
        10.89.0.2 -p 13339 -t tag_lat -s $size -n 2000 >>"$out/r${r}_ucx.txt" 2>&1
      reap
    done
  fi
done
echo "results in $out"
