#!/usr/bin/env bash
# Run from the repository root; ENV words are passed to tsurun (e.g. LD_LIBRARY_PATH=<old build>/src for the old library, TSU_SPIN_US=20).
# udp_env.sh ROUNDS "ENV1" "ENV2" ...: tsunagi udp 8 B latency (tsu_quiet) under each env, interleaved, + UCX put_lat
set -u
cd "$(git rev-parse --show-toplevel)"
source bench/net/veth_pair.sh
rounds=$1; shift
na=tse$$a nb=tse$$b
trap 'veth_pair_down $na $nb' EXIT
veth_pair_up "$na" "$nb" 10.96.0; sleep 0.5
B=${B:-build/release}
for r in $(seq $rounds); do
  echo "round $r load $(cut -d' ' -f1 /proc/loadavg)"
  for e in "$@"; do
    nice -n -20 ip netns exec "$na" env TSU_SEGMENT_SIZE=16M $e "$B/tools/tsurun/tsurun" -n 2 --hosts "$na,$nb" --spawn 'ip netns exec {host}' \
      --bootstrap-addr 10.96.0.1 --timeout 120 "$B/bench/net/tsu-bench-net" tsu ${ONLY:---only latency --wait quiet} 2>/dev/null | sed "s|^|[$e] |" | sed 's/"bench":"tsu_latency",//; s/"wait":"quiet","bytes":8,//'
  done
  nice -n -20 ip netns exec "$nb" env UCX_TLS=tcp,self UCX_NET_DEVICES=veth0 ucx_perftest -p 13339 >/dev/null 2>&1 & s=$!
  sleep 0.5
  timeout 60 nice -n -20 ip netns exec "$na" env UCX_TLS=tcp,self UCX_NET_DEVICES=veth0 ucx_perftest 10.96.0.2 -p 13339 -t ucp_put_lat -s 8 -n 20000 -f 2>&1 | awk '$1 == 20000 { print "ucx put_lat half-RT median " $2 " mean " $3 }'
  kill $s 2>/dev/null; wait $s 2>/dev/null
done
