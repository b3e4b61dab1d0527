#!/bin/bash
# device_run.sh: the many-rank start-up curve (issue 11, docs/scaling.md) and
# a few thread/rank scaling figures on the 16-core device machine, from the
# bundle make_bundle.sh built (run at the repository root; results to $OUT).
set -u
B=$PWD/.devbundle
export LD_LIBRARY_PATH=$B/lib PATH=$B/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p "$O"
ulimit -n 65536 2>/dev/null || ulimit -n 4096
{ date -u; uname -r; nproc; grep -m1 'model name' /proc/cpuinfo; free -g | head -2
  df -h /dev/shm | tail -1; echo "ulimit -n $(ulimit -n)"; cat /proc/loadavg; } >"$O/machine.txt" 2>&1
cat "$O/machine.txt"
tsu-bench limits --sizes 8 --reps 3 --duration-ms 30 >"$O/limits.txt" 2>&1
grep -E 'round trip|memcpy' "$O/limits.txt" | head -4
scale=tests/scaling/startup_scaling.sh
{
  echo "== ranks posing as nodes of 4"
  TSU_SCALING_LIMIT=100 timeout 400 bash $scale $B/bin/tsurun $B/bin/startup_rank 4 16 32 64 128 256 512
  echo "== nodes of 16"
  TSU_SCALING_LIMIT=100 timeout 200 bash $scale $B/bin/tsurun $B/bin/startup_rank 16 64 256 512
  echo "== layout hidden (every record fetched), nodes of 4"
  for n in 64 256 512; do
    TSU_STATS=1 TSU_PROGRESS=manual TSU_SEGMENT_SIZE=256K timeout 130 tsurun -n $n --timeout 120 \
      sh -c 'TSU_NODE_ID=$((TSU_RANK/4)) exec startup_rank' 2>&1 |
      awk -v n=$n '/bootstrap: requests=/ { for (i = 1; i <= NF; i++) { split($i, kv, "=");
        if (kv[1] == "requests" && kv[2] > m) m = kv[2] } c++ }
        END { printf "ranks=%d reporting=%d max_requests_per_rank=%d\n", n, c, m }'
  done
  echo "== 1024 ranks, nodes of 4"
  TSU_SCALING_LIMIT=150 timeout 200 bash $scale $B/bin/tsurun $B/bin/startup_rank 4 1024
} 2>&1 | tee "$O/scaling.txt"
{
  echo "== ult_tree_search 22, one worker per rank"
  for n in 1 2 4 8 16; do TSU_ULT_WORKERS=1 timeout 60 tsurun -n $n ult_tree_search 22 2>&1 | head -3; done
  echo "== engine path (TSU_BYPASS=0), 8 B, threads 1..8"
  TSU_BYPASS=0 timeout 90 tsurun -n 2 tsu-bench rma --ops put,get,fadd --threads 1,2,4,8 --sizes 8 \
    --reps 3 --duration-ms 30 --pin 2>&1 | grep -E '^\|'
  echo "== tsu-bench ult (local rows)"
  timeout 90 tsurun -n 1 tsu-bench ult --reps 5 --iters 200000 2>&1 | grep -E '^\|'
} 2>&1 | tee "$O/threads.txt"
