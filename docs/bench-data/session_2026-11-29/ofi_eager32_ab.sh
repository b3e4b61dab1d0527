#!/usr/bin/env bash
# Tagged messages of 8-128 KiB over ofi (tcp;ofi_rxm) across two
# namespaces, old library (A) against new (B), interleaved: pingpong in
# manual and thread progress and a stream, with fi_pingpong tagged (rxm's
# default eager limit, and raised to 32824 B as tsunagi now asks) and UCX
# tcp tag_lat at the same sizes in every round.  The benchmark binaries and
# tsurun are BUILD's; only the library differs (LD_LIBRARY_PATH).
#   ofi_eager32_ab.sh BUILD A_LIB_DIR B_LIB_DIR OUT ROUNDS
# OUT/rR_{A,B}_{ppm,ppt,st}.txt, OUT/rR_fi.txt, OUT/rR_ucx.txt.  Needs root.
set -u
build=$(realpath "$1") la=$(realpath "$2") lb=$(realpath "$3") out=$4 rounds=${5:-4}
mkdir -p "$out"; out=$(realpath "$out")
source "$(dirname "$0")/../../../bench/net/veth_pair.sh"
a=tsf$$a b=tsf$$b
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; veth_pair_down "$a" "$b"; }
trap cleanup EXIT
trap "exit 143" INT TERM
veth_pair_up "$a" "$b" 10.88.0
export FI_TCP_IFACE=veth0
sleep 1
prov="tcp;ofi_rxm"
serve() { ip netns exec "$b" "$@" >/dev/null 2>&1 & pids+=($!); sleep 1.5; }
reap() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; pids=(); }
tsu_job() {  # tsu_job LIB PROGRESS BENCH ARGS...
  local lib=$1 progress=$2; shift 2
  ip netns exec "$a" env LD_LIBRARY_PATH="$lib" TSU_PROGRESS="$progress" TSU_NET=ofi TSU_OFI_IFACE=veth0 \
    TSU_SEGMENT_SIZE=64M "$build/tools/tsurun/tsurun" -n 2 --hosts "$a,$b" --spawn 'ip netns exec {host}' \
    --bootstrap-addr 10.88.0.1 --timeout 120 "$build/bench/tsu-bench" "$@" 2>>"$out/stderr.txt"
}
for r in $(seq 1 "$rounds"); do
  echo "# round $r load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/load.txt"
  order="A B"; ((r % 2 == 0)) && order="B A"
  for v in $order; do
    lib=$la; [[ $v == B ]] && lib=$lb
    tsu_job "$lib" manual pingpong --min 8192 --max 131072 --iters 2000 >"$out/r${r}_${v}_ppm.txt"
    tsu_job "$lib" thread pingpong --min 8192 --max 131072 --iters 2000 >"$out/r${r}_${v}_ppt.txt"
    tsu_job "$lib" thread stream --min 8192 --max 131072 >"$out/r${r}_${v}_st.txt"
  done
  : >"$out/r${r}_fi.txt"
  for el in default 32824; do
    for size in 16384 32768 65536; do
      envs=(); [[ $el != default ]] && envs=(FI_OFI_RXM_EAGER_LIMIT=$el)
      serve env "${envs[@]}" fi_pingpong -p "$prov" -e rdm -m tagged -d veth0 -I 2000 -S $size
      echo "# eager_limit=$el fi_pingpong -p '$prov' -e rdm -m tagged -d veth0 -I 2000 -S $size" >>"$out/r${r}_fi.txt"
      timeout 60 ip netns exec "$a" env "${envs[@]}" fi_pingpong -p "$prov" -e rdm -m tagged -d veth0 \
        -I 2000 -S $size 10.88.0.2 >>"$out/r${r}_fi.txt" 2>&1
      reap
    done
  done
  if command -v ucx_perftest >/dev/null; then
    : >"$out/r${r}_ucx.txt"
    for size in 16384 32768 65536; do
      serve env UCX_TLS=tcp,self UCX_NET_DEVICES=veth0 ucx_perftest -p 13341
      echo "== ucx_perftest -t tag_lat -s $size -n 2000" >>"$out/r${r}_ucx.txt"
      timeout 60 ip netns exec "$a" env UCX_TLS=tcp,self UCX_NET_DEVICES=veth0 ucx_perftest \
        10.88.0.2 -p 13341 -t tag_lat -s $size -n 2000 >>"$out/r${r}_ucx.txt" 2>&1
      reap
    done
  fi
done
echo "results in $out"
