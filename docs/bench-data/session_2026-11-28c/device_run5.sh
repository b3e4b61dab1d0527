#!/bin/bash
# device_run5.sh: which of tsu-bench ult's other threads slows its raw-jump
# row on the 16-core Xeon: the row with the defaults, without the progress
# thread (manual progress), with one ULT worker, with both, two runs each.
B=$PWD/.devbundle
export LD_LIBRARY_PATH=$B/lib PATH=$B/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p "$O"
{
  for r in 1 2; do
    for e in "X=0" "TSU_PROGRESS=manual" "TSU_ULT_WORKERS=1" "TSU_PROGRESS=manual TSU_ULT_WORKERS=1"; do
      echo "== run $r: $e"
      env $e timeout 60 tsurun -n 1 tsu-bench ult --reps 5 --iters 200000 2>&1 | grep -E '^\| switch'
    done
  done
} 2>&1 | tee "$O/raw_row.txt"
