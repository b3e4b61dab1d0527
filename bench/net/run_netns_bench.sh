#!/usr/bin/env bash
# Two network namespaces on one veth pair; on it, side by side:
#   tsunagi udp (tsu-bench-net tsu), raw UDP pingpong + throughput, and UCX
#   over tcp (ucx_perftest, UCX_TLS=tcp) when installed.
#   bench/net/run_netns_bench.sh BUILD_DIR OUT_DIR [LOSS_PCT]
# Environment: TSU_BENCH_ARGS (extra tsu-bench-net arguments, e.g.
# "--only latency"), SKIP_PEERS=1 (tsunagi only: no raw UDP, no UCX), SKIP_UCX=1.
# Results: OUT_DIR/results.jsonl, OUT_DIR/ucx.txt, OUT_DIR/trace.* (cwnd).
set -u
build=$1 out=$2 loss=${3:-0}
mkdir -p "$out"
source "$(dirname "$0")/veth_pair.sh"
p=tsb$$ a=tsb$$a b=tsb$$b
cleanup() { veth_pair_down "$a" "$b"; }
trap cleanup EXIT
trap "exit 143" INT TERM
veth_pair_up "$a" "$b" 10.98.0
if [[ $loss != 0 ]]; then
  for ns in "$a" "$b"; do
    printf 'table ip tsu {\n chain in {\n  type filter hook input priority 0; policy accept;\n  meta l4proto udp numgen random mod 100 < %s drop\n }\n}\n' "$loss" | ip netns exec "$ns" nft -f -
  done
fi
bench=$build/bench/net/tsu-bench-net
res=$out/results.jsonl
: >"$res"
# Raw UDP on the same pair (the limit; measured without loss only: the raw
# pingpong has no retransmission).
if [[ $loss == 0 && -z ${SKIP_PEERS:-} ]]; then
  ip netns exec "$b" "$bench" raw-server 9999 & srv=$!
  sleep 0.3
  ip netns exec "$a" "$bench" raw-client 10.98.0.2 9999 | tee -a "$res"
  kill $srv 2>/dev/null; wait $srv 2>/dev/null
fi
# tsunagi: the tsurun bootstrap served from namespace a; rank 0 in a, rank 1 in b.
ip netns exec "$a" env TSU_SEGMENT_SIZE=160M TSU_STATS=1 TSU_UDP_TRACE="$out/trace" \
  "$build/tools/tsurun/tsurun" -n 2 --hosts "$a,$b" --spawn 'ip netns exec {host}' \
  --bootstrap-addr 10.98.0.1 --timeout 300 ${TSU_BENCH_WRAP:-} "$bench" tsu ${TSU_BENCH_ARGS:-} 2>"$out/tsu_stats.txt" | tee -a "$res"
# The same latencies with the waiting thread in tsu_quiet() (it drives
# progress itself, polling the socket like the raw client) instead of
# yielding to the progress thread.
if [[ -z ${TSU_BENCH_ARGS:-} ]]; then
  ip netns exec "$a" env TSU_SEGMENT_SIZE=160M \
    "$build/tools/tsurun/tsurun" -n 2 --hosts "$a,$b" --spawn 'ip netns exec {host}' \
    --bootstrap-addr 10.98.0.1 --timeout 120 ${TSU_BENCH_WRAP:-} "$bench" tsu --only latency --wait quiet \
    2>>"$out/tsu_stats.txt" | tee -a "$res"
fi
# UCX over tcp on the same pair.
if [[ $loss == 0 && -z ${SKIP_PEERS:-}${SKIP_UCX:-} ]] && command -v ucx_perftest >/dev/null; then
  : >"$out/ucx.txt"
  for t in "ucp_put_lat -s 8 -n 20000" "ucp_get -s 8 -n 20000" "ucp_put_bw -s 1048576 -n 2000" "ucp_put_bw -s 65536 -n 10000"; do
    ip netns exec "$b" env UCX_TLS=tcp,self UCX_NET_DEVICES=veth0 ucx_perftest -p 13337 >/dev/null 2>&1 & s=$!
    sleep 0.5
    echo "== ucx_perftest -t $t" >>"$out/ucx.txt"
    timeout 60 ip netns exec "$a" env UCX_TLS=tcp,self UCX_NET_DEVICES=veth0 ucx_perftest 10.98.0.2 -p 13337 -t $t >>"$out/ucx.txt" 2>&1
    kill $s 2>/dev/null; wait $s 2>/dev/null
  done
fi
echo "results in $out"
