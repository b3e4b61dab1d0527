#!/bin/bash
# run_job.sh mpirun|srun N K [--expect-fail TEXT] -- [RANK=VAR=VALUE ...] -- PROG ARGS...
# Runs PROG on N ranks under a real PMIx launcher (Open MPI's mpirun, or srun
# --mpi=pmix of the local Slurm the slurm fixture started), the ranks posing
# as nodes of K ranks (as_node.sh).  Passes when the job exits 0, or with
# --expect-fail when it exits non-zero and its output contains TEXT (a job
# whose rank fails must end, not hang).  Bounded by TSU_LAUNCHER_LIMIT
# seconds (default 60).  Prints SKIPPED with the reason when the launcher
# cannot run here.
set -u
here=$(cd "$(dirname "$0")" && pwd)
launcher=$1 n=$2 k=$3
shift 3
expect_fail=
if [ "${1:-}" = "--expect-fail" ]; then
  expect_fail=$2
  shift 2
fi
[ "${1:-}" = "--" ] && shift
limit=${TSU_LAUNCHER_LIMIT:-60}

case "${TSU_PMIX_BUILT:-1}" in
  1|TRUE|ON) ;;
  *)
    echo "SKIPPED: this build has no PMIx bootstrap (libpmix-dev was not found at configure time)"
    exit 0
    ;;
esac

case "$launcher" in
  mpirun)
    if ! command -v mpirun >/dev/null; then
      echo "SKIPPED: mpirun not found (Debian package openmpi-bin)"
      exit 0
    fi
    # Root is refused unless confirmed; Open MPI's own channels stay on lo.
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    cmd=(mpirun --oversubscribe --bind-to none -n "$n" --mca oob_tcp_if_include lo
         --mca btl_tcp_if_include lo)
    ;;
  srun)
    conf=${TSU_SLURM_DIR:?TSU_SLURM_DIR is set by the test}/slurm.conf
    if [ -f "$TSU_SLURM_DIR/skip" ]; then
      echo "SKIPPED: $(cat "$TSU_SLURM_DIR/skip")"
      exit 0
    fi
    if [ ! -f "$conf" ]; then
      echo "SKIPPED: the local Slurm cluster was not started (fixture launchers.slurm.start did not run)"
      exit 0
    fi
    export SLURM_CONF=$conf
    cmd=(srun --mpi=pmix -n "$n" --overcommit --time=2 --kill-on-bad-exit=1)
    ;;
  *)
    echo "run_job.sh: unknown launcher '$launcher'" >&2
    exit 2
    ;;
esac

out=$(mktemp)
trap 'rm -f "$out"' EXIT
# The one-machine slurmd sometimes refuses a step while it still tears down
# the previous one ("aborted before step completely launched", or only
# "task N launch failed: Unspecified error" lines, the whole srun over in
# 0.12 s: seen once in CI's tsan run): that is the local cluster, not
# the program; try such a step again, waiting longer each time.  If it never
# launches, the program never ran: SKIPPED.
max=6
for attempt in $(seq $max); do
  timeout -k 10 "$limit" "${cmd[@]}" sh "$here/as_node.sh" "$k" "$@" >"$out" 2>&1
  rc=$?
  if [ "$launcher" = srun ] &&
     grep -qE "aborted before step completely launched|task [0-9]+ launch failed" "$out"; then
    if [ "$attempt" -lt $max ]; then
      echo "run_job.sh: srun could not launch the step (attempt $attempt); again in $attempt s"
      sleep "$attempt"
      continue
    fi
    cat "$out"
    echo "SKIPPED: the local slurmd refused to launch the step $max times (\"aborted before step completely launched\" or \"task N launch failed\", no task ran)"
    exit 0
  fi
  break
done
cat "$out"
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
  echo "FAIL: the job did not end within ${limit} s"
  exit 1
fi
if [ -n "$expect_fail" ]; then
  if [ "$rc" -eq 0 ]; then
    echo "FAIL: the job succeeded, but a failure was expected"
    exit 1
  fi
  if ! grep -qF -- "$expect_fail" "$out"; then
    echo "FAIL: the job failed (exit $rc) without saying '$expect_fail'"
    exit 1
  fi
  echo "OK: the job failed as expected (exit $rc)"
  exit 0
fi
if [ "$rc" -ne 0 ]; then
  echo "FAIL: $launcher exited with $rc"
  exit 1
fi
echo "OK: $launcher -n $n"
