#!/bin/bash
# device_run8.sh: the raw jump loop (fctx_reps.cpp) plain, with a vzeroupper
# before each repetition, and before every jump: 3 runs of each, 10 reps;
# then tsu-bench ult's rows once more for the same minutes.
B=$PWD/.devbundle
export LD_LIBRARY_PATH=$B/lib PATH=$B/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p "$O"
{
  grep -m1 -o 'avx512[a-z]*' /proc/cpuinfo | head -1; grep -m1 "model\s*:" /proc/cpuinfo; grep -m1 "cpu family" /proc/cpuinfo
  for r in 1 2 3; do for m in 0 1 2; do timeout 30 fctx_reps 10 $m; done; done
  echo "== tsu-bench ult"; timeout 90 tsurun -n 1 tsu-bench ult --reps 7 --iters 200000 2>&1 | grep -E '^\| (switch|create|mutex)'
} 2>&1 | tee "$O/vzeroupper.txt"
