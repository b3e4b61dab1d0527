#!/bin/bash
# device_run3.sh: as device_run2.sh, plus pmix_smaps built into .devbundle/bin:
#   gcc -O2 -o .devbundle/bin/pmix_smaps docs/bench-data/session_2026-11-28g/pmix_smaps.c \
#       -I/usr/lib/x86_64-linux-gnu/pmix2/include -lpmix
# 1. the PMIx client alone (no tsunagi) under mpirun at 64, 256 and 1024
#    ranks: whether the anonymous memory that grew with the job under mpirun
#    (device_run2.sh) is the PMIx client's;
# 2. three more rounds of one thread's 8 B put/get rate, _nbi and callback,
#    beside MPI-3 RMA window+flush.
set -u
B=$PWD/.devbundle
export PB=$B/peers
. docs/bench-data/session_2026-11-28g/peer_env.sh
export LD_LIBRARY_PATH=$B/lib:$LD_LIBRARY_PATH PATH=$B/bin:$PATH
export PMIX_MCA_pcompress_base_silence_warning=1
O=${OUT:-/tmp/out}; mkdir -p "$O"
ulimit -n 65536 2>/dev/null || ulimit -n 4096
{
  for n in 64 256 1024; do
    timeout 150 mpirun --allow-run-as-root --oversubscribe -n $n pmix_smaps 2>&1 | grep '^pmix-only' | sort
  done
  echo "== tsunagi under mpirun -n 256, nodes of 4"
  TSU_PROGRESS=manual TSU_SEGMENT_SIZE=256K TSU_PLACEMENT=block:4 timeout 150 \
    mpirun --allow-run-as-root --oversubscribe -n 256 \
    sh -c 'TSU_NODE_ID=n$((OMPI_COMM_WORLD_RANK/4)) exec smaps_rank' 2>&1 | grep '^rank1 ' | sort
} 2>&1 | tee "$O/pmix_smaps.txt"
{
  for r in 4 5 6; do
    TSU_BYPASS=1 timeout 60 tsurun -n 2 tsu-bench rma --ops put,get --threads 1 --sizes 8 --reps 3 \
      --duration-ms 50 --nbi-rate 2>&1 | grep -E '^\| (put|get)' | sed "s/^/r$r tsunagi /"
    OMPI_MCA_osc=sm timeout 60 mpirun --allow-run-as-root --oversubscribe -n 2 mpi-rma-bench \
      --reps 3 --duration-ms 50 2>&1 | grep -E '^\| rate ' | sed "s/^/r$r MPI /"
  done
} 2>&1 | tee "$O/nbi2.txt"
