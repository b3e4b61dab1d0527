#!/bin/bash
# device_run4.sh: why tsu-bench ult's raw fcontext row read 79 ns per jump on
# the 16-core Xeon (above tsunagi-ult's own 10.9 ns switch): the same jump
# pair with the other context's stack on the heap (as tsu-bench) and on
# mmap'd pages at several offsets (fctx_probe.cpp), three runs, beside
# tsu-bench ult's local rows.
B=$PWD/.devbundle
export LD_LIBRARY_PATH=$B/lib PATH=$B/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p "$O"
{
  for i in 1 2 3; do echo "== fctx_probe run $i"; fctx_probe; done
  for i in 1 2; do echo "== tsu-bench ult run $i"; timeout 60 tsurun -n 1 tsu-bench ult --reps 5 --iters 200000 2>&1 | grep -E '^\| (switch|create)'; done
} 2>&1 | tee "$O/fctx.txt"
