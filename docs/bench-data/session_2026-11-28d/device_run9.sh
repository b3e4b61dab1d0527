#!/bin/bash
# device_run9.sh: when does the raw jump loop turn slow: after a 20 ms sleep
# before the first repetition, and by repetitions of 10000 pairs (~0.15 ms
# fast) from the start of the process.
B=$PWD/.devbundle
export LD_LIBRARY_PATH=$B/lib PATH=$B/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p "$O"
{
  for r in 1 2; do timeout 30 fctx_reps 6 3; done
  for r in 1 2 3; do timeout 30 fctx_reps 60 0 10000; done
} 2>&1 | tee "$O/when_slow.txt"
