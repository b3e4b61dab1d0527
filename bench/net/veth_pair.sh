# Sourced by the bench/net scripts: two network namespaces joined by one veth
# pair (veth0 on both sides), PREFIX.1 in the first and PREFIX.2 in the
# second, loopback up in both.  Needs root; exits 77 with SKIPPED otherwise.
#   source bench/net/veth_pair.sh
#   veth_pair_up NS_A NS_B PREFIX      e.g. veth_pair_up tsx$$a tsx$$b 10.98.0
#   veth_pair_down NS_A NS_B            (in the caller's EXIT trap)
veth_pair_up() {
  local a=$1 b=$2 prefix=$3
  [[ $(id -u) -eq 0 ]] || { echo "SKIPPED: needs root for network namespaces"; exit 77; }
  ip netns add "$a" && ip netns add "$b" || { echo "SKIPPED: cannot create namespaces"; exit 77; }
  ip -n "$a" link set lo up; ip -n "$b" link set lo up
  ip link add veth0 netns "$a" type veth peer name veth0 netns "$b"
  ip -n "$a" addr add "$prefix.1/24" dev veth0; ip -n "$b" addr add "$prefix.2/24" dev veth0
  ip -n "$a" link set veth0 up; ip -n "$b" link set veth0 up
  # Wait for the carrier (at most 3 s): libfabric's tcp provider skips an
  # interface that is not running yet, so a job started at once fails.
  local i
  for i in $(seq 30); do
    ip -n "$a" link show veth0 | grep -q LOWER_UP && ip -n "$b" link show veth0 | grep -q LOWER_UP && break
    sleep 0.1
  done
}
veth_pair_down() {
  ip netns del "$1" 2>/dev/null; ip netns del "$2" 2>/dev/null
}
