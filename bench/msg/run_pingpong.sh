#!/bin/sh
# Seed 004 figure 7 on this machine: pre-posted pingpong for normal eager,
# single-copy eager and rendezvous, on different cores (0,1) and on one core
# (0,0), the plain pingpong, the message rate, and Open MPI's pingpong and
# message rate in the same run.  tsunagi's default-settings jobs and Open
# MPI's run interleaved, ROUNDS times (a pair back to back in each round),
# and bench/msg/side_by_side.py prints the medians and per-round ratios.
# Usage: bench/msg/run_pingpong.sh [BUILD_DIR]   (default build/release)
# PRIO="chrt -f 10" runs every job at a real-time priority: on this shared
# 2-core machine other sessions' jobs then cannot take the benchmark's cores.
# ROUNDS (default 3): interleaved rounds of the jobs beside Open MPI.
B=${1:-build/release}
PRIO=${PRIO:-}
ROUNDS=${ROUNDS:-3}
HERE=$(dirname "$0")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
RUN="$PRIO $B/tools/tsurun/tsurun -n 2 --timeout 300"
BENCH="$B/bench/tsu-bench"
BIG="TSU_SHM_SLOT_SIZE=1048640 TSU_SHM_RING_SLOTS=8 TSU_EAGER_MAX=1048576"
for cpus in 0,1 0,0; do
  # One core: both sides yield while they wait (tsu --yield, Open MPI
  # mpi_yield_when_idle), else each waits out the other's time slice.
  Y=""; YM=""
  [ "$cpus" = 0,0 ] && Y=--yield && YM="--mca mpi_yield_when_idle 1"
  echo "## cpus $cpus"
  env TSU_PROGRESS=manual $BIG TSU_SCEAGER=0 $RUN $BENCH pingpong --prepost --cpus $cpus $Y
  env TSU_PROGRESS=manual $BIG TSU_SCEAGER=1 TSU_SCEAGER_MIN=0 $RUN $BENCH pingpong --prepost --cpus $cpus $Y
  env TSU_PROGRESS=manual TSU_EAGER_MAX=0 $RUN $BENCH pingpong --prepost --cpus $cpus $Y
  # Message rate with a window of 64 pre-posted receives: eager, single-copy.
  env TSU_PROGRESS=manual TSU_SCEAGER=0 $RUN $BENCH stream --min 8 --max 8192 --cpus $cpus $Y
  env TSU_PROGRESS=manual TSU_SCEAGER_MIN=0 $RUN $BENCH stream --min 8 --max 8192 --cpus $cpus $Y
  # Default settings beside Open MPI, interleaved.
  MPI="$PRIO mpirun --allow-run-as-root --oversubscribe $YM -np 2"
  PEER="$B/bench/peers/tsu-peers-mpi"
  if [ ! -x "$PEER" ] || ! command -v mpirun >/dev/null; then
    echo "# Open MPI peer benchmark skipped: mpirun or tsu-peers-mpi missing"
    PEER=""
  fi
  rm -f "$TMP"/*
  r=1
  while [ "$r" -le "$ROUNDS" ]; do
    echo "# round $r of $ROUNDS (cpus $cpus): tsunagi default settings, then Open MPI"
    env TSU_PROGRESS=manual $RUN $BENCH pingpong --cpus $cpus $Y | tee "$TMP/tsu_plain.$r"
    [ -n "$PEER" ] && $MPI "$PEER" pingpong --cpus $cpus | tee "$TMP/mpi_plain.$r"
    env TSU_PROGRESS=manual $RUN $BENCH pingpong --prepost --cpus $cpus $Y | tee "$TMP/tsu_prepost.$r"
    [ -n "$PEER" ] && $MPI "$PEER" pingpong --prepost --cpus $cpus | tee "$TMP/mpi_prepost.$r"
    env TSU_PROGRESS=manual $RUN $BENCH stream --min 8 --max 8192 --cpus $cpus $Y | tee "$TMP/tsu_stream.$r"
    [ -n "$PEER" ] && $MPI "$PEER" stream --min 8 --max 8192 --cpus $cpus | tee "$TMP/mpi_stream.$r"
    r=$((r + 1))
  done
  echo "## cpus $cpus: side by side"
  python3 "$HERE/side_by_side.py" "$TMP"
done
