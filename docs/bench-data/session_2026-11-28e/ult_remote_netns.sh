#!/usr/bin/env bash
# tsu-bench ult's remote rows between two network namespaces (one rank per
# "host", tests/udp/netns_run.sh), over udp and over ofi (tcp;ofi_rxm pinned
# to veth0), with default settings and with manual progress (workers poll).
#   ult_remote_netns.sh BUILD ROUNDS
set -u
b=$1 rounds=${2:-2}
for ((r = 1; r <= rounds; r++)); do
  for mode in defaults manual; do
    for net in udp ofi; do
      extra=()
      [[ $mode == manual ]] && extra=(TSU_PROGRESS=manual TSU_ULT_SPIN_US=10000000)
      echo "== round $r net=$net mode=$mode load=$(cut -d' ' -f1 /proc/loadavg)"
      env "${extra[@]}" TSU_NET=$net TSU_OFI_IFACE=veth0 FI_TCP_IFACE=veth0 \
        bash tests/udp/netns_run.sh --hosts 2 -- $b/tools/tsurun/tsurun -n 2 \
        --placement round-robin --timeout 240 $b/bench/tsu-bench ult --reps 3 --iters 200000 \
        --remote-only 2>&1 | grep -E "^\| remote|SKIPPED"
    done
  done
done
