#!/bin/bash
# device_run7.sh: every repetition of the raw jump loop (fctx_reps.cpp, the
# loop and sizes of tsu-bench ult's limit row), 5 runs of 15 reps, and the
# row itself with 15 reps: bimodal per repetition, or slow inside tsu-bench?
B=$PWD/.devbundle
export LD_LIBRARY_PATH=$B/lib PATH=$B/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p "$O"
{
  for r in 1 2 3 4 5; do echo "== fctx_reps run $r"; timeout 30 fctx_reps 15; done
  for r in 1 2; do echo "== tsu-bench ult --reps 15, run $r"; timeout 90 tsurun -n 1 tsu-bench ult --reps 15 --iters 200000 2>&1 | grep -E '^\| switch'; done
} 2>&1 | tee "$O/raw_reps.txt"
