#!/bin/sh
# ab.sh OUT ROUNDS OP ITERS REPS BYTES N VARIANTS...: interleaved rounds, MPI last in each
OUT=$1 R=$2 OP=$3 IT=$4 RP=$5 BY=$6 N=$7; shift 7
for i in $(seq $R); do
  for v in "$@"; do
    echo "load $(cut -d' ' -f1 /proc/loadavg) round $i" >> $OUT
    echo -n "$v: " >> $OUT; /tmp/cb/run.sh /tmp/cb/$v $OP $IT $RP $BY $N >> $OUT
  done
  MOP=$OP; [ $OP = bcast ] && MOP=bcast
  echo -n "mpi: " >> $OUT; mpirun --allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1 -np $N /tmp/cb/mb $MOP $IT $RP $BY >> $OUT
done
