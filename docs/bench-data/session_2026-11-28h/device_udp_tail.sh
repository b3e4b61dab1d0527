#!/bin/bash
# device_udp_tail.sh: the udp tail (issue 16 part 4) on the idle 16-core
# device machine: bench/net/udp_tail.sh (tsunagi 8 B get/put/fetch-add over
# udp between two network namespaces, waiting in tsu_quiet: median / mean /
# p99; UCX over tcp in the same rounds), then the raw UDP socket ping-pong
# (tsu-bench-net raw-*) on its own veth pair as the limit.  Bundle: as
# session_2026-11-28c/make_bundle.sh + session_2026-11-28g/make_peer_bundle.sh,
# plus bin/tsu-bench-net and bin/ip (iproute2, with its libraries in lib/).
set -u
B=$PWD/.devbundle
export PB=$B/peers
. docs/bench-data/session_2026-11-28g/peer_env.sh
export LD_LIBRARY_PATH=$B/lib:$LD_LIBRARY_PATH PATH=$PATH:$B/bin
O=${OUT:-/tmp/out}; mkdir -p "$O"
{
  echo "host: $(nproc) cpus, $(grep -m1 'model name' /proc/cpuinfo), kernel $(uname -r), uid $(id -u), ip: $(command -v ip)"
  uptime
} | tee "$O/host.txt"
# A build-directory layout for udp_tail.sh (src/, tools/tsurun/, bench/net/).
b=/tmp/tsu_build; rm -rf $b; mkdir -p $b/tools/tsurun $b/bench/net
ln -s "$B/lib" $b/src
cp "$B/bin/tsurun" $b/tools/tsurun/; cp "$B/bin/tsu-bench-net" $b/bench/net/
ROUNDS=${ROUNDS:-3}
PRIO=" " timeout 200 bash bench/net/udp_tail.sh $b "" "$ROUNDS" 2>&1 | tee "$O/udp_tail.txt"
# The limit: raw UDP ping-pong, 8 B, same kind of veth pair.
. bench/net/veth_pair.sh
na=raw$$a nb=raw$$b
trap 'veth_pair_down $na $nb' EXIT
veth_pair_up $na $nb 10.96.0
for r in $(seq "$ROUNDS"); do
  ip netns exec $nb $b/bench/net/tsu-bench-net raw-server 14555 & s=$!
  sleep 0.3
  timeout 30 ip netns exec $na $b/bench/net/tsu-bench-net raw-client 10.96.0.2 14555 2>&1 | sed "s/^/raw round $r: /"
  kill $s 2>/dev/null; wait $s 2>/dev/null
done | tee "$O/raw.txt"
