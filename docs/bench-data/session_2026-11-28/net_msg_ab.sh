#!/usr/bin/env bash
# AM round trip and tagged 8 B pingpong (tsu-bench am / pingpong, default
# thread mode: the main threads poll with tsu_progress) across two network
# namespaces, over ofi (tcp;ofi_rxm) and udp, old and new library
# alternating (who goes first alternates), same binaries.
#   net_msg_ab.sh OLD_BUILD NEW_BUILD ROUNDS   (from the repository root; root)
set -u
old=$(realpath "$1") new=$(realpath "$2") rounds=${3:-4} B=$(realpath "${B:-build/release}")
source bench/net/veth_pair.sh
a=tnm$$a b=tnm$$b
trap 'veth_pair_down $a $b' EXIT
veth_pair_up "$a" "$b" 10.94.0; sleep 0.5
job() {  # job LIBDIR NET PROGRAM ARGS...
  local lib=$1 net=$2; shift 2
  ip netns exec "$a" env LD_LIBRARY_PATH="$lib/src" TSU_NET="$net" TSU_OFI_IFACE=veth0 FI_TCP_IFACE=veth0 \
    TSU_SEGMENT_SIZE=16M "$B/tools/tsurun/tsurun" -n 2 --hosts "$a,$b" --spawn 'ip netns exec {host}' \
    --bootstrap-addr 10.94.0.1 --timeout 120 "$B/bench/tsu-bench" "$@" 2>/dev/null
}
for ((r = 1; r <= rounds; r++)); do
  order="old new"; ((r % 2 == 0)) && order="new old"
  for net in ofi udp; do
    for side in $order; do
      d=${!side}
      am=$(job "$d" "$net" am --threads 1 | grep -oE 'reply\): [0-9.]*|[0-9.]* M msg/s' | tr '\n' ' ')
      pp=$(job "$d" "$net" pingpong --min 8 --max 8 | awk '$1==8{print $2}')
      echo "round $r $net $side am: $am pingpong8: $pp"
    done
  done
done
