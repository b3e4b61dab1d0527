#!/usr/bin/env bash
# A/B of the remote idle spin, same build: A = TSU_ULT_REMOTE_SPIN_US=50 (the
# behaviour before: every idle spell polled TSU_ULT_SPIN_US = 50 us), B = the
# default (200 us after sending a spawn or exit value).  tsu-bench ult's
# remote rows between two namespaces over udp and ofi, default settings
# otherwise (progress threads); which side goes first alternates.
#   ult_remote_spin_ab.sh BUILD ROUNDS
set -u
b=$1 rounds=${2:-3}
for ((r = 1; r <= rounds; r++)); do
  if ((r % 2)); then order="A B"; else order="B A"; fi
  for net in udp ofi; do
    for side in $order; do
      if [[ $side == A ]]; then e=TSU_ULT_REMOTE_SPIN_US=50; else e=TSU_ULT_NOTHING=1; fi
      echo "== round $r net=$net side=$side load=$(cut -d' ' -f1 /proc/loadavg)"
      env $e TSU_NET=$net TSU_OFI_IFACE=veth0 FI_TCP_IFACE=veth0 \
        bash tests/udp/netns_run.sh --hosts 2 -- $b/tools/tsurun/tsurun -n 2 \
        --placement round-robin --timeout 240 $b/bench/tsu-bench ult --reps 3 --iters 200000 \
        --remote-only 2>&1 | grep -E "^\| remote|SKIPPED"
    done
  done
done
