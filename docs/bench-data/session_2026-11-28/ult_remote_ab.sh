#!/usr/bin/env bash
# Remote create+join A/B: the same tsu-bench, libraries by LD_LIBRARY_PATH,
# old and new alternating, ROUNDS runs each, manual progress, 2 ranks.
# PROGRESS: manual (default) or thread.  BIN / RUN: the tsu-bench and tsurun to use (default: NEW_BUILD's).
#   ult_remote_ab.sh OLD_BUILD NEW_BUILD ROUNDS   (from the repository root)
set -u
old=$(realpath "$1") new=$(realpath "$2") rounds=${3:-5}
bin=${BIN:-$new/bench/tsu-bench} run=${RUN:-$new/tools/tsurun/tsurun}
for ((r = 1; r <= rounds; r++)); do
  order="old new"; ((r % 2 == 0)) && order="new old"  # who goes first alternates
  for side in $order; do
    b=${!side}
    line=$(LD_LIBRARY_PATH=$b/src/ult:$b/src TSU_PROGRESS=${PROGRESS:-manual} TSU_ULT_SPIN_US=10000000 \
      timeout 120 "$run" -n 2 "$bin" ult --reps 3 --iters 200000 --remote-only 2>&1 |
      grep "remote create")
    echo "round $r $side $(uptime | sed 's/.*load average: //') $line"
  done
done
