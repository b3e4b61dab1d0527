#!/bin/sh
# coll_big.sh OLD NEW ROUNDS RANKS: 1 MiB-range cells, interleaved old/new/Open MPI
OLD=$1 NEW=$2 R=$3 N=$4
PIN=""; [ "$N" = 2 ] && PIN="--cpus 0,1"
for r in $(seq $R); do
  for b in $OLD $NEW; do
    echo "== $b load $(cut -d' ' -f1 /proc/loadavg)"
    TSU_PROGRESS=manual $NEW/tools/tsurun/tsurun -n $N --timeout 300 env LD_LIBRARY_PATH=$b/src $NEW/bench/tsu-bench coll --min 262144 --max 1048576 --yield $PIN | grep -E "(gather|alltoall).*(262144|1048576) B"
  done
  echo "== openmpi"
  mpirun --allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1 -np $N $NEW/bench/peers/tsu-peers-mpi coll --min 262144 --max 1048576 | grep -E "(gather|alltoall).*(262144|1048576) B"
done
