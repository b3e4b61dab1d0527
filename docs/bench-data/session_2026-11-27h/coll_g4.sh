#!/bin/sh
# A B libs (dirs with src/), ROUNDS, N
A=$1 B=$2 R=$3 N=$4 NEW=${NEW:-build/release}
for r in $(seq $R); do
  for b in $A $B; do
    echo "== $b load $(cut -d' ' -f1 /proc/loadavg)"
    TSU_PROGRESS=manual $NEW/tools/tsurun/tsurun -n $N --timeout 300 env LD_LIBRARY_PATH=$b/src $NEW/bench/tsu-bench coll --max 1048576 --yield | grep -E "(gather|alltoall).*(262144|1048576) B"
  done
  echo "== openmpi"
  mpirun --allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1 -np $N $NEW/bench/peers/tsu-peers-mpi coll --max 1048576 | grep -E "(gather|alltoall).*(262144|1048576) B"
done
