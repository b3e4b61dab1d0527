#!/usr/bin/env bash
# Runs a tsurun job across "hosts" made of network namespaces on this machine.
#
#   netns_run.sh [--hosts N] [--loss PCT] [--tbf RATE] [--dup PCT] [--keep] -- TSURUN ARGS...
#
# Makes a hub namespace holding a bridge (10.99.0.254/24) and N host
# namespaces tsu<PID>h1..hN, each joined to the bridge by a veth pair with
# address 10.99.0.<i>.  tsurun runs inside the hub and starts ranks with
# --spawn 'ip netns exec {host}', serving the bootstrap on 10.99.0.254.
# Impairments (all inside the host namespaces; nothing touches the root
# namespace's interfaces or eth0):
#   --loss PCT  nftables: drop PCT% of incoming udp (numgen random, input hook)
#   --dup PCT   nftables: duplicate PCT% of outgoing udp (dup statement, output hook)
#   --tbf RATE  tc tbf bottleneck on every host's veth (e.g. 200mbit)
# Everything is removed on exit (trap), whatever happens.  Exit 77 (SKIPPED)
# with the reason when namespaces cannot be created here.
set -u
hosts=2 loss=0 dup=0 tbf=""
while (($#)); do
  case $1 in
    --hosts) hosts=$2; shift 2 ;;
    --loss) loss=$2; shift 2 ;;
    --dup) dup=$2; shift 2 ;;
    --tbf) tbf=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "netns_run.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
tsurun=$1; shift

skip() { echo "SKIPPED: $*"; exit 77; }
[[ $(id -u) -eq 0 ]] || skip "network namespaces need root"
command -v ip >/dev/null || skip "iproute2 (ip) is not installed"
if [[ $loss != 0 || $dup != 0 ]]; then command -v nft >/dev/null || skip "nftables (nft) is not installed"; fi
if [[ -n $tbf ]]; then command -v tc >/dev/null || skip "tc is not installed"; fi

p=tsu$$
hub=${p}hub
made=()
cleanup() {
  for ns in "${made[@]}"; do ip netns del "$ns" 2>/dev/null; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ip netns add "$hub" 2>/tmp/$p.err || skip "cannot create a network namespace: $(cat /tmp/$p.err)"
rm -f /tmp/$p.err
made+=("$hub")
set -e
ip -n "$hub" link set lo up
ip -n "$hub" link add br0 type bridge
ip -n "$hub" addr add 10.99.0.254/24 dev br0
ip -n "$hub" link set br0 up
names=()
for ((i = 1; i <= hosts; i++)); do
  ns=${p}h$i
  ip netns add "$ns"
  made+=("$ns")
  names+=("$ns")
  ip -n "$ns" link set lo up
  ip link add veth0 netns "$ns" type veth peer name port$i netns "$hub"
  ip -n "$ns" addr add 10.99.0.$i/24 dev veth0
  ip -n "$ns" link set veth0 up
  ip -n "$hub" link set port$i master br0
  ip -n "$hub" link set port$i up
  if [[ $loss != 0 || $dup != 0 ]]; then
    rules=$'table ip tsu {\n chain in {\n  type filter hook input priority 0; policy accept;\n'
    [[ $loss != 0 ]] && rules+=$"  meta l4proto udp numgen random mod 100 < $loss counter drop"$'\n'
    rules+=$' }\n chain out {\n  type filter hook output priority 0; policy accept;\n'
    [[ $dup != 0 ]] && rules+=$"  meta l4proto udp ip daddr 10.99.0.0/24 numgen random mod 100 < $dup counter dup to ip daddr"$'\n'
    rules+=$' }\n}\n'
    echo "$rules" | ip netns exec "$ns" nft -f -
  fi
  if [[ -n $tbf ]]; then
    ip netns exec "$ns" tc qdisc add dev veth0 root tbf rate "$tbf" burst 64kb latency 20ms
  fi
done
set +e
# Wait for the bridge ports to forward (no STP on a fresh bridge: immediate).
host_list=$(IFS=,; echo "${names[*]}")
echo "netns_run: hosts $host_list (loss=$loss% dup=$dup% tbf=${tbf:-none})"
ip netns exec "$hub" "$tsurun" --hosts "$host_list" --spawn 'ip netns exec {host}' \
  --bootstrap-addr 10.99.0.254 "$@"
rc=$?
if [[ $loss != 0 || $dup != 0 ]]; then
  for ns in "${names[@]}"; do
    echo "netns_run: $ns nft counters: $(ip netns exec "$ns" nft list ruleset 2>/dev/null | grep -o 'counter packets [0-9]*' | tr '\n' ' ')"
  done
fi
exit $rc
