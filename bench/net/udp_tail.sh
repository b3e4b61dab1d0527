#!/usr/bin/env bash
# The udp tail (issue 16 part 4), interleaved on one veth pair between two
# network namespaces: ROUNDS rounds of {tsunagi 8 B get/put/fetch-add latency
# waiting in tsu_quiet() (median/mean/p99), with build A then build B; UCX
# over tcp: ucp_put_lat and ucp_get 8 B}.  Runs alternate so all see the same
# load.  Needs root.
#   bench/net/udp_tail.sh A_BUILD_DIR [B_BUILD_DIR] [ROUNDS (3)]
# A_BUILD_DIR needs src/libtsunagi.so* and tools/tsurun/tsurun only.
# Environment: RATE=1 adds tsunagi's 8 B put rate at 1/2/4 threads.  PRIO (default "nice -n -20") runs both under it.  Not a
# real-time class: UCX's busy-polling ranks at real-time priority starve the
# kernel's softirq work on a 2-core host (the run hangs).  UCX prints no p99;
# its put_lat is half a round trip (ping-pong), tsunagi's a whole one.
set -u
a=$1 b=${2:-} rounds=${3:-3}
source "$(dirname "$0")/veth_pair.sh"
p=tst$$ na=tst$$a nb=tst$$b
cleanup() { veth_pair_down "$na" "$nb"; }
trap cleanup EXIT
trap "exit 143" INT TERM
veth_pair_up "$na" "$nb" 10.97.0
sleep 0.5
bin=${b:-$a}/bench/net/tsu-bench-net  # B's benchmark for both: only the library differs
tsu() {  # build label [benchmark arguments]
  local err rc
  err=$(mktemp)
  ${PRIO:-nice -n -20} ip netns exec "$na" env TSU_SEGMENT_SIZE=16M LD_LIBRARY_PATH="$1/src" \
    "$1/tools/tsurun/tsurun" -n 2 --hosts "$na,$nb" --spawn 'ip netns exec {host}' \
    --bootstrap-addr 10.97.0.1 --timeout 120 "$bin" tsu ${3:---only latency --wait quiet} 2>"$err" | sed "s/^/$2 /"
  rc=${PIPESTATUS[0]}
  # A run that fails says so (its rows would otherwise just be missing).
  if [[ $rc -ne 0 ]]; then echo "$2 run failed (exit $rc): $(tail -n 2 "$err" | tr '\n' ' ')"; fi
  rm -f "$err"
}
ucx() {  # test
  ${PRIO:-nice -n -20} ip netns exec "$nb" env UCX_TLS=tcp,self UCX_NET_DEVICES=veth0 ucx_perftest -p 13338 >/dev/null 2>&1 & s=$!
  sleep 0.5
  timeout 60 ${PRIO:-nice -n -20} ip netns exec "$na" env UCX_TLS=tcp,self UCX_NET_DEVICES=veth0 ucx_perftest 10.97.0.2 \
    -p 13338 -t "$1" -s 8 -n 20000 -f 2>&1 |
    awk -v t="$1" '$1 == 20000 { print "ucx " t " 8 B: median_us " $2 " mean_us " $3 }'
  kill $s 2>/dev/null; wait $s 2>/dev/null
}
for r in $(seq "$rounds"); do
  echo "round $r: $(uptime | sed 's/.*load/load/')"
  tsu "$a" A
  [[ -n $b ]] && tsu "$b" B
  ucx ucp_put_lat
  ucx ucp_get
  if [[ -n ${RATE:-} ]]; then
    tsu "$a" A "--only rate"
    [[ -n $b ]] && tsu "$b" B "--only rate"
  fi
done
