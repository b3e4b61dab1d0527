#!/bin/bash
# device_run2.sh: where a large job's start-up time goes.  Per job size, the
# launcher alone (tsurun -n N /bin/true: fork, exec, reap, output pipes) beside
# the start-up program (the same plus tsu_init's bootstrap), with tsurun's own
# CPU time sampled from /proc; then the scaling script at 2048 ranks if the
# fd limit allows (tsurun holds ~3 fds per rank).
set -u
B=$PWD/.devbundle
export LD_LIBRARY_PATH=$B/lib PATH=$B/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p "$O"
echo "ulimit soft/hard before: $(ulimit -n)/$(ulimit -Hn)"
ulimit -Hn 1048576 2>/dev/null; ulimit -n "$(ulimit -Hn)" 2>/dev/null
echo "ulimit after: $(ulimit -n)"
tck=$(getconf CLK_TCK)
job() {  # job N PROG...: prints wall ms and tsurun's own cpu ms
  local n=$1; shift
  local t0; t0=$(date +%s%N)
  TSU_PROGRESS=manual TSU_SEGMENT_SIZE=256K tsurun -n "$n" --ranks-per-node 4 --timeout 120 "$@" >/tmp/job.out 2>&1 &
  local pid=$! cpu=0 s
  while s=$(cat /proc/$pid/stat 2>/dev/null); do
    set -- $s; [ "$3" = Z ] && break; cpu=$(( ${14} + ${15} )); sleep 0.01
  done
  wait $pid; local rc=$?
  echo "wall_ms=$(( ($(date +%s%N) - t0) / 1000000 )) tsurun_cpu_ms=$(( cpu * 1000 / tck )) rc=$rc lines=$(wc -l </tmp/job.out)"
}
{
  for n in 256 1024; do
    for r in 1 2; do
      echo "n=$n round=$r /bin/true:     $(job $n /bin/true)"
      echo "n=$n round=$r startup_rank:  $(job $n $B/bin/startup_rank)"
    done
  done
  if [ "$(ulimit -n)" -ge 8192 ]; then
    TSU_SCALING_LIMIT=150 timeout 200 bash tests/scaling/startup_scaling.sh $B/bin/tsurun $B/bin/startup_rank 4 2048
    echo "n=2048 /bin/true: $(job 2048 /bin/true)"
  else
    echo "2048 ranks skipped: fd limit $(ulimit -n)"
  fi
} 2>&1 | tee "$O/launch.txt"
