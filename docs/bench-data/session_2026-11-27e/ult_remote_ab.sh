#!/bin/bash
# Interleaved old/new A/B of the remote rows (branch wip-ult-remote2, issue 12).
# Usage: ult_remote_ab.sh <old build dir> <new build dir> <rounds> <out dir> [modes]
# The same tsu-bench binary (new build) runs both; the library is chosen by
# LD_LIBRARY_PATH (it wins over the binary's RUNPATH).
set -u
OLD=$1 NEW=$2 ROUNDS=$3 OUT=$4 MODES=${5:-"manual thread"}
BENCH=$NEW/bench/tsu-bench TSURUN=$NEW/tools/tsurun/tsurun
mkdir -p "$OUT"
for r in $(seq 1 "$ROUNDS"); do
  for mode in $MODES; do
    for which in old new; do
      lib=$([ $which = old ] && echo "$OLD" || echo "$NEW")
      f=$OUT/ult_remote_${mode}_r${r}_${which}.txt
      { echo "# $(date -u +%FT%TZ) load $(cut -d' ' -f1 /proc/loadavg) lib $lib mode $mode"
        if [ $mode = manual ]; then
          LD_LIBRARY_PATH=$lib/src/ult:$lib/src TSU_PROGRESS=manual TSU_ULT_SPIN_US=10000000 \
            timeout 120 "$TSURUN" -n 2 "$BENCH" ult --reps 7 --iters 200000 --remote-only
        else
          LD_LIBRARY_PATH=$lib/src/ult:$lib/src \
            timeout 120 "$TSURUN" -n 2 "$BENCH" ult --reps 7 --iters 200000 --remote-only
        fi
      } > "$f" 2>&1
      echo "$mode r$r $which: $(grep -E 'remote create' "$f" | cut -d'|' -f3,4) rate $(grep -E 'remote spawn' "$f" | cut -d'|' -f3)"
    done
  done
done
