#!/bin/bash
# device_run.sh: on the 16-core device machine, run from the repository root
# with the bundles made here:
#   docs/bench-data/session_2026-11-28c/make_bundle.sh build/release .devbundle
#   docs/bench-data/session_2026-11-28g/make_peer_bundle.sh .devbundle/peers
# 1. the engine path's 8 B rate and latency by issuing threads with 1, 2, 4
#    and 8 consumers (TSU_PROGRESS_THREADS), two interleaved rounds, beside
#    the bypass, MPI-3 RMA (osc/sm) and UCX (ucx_perftest, sm) in the same run
#    (issue 16);
# 2. start-up under Open MPI's mpirun (the PMIx bootstrap) by rank count,
#    beside tsurun (issue 11, docs/scaling.md).
# QUICK=1: small sizes, to check the script here.  Results under $OUT.
set -u
B=$PWD/.devbundle
export PB=$B/peers
. docs/bench-data/session_2026-11-28g/peer_env.sh
export LD_LIBRARY_PATH=$B/lib:$LD_LIBRARY_PATH PATH=$B/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p "$O"
ulimit -n 65536 2>/dev/null || ulimit -n 4096
quick=${QUICK:-0}
if [ "$quick" = 1 ]; then threads=1,2 lanes="1 2" rounds=1 dur=10 reps=1 sizes="8 16"
else threads=1,2,4,8 lanes="1 2 4 8" rounds=2 dur=30 reps=3 sizes="16 64 256 512 1024"; fi
{ date -u; uname -r; nproc; grep -m1 'model name' /proc/cpuinfo; free -g | head -2
  echo "ulimit -n $(ulimit -n)"; cat /proc/loadavg; } >"$O/machine.txt" 2>&1
cat "$O/machine.txt"
tsu-bench limits --sizes 8 --reps "$reps" --duration-ms "$dur" 2>&1 | grep -E '^\|' >"$O/limits.txt"
grep -iE 'round|xadd' "$O/limits.txt"
{
  for round in $(seq "$rounds"); do
    for k in $lanes; do
      echo "== round $round TSU_BYPASS=0 TSU_PROGRESS_THREADS=$k $(cut -d' ' -f1 /proc/loadavg)"
      TSU_STATS=1 TSU_BYPASS=0 TSU_PROGRESS_THREADS=$k timeout 120 tsurun -n 2 tsu-bench rma \
        --ops put,get,fadd --threads "$threads" --sizes 8 --reps "$reps" --duration-ms "$dur" \
        --pin 2>&1 | grep -E '^\| (put|get|fadd)|lanes=' | sed -E 's/^(tsunagi\[0\]).*(lanes=)/\1 \2/'
    done
  done
  echo "== bypass (TSU_BYPASS=1), for reference"
  timeout 120 tsurun -n 2 tsu-bench rma --ops put,get,fadd --threads "$threads" --sizes 8 \
    --reps "$reps" --duration-ms "$dur" --pin 2>&1 | grep -E '^\| (put|get|fadd)'
} 2>&1 | tee "$O/engine.txt"
{
  echo "== MPI-3 RMA, Open MPI osc/sm"
  OMPI_MCA_osc=sm timeout 120 mpirun --allow-run-as-root --oversubscribe -n 2 mpi-rma-bench \
    --reps "$reps" --duration-ms "$dur" 2>&1 | grep -E ' 8 \||rate|^## '
  echo "== UCX ucx_perftest, sm"
  q=; [ "$quick" = 1 ] && q=--quick
  timeout 150 python3 bench/peers/ucx_perftest_json.py $q --reps "$reps" --json "$O/ucx.jsonl" 2>&1 |
    grep -vE '^\s*$' | head -40
} 2>&1 | tee "$O/peers.txt"
scale=tests/scaling/startup_scaling.sh
{
  echo "== mpirun alone: /bin/true"
  for n in ${sizes##* }; do
    s=$(date +%s%N)
    timeout 120 mpirun --allow-run-as-root --oversubscribe -n "$n" /bin/true
    echo "mpirun -n $n /bin/true: rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms"
    s=$(date +%s%N)
    timeout 120 tsurun -n "$n" /bin/true
    echo "tsurun -n $n /bin/true: rc=$? $(( ($(date +%s%N) - s) / 1000000 )) ms"
  done
  echo "== under mpirun (PMIx bootstrap), ranks posing as nodes of 4"
  TSU_SCALING_LIMIT=120 timeout 400 bash $scale "$(command -v mpirun)" $B/bin/startup_rank 4 $sizes
  echo "== under tsurun, the same sizes"
  TSU_SCALING_LIMIT=120 timeout 300 bash $scale $B/bin/tsurun $B/bin/startup_rank 4 $sizes
} 2>&1 | tee "$O/pmix_scaling.txt"
