#!/bin/sh
# Seed 004 figure 7 on this machine: pre-posted pingpong for normal eager,
# single-copy eager and rendezvous, on different cores (0,1) and on one core
# (0,0), the plain pingpong, the message rate, and Open MPI's pingpong and
# message rate in the same run.
# Usage: bench/msg/run_pingpong.sh [BUILD_DIR]   (default build/release)
# PRIO="chrt -f 10" runs every job at a real-time priority: on this shared
# 2-core machine other sessions' jobs then cannot take the benchmark's cores.
B=${1:-build/release}
PRIO=${PRIO:-}
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
  env TSU_PROGRESS=manual $RUN $BENCH pingpong --cpus $cpus $Y
  env TSU_PROGRESS=manual $RUN $BENCH pingpong --prepost --cpus $cpus $Y
  # Message rate with a window of 64 pre-posted receives: eager, single-copy.
  env TSU_PROGRESS=manual TSU_SCEAGER=0 $RUN $BENCH stream --min 8 --max 8192 --cpus $cpus $Y
  env TSU_PROGRESS=manual TSU_SCEAGER_MIN=0 $RUN $BENCH stream --min 8 --max 8192 --cpus $cpus $Y
  if [ -x "$B/bench/peers/tsu-peers-mpi" ] && command -v mpirun >/dev/null; then
    MPI="$PRIO mpirun --allow-run-as-root --oversubscribe $YM -np 2"
    $MPI "$B/bench/peers/tsu-peers-mpi" pingpong --cpus $cpus
    $MPI "$B/bench/peers/tsu-peers-mpi" pingpong --prepost --cpus $cpus
    $MPI "$B/bench/peers/tsu-peers-mpi" stream --min 8 --max 8192 --cpus $cpus
  else
    echo "# Open MPI peer benchmark skipped: mpirun or tsu-peers-mpi missing"
  fi
done
