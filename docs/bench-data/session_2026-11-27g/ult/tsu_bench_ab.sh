#!/bin/bash
# interleaved A/B of tsu-bench ult local rows: old lib vs new lib, same binary
OLD=$1; NEW=$2; ROUNDS=$3; OUT=$4
mkdir -p $OUT
B=/work/main/build/release
for r in $(seq 1 $ROUNDS); do
  for which in old new; do
    L=$OLD; [ $which = new ] && L=$NEW
    echo "# round $r $which load $(cut -d' ' -f1-3 /proc/loadavg) $(date +%T)" > $OUT/r${r}_$which.txt
    LD_LIBRARY_PATH=$L/src/ult:$L/src $B/tools/tsurun/tsurun -n 1 $B/bench/tsu-bench ult --reps 7 --iters 200000 >> $OUT/r${r}_$which.txt 2>&1
  done
done
