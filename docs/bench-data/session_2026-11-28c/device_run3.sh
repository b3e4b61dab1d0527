#!/bin/bash
# device_run3.sh: start-up over ofi (tcp;ofi_rxm on lo) by rank count on the
# 16-core device machine: requests, memory and time per rank, with rxm's
# default receive pool and with FI_OFI_RXM_MSG_RX_SIZE=256; and what
# libfabric's own initialisation costs there (fi_info, /proc/kallsyms).
set -u
B=$PWD/.devbundle
export LD_LIBRARY_PATH=$B/lib PATH=$B/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p "$O"
ulimit -n 20000 2>/dev/null
{
  echo "kallsyms lines: $(wc -l </proc/kallsyms)"
  s=$(date +%s%N); cat /proc/kallsyms >/dev/null; echo "cat kallsyms: $(( ($(date +%s%N) - s) / 1000000 )) ms"
  for i in 1 2; do s=$(date +%s%N); fi_info -p 'tcp;ofi_rxm' >/dev/null 2>&1; echo "fi_info -p tcp;ofi_rxm: rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms"; done
  fi_info -p 'tcp;ofi_rxm' 2>&1 | head -8
  scale=tests/scaling/startup_scaling.sh
  echo "== ofi, rxm defaults, nodes of 4"
  TSU_NET=ofi TSU_SCALING_LIMIT=100 timeout 300 bash $scale $B/bin/tsurun $B/bin/startup_rank 4 16 64 256 512
  echo "== ofi, FI_OFI_RXM_MSG_RX_SIZE=256, nodes of 4"
  FI_OFI_RXM_MSG_RX_SIZE=256 TSU_NET=ofi TSU_SCALING_LIMIT=100 timeout 200 bash $scale $B/bin/tsurun $B/bin/startup_rank 4 16 64 256
  echo "== udp, same sizes (reference)"
  TSU_SCALING_LIMIT=100 timeout 100 bash $scale $B/bin/tsurun $B/bin/startup_rank 4 16 64 256
} 2>&1 | tee "$O/ofi_startup.txt"
