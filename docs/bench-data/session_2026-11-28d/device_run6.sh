#!/bin/bash
# device_run6.sh: why tsu-bench ult's raw-jump row reads 73-98 ns per switch
# on the 16-core Xeon while fctx_probe alone reads 5-8: the same probe and
# the same row run with and without tsurun, with libtsunagi preloaded,
# pinned, and the processes' speculation-control state printed.
B=$PWD/.devbundle
export LD_LIBRARY_PATH=$B/lib PATH=$B/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p "$O"
row() { grep -E '^\| switch|^\| create' ; }
{
  echo "== kernel: $(uname -r)"; grep -m1 "model name" /proc/cpuinfo
  for f in /sys/devices/system/cpu/vulnerabilities/spectre_v2 /sys/devices/system/cpu/vulnerabilities/spec_store_bypass; do echo "$f: $(cat $f)"; done
  echo "== speculation state: shell / under tsurun"
  grep Specul /proc/self/status
  timeout 20 tsurun -n 1 grep Specul /proc/self/status
  for r in 1 2; do
    echo "== [$r] fctx_probe alone"; timeout 30 fctx_probe | head -3
    echo "== [$r] fctx_probe under tsurun -n 1"; timeout 30 tsurun -n 1 fctx_probe | head -3
    echo "== [$r] fctx_probe with libtsunagi preloaded"; LD_PRELOAD=$B/lib/libtsunagi.so.0 timeout 30 fctx_probe | head -3
    echo "== [$r] tsu-bench ult under tsurun"; timeout 60 tsurun -n 1 tsu-bench ult --reps 5 --iters 200000 2>&1 | row
    echo "== [$r] tsu-bench ult singleton (no tsurun)"; timeout 60 tsu-bench ult --reps 5 --iters 200000 2>&1 | row
    echo "== [$r] tsu-bench ult under tsurun, taskset -c 3"; timeout 60 taskset -c 3 tsurun -n 1 tsu-bench ult --reps 5 --iters 200000 2>&1 | row
  done
} 2>&1 | tee "$O/raw_row2.txt"
