#!/bin/bash
# device_run2.sh: on the 16-core device machine (bundles as for device_run.sh,
# plus smaps_rank built into .devbundle/bin:
#   gcc -O2 -Iinclude -o .devbundle/bin/smaps_rank \
#       docs/bench-data/session_2026-11-28g/smaps_rank.c -Lbuild/release/src -ltsunagi)
# 1. what a rank's resident memory is made of after tsu_init at 1024 ranks,
#    under mpirun (PMIx) and under tsurun: why RSS per rank grew with the
#    job under mpirun in device_run.sh;
# 2. one thread's 8 B put/get rate with implicit completion (_nbi) and with
#    callbacks, beside MPI-3 RMA window+flush, 3 interleaved rounds (issue 16).
set -u
B=$PWD/.devbundle
export PB=$B/peers
. docs/bench-data/session_2026-11-28g/peer_env.sh
export LD_LIBRARY_PATH=$B/lib:$LD_LIBRARY_PATH PATH=$B/bin:$PATH
export PMIX_MCA_pcompress_base_silence_warning=1
O=${OUT:-/tmp/out}; mkdir -p "$O"
ulimit -n 65536 2>/dev/null || ulimit -n 4096
{
  for n in 64 1024; do
    echo "== mpirun -n $n, nodes of 4"
    TSU_PROGRESS=manual TSU_SEGMENT_SIZE=256K TSU_PLACEMENT=block:4 timeout 150 \
      mpirun --allow-run-as-root --oversubscribe -n $n \
      sh -c 'TSU_NODE_ID=n$((OMPI_COMM_WORLD_RANK/4)) exec smaps_rank' 2>&1 | grep '^rank' | sort
    echo "== tsurun -n $n, nodes of 4"
    TSU_PROGRESS=manual TSU_SEGMENT_SIZE=256K timeout 150 tsurun -n $n --ranks-per-node 4 \
      --timeout 140 smaps_rank 2>&1 | grep '^rank' | sort
  done
  ls -la /tmp/ompi.* 2>/dev/null | head
} 2>&1 | tee "$O/smaps.txt"
{
  for r in 1 2 3; do
    TSU_BYPASS=1 timeout 60 tsurun -n 2 tsu-bench rma --ops put,get --threads 1 --sizes 8 --reps 3 \
      --duration-ms 50 --nbi-rate 2>&1 | grep -E '^\| (put|get|op)' | sed "s/^/r$r tsunagi /"
    OMPI_MCA_osc=sm timeout 60 mpirun --allow-run-as-root --oversubscribe -n 2 mpi-rma-bench \
      --reps 3 --duration-ms 50 2>&1 | grep -E '^\| rate ' | sed "s/^/r$r MPI /"
  done
} 2>&1 | tee "$O/nbi.txt"
