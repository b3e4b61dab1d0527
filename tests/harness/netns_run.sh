#!/usr/bin/env bash
# Runs a tsurun job across "hosts" made of network namespaces on this machine.
#
#   netns_run.sh [--hosts N] [--loss PCT] [--loss-proto udp|tcp] [--tbf RATE] [--dup PCT]
#                [--delay MS[:JITTER_MS]] [--reorder PCT] [--nfq-holder PATH] -- TSURUN ARGS...
#
# Makes a hub namespace holding a bridge (10.99.0.254/24) and N host
# namespaces tsu<PID>h1..hN, each joined to the bridge by a veth pair with
# address 10.99.0.<i>.  tsurun runs inside the hub and starts ranks with
# --spawn 'ip netns exec {host}', serving the bootstrap on 10.99.0.254.
# Impairments (all inside the host namespaces; nothing touches the root
# namespace's interfaces or eth0):
#   --loss PCT  nftables: drop PCT% of incoming udp (numgen random, input hook)
#   --loss-proto tcp
#               drop tcp instead (libfabric's tcp;ofi_rxm): only segments
#               between hosts, not the bootstrap service's (from 10.99.0.254);
#               the hosts' route gets rto_min 5ms, as udp tests set
#               TSU_UDP_RTO_MIN, so that recovery takes milliseconds, not 200 ms
#   --dup PCT   nftables: duplicate PCT% of outgoing udp (dup statement, output hook)
#   --tbf RATE  tc tbf bottleneck on every host's veth (e.g. 200mbit)
#   --delay MS[:JITTER_MS], --reorder PCT
#               every udp packet a host sends on its veth goes to NFQUEUE 0
#               ("queue num 0 bypass", output hook) where nfq_holder (given by
#               --nfq-holder, started inside that host) holds it for MS ± JITTER_MS,
#               with an extra hold for PCT% of packets, then accepts it.
#               The rule is nftables' queue statement, or the iptables NFQUEUE
#               target where the kernel lacks nft_queue.
# Everything is removed on exit (trap), whatever happens.  Exit 77 (SKIPPED)
# with the reason when namespaces cannot be created here.
set -u
hosts=2 loss=0 loss_proto=udp dup=0 tbf="" delay="" reorder=0 nfq_holder=""
while (($#)); do
  case $1 in
    --hosts) hosts=$2; shift 2 ;;
    --loss) loss=$2; shift 2 ;;
    --loss-proto) loss_proto=$2; shift 2 ;;
    --dup) dup=$2; shift 2 ;;
    --tbf) tbf=$2; shift 2 ;;
    --delay) delay=$2; shift 2 ;;
    --reorder) reorder=$2; shift 2 ;;
    --nfq-holder) nfq_holder=$2; shift 2 ;;
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
holding=0
if [[ -n $delay || $reorder != 0 ]]; then
  holding=1
  command -v nft >/dev/null || command -v iptables >/dev/null || skip "neither nft nor iptables is installed"
  [[ -x $nfq_holder ]] || skip "nfq_holder is not built ('$nfq_holder'; needs libnetfilter-queue-dev)"
  holder_args=(--queue 0 --max-seconds 600)
  if [[ -n $delay ]]; then
    holder_args+=(--delay "${delay%%:*}")
    [[ $delay == *:* ]] && holder_args+=(--jitter "${delay#*:}")
  fi
  [[ $reorder != 0 ]] && holder_args+=(--reorder "$reorder")
fi

p=tsu$$
hub=${p}hub
made=()
holders=()
# Stops each holder (it accepts what it still holds and prints its counters),
# killing it if it has not gone within 5 s, then removes the namespaces and
# with them their nft tables.
stop_holders() {
  local pid i
  for pid in "${holders[@]}"; do [[ -n $pid ]] && kill -TERM "$pid" 2>/dev/null; done
  for pid in "${holders[@]}"; do
    [[ -n $pid ]] || continue
    for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  for ns in "${names[@]}"; do
    [[ -f /tmp/$ns.nfq ]] && sed "s/^/netns_run: $ns /" "/tmp/$ns.nfq" && rm -f "/tmp/$ns.nfq"
  done
  holders=()
}
# Sends every udp packet host $1 puts on its veth to NFQUEUE 0.  nftables'
# queue statement needs the kernel's nft_queue; kernels that build only the
# xtables NFQUEUE target get the same rule through iptables(-nft).
add_queue_rule() {
  printf '%s\n' 'table ip tsunfq {' ' chain out {' \
    '  type filter hook output priority 10; policy accept;' \
    '  oifname "veth0" meta l4proto udp counter queue num 0 bypass' ' }' '}' |
    ip netns exec "$1" nft -f - 2>/dev/null && return 0
  command -v iptables >/dev/null &&
    ip netns exec "$1" iptables -A OUTPUT -o veth0 -p udp -j NFQUEUE --queue-num 0 --queue-bypass
}
job=""
cleanup() {
  if [[ -n $job ]]; then
    kill -TERM "$job" 2>/dev/null
    wait "$job" 2>/dev/null
  fi
  stop_holders
  for ns in "${made[@]}"; do ip netns del "$ns" 2>/dev/null; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

names=()
ip netns add "$hub" 2>/tmp/$p.err || skip "cannot create a network namespace: $(cat /tmp/$p.err)"
rm -f /tmp/$p.err
made+=("$hub")
set -e
ip -n "$hub" link set lo up
ip -n "$hub" link add br0 type bridge
ip -n "$hub" addr add 10.99.0.254/24 dev br0
ip -n "$hub" link set br0 up
for ((i = 1; i <= hosts; i++)); do
  ns=${p}h$i
  ip netns add "$ns"
  made+=("$ns")
  names+=("$ns")
  ip -n "$ns" link set lo up
  ip link add veth0 netns "$ns" type veth peer name port$i netns "$hub"
  ip -n "$ns" addr add 10.99.0.$i/24 dev veth0
  ip -n "$ns" link set veth0 up
  if [[ $loss != 0 && $loss_proto == tcp ]]; then
    ip -n "$ns" route replace 10.99.0.0/24 dev veth0 proto kernel scope link src 10.99.0.$i rto_min 5ms
  fi
  ip -n "$hub" link set port$i master br0
  ip -n "$hub" link set port$i up
  if [[ $loss != 0 || $dup != 0 ]]; then
    rules=$'table ip tsu {\n chain in {\n  type filter hook input priority 0; policy accept;\n'
    if [[ $loss != 0 && $loss_proto == tcp ]]; then
      rules+=$"  meta l4proto tcp ip saddr != 10.99.0.254 numgen random mod 100 < $loss counter drop"$'\n'
    elif [[ $loss != 0 ]]; then
      rules+=$"  meta l4proto udp numgen random mod 100 < $loss counter drop"$'\n'
    fi
    rules+=$' }\n chain out {\n  type filter hook output priority 0; policy accept;\n'
    [[ $dup != 0 ]] && rules+=$"  meta l4proto udp ip daddr 10.99.0.0/24 numgen random mod 100 < $dup counter dup to ip daddr"$'\n'
    rules+=$' }\n}\n'
    echo "$rules" | ip netns exec "$ns" nft -f -
  fi
  if [[ -n $tbf ]]; then
    ip netns exec "$ns" tc qdisc add dev veth0 root tbf rate "$tbf" burst 64kb latency 20ms
  fi
  if ((holding)); then
    # Until the holder has bound the queue, "bypass" lets packets through
    # unheld; the job starts only once every holder says it is ready.
    ip netns exec "$ns" "$nfq_holder" "${holder_args[@]}" --seed "$i" >"/tmp/$ns.nfq" 2>&1 &
    holders+=($!)
    add_queue_rule "$ns" || skip "cannot queue packets to user space: no nft_queue in the kernel and no iptables NFQUEUE"
  fi
done
set +e
if ((holding)); then
  for ((i = 0; i < hosts; i++)); do
    ns=${names[i]}
    for ((t = 0; t < 100; t++)); do
      grep -q "ready" "/tmp/$ns.nfq" 2>/dev/null && break
      kill -0 "${holders[i]}" 2>/dev/null || break
      sleep 0.1
    done
    if ! grep -q "ready" "/tmp/$ns.nfq" 2>/dev/null; then
      why=$(cat "/tmp/$ns.nfq" 2>/dev/null)
      wait "${holders[i]}" 2>/dev/null
      holder_status=$?
      holders[i]=""  # reaped: nothing left to stop
      [[ $holder_status -eq 77 ]] && skip "nfq_holder cannot bind NFQUEUE in $ns: $why"
      echo "netns_run: nfq_holder did not start in $ns: $why" >&2
      exit 1
    fi
  done
fi
# Wait for the bridge ports to forward (no STP on a fresh bridge: immediate).
host_list=$(IFS=,; echo "${names[*]}")
echo "netns_run: hosts $host_list (loss=$loss% dup=$dup% tbf=${tbf:-none} delay=${delay:-none} reorder=$reorder%)"
# In the background so that a TERM/INT reaches the trap at once (bash defers
# traps until a foreground command ends); cleanup stops the job.
ip netns exec "$hub" "$tsurun" --hosts "$host_list" --spawn 'ip netns exec {host}' \
  --bootstrap-addr 10.99.0.254 "$@" &
job=$!
wait "$job"
rc=$?
job=""
if [[ $loss != 0 || $dup != 0 ]]; then
  for ns in "${names[@]}"; do
    echo "netns_run: $ns nft counters: $(ip netns exec "$ns" nft list ruleset 2>/dev/null | grep -o 'counter packets [0-9]*' | tr '\n' ' ')"
  done
fi
exit $rc
