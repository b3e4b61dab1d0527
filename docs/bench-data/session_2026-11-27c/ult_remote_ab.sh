#!/bin/bash
# Interleaved A/B of the ULT remote rows: old library (/work/wt-base, main at
# c7c6017) vs this branch's, same tsu-bench binary (this branch's build; its
# RUNPATH loses to LD_LIBRARY_PATH, checked with LD_DEBUG=libs).
# usage: [FIRST=n] ult_remote_ab.sh ROUNDS [MODE...]   MODE: manual (default) | thread
cd "$(dirname "$0")/../../.." || exit 1
out=docs/bench-data/session_2026-11-27c
first=${FIRST:-1}
rounds=${1:-5}; shift
modes=${*:-manual}
old=/work/wt-base/build/release
new=$PWD/build/release
for r in $(seq "$first" $((first + rounds - 1))); do
  for mode in $modes; do
    for side in old new; do
      lib=$old; [ $side = new ] && lib=$new
      f=$out/ult_remote_${mode}_r${r}_${side}.txt
      [ -e "$f" ] && f=$out/ult_remote_${mode}_r${r}_${side}_$(date +%H%M%S).txt
      {
        echo "# $(date -u +%FT%TZ) side=$side lib=$lib mode=$mode"
        echo "# uptime before: $(uptime)"
        if [ $mode = manual ]; then
          LD_LIBRARY_PATH=$lib/src:$lib/src/ult TSU_PROGRESS=manual TSU_ULT_SPIN_US=10000000 \
            build/release/tools/tsurun/tsurun -n 2 build/release/bench/tsu-bench ult --reps 7 --iters 200000
        else
          LD_LIBRARY_PATH=$lib/src:$lib/src/ult \
            build/release/tools/tsurun/tsurun -n 2 build/release/bench/tsu-bench ult --reps 7 --iters 200000
        fi
        echo "# uptime after: $(uptime)"
      } > "$f" 2>&1
      echo "$f: $(grep -E 'remote create|remote spawn' "$f" | sed 's/|/ /g' | tr -s ' ' | cut -c1-160 | tr '\n' ';')"
    done
  done
done
