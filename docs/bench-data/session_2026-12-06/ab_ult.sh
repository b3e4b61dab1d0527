#!/usr/bin/env bash
# Interleaved A/B of libtsunagi-ult builds: ROUNDS rounds, each lib in turn.
# (As run on 2026-12-06: the libraries copied to /tmp/<label-dir>, tsurun and the
# benchmark binary of main 2bd38b9 in /tmp/old-lib.)
#   ab_ult.sh ROUNDS label=libdir [label=libdir ...]
rounds=$1; shift
for r in $(seq "$rounds"); do
  for spec in "$@"; do
    label=${spec%%=*}; dir=${spec#*=}
    extra=""
    [[ $label == *exact* ]] && extra="TSU_ULT_FP_FLAGS=exact"
    env $extra LD_LIBRARY_PATH=$dir chrt -f 10 /tmp/old-lib/tsurun -n 1 /tmp/old-lib/tsu-bench.old ult --reps 5 --iters 200000 2>&1 |
      grep -E '^\| (switch|create)' | sed "s/^/$label r=$r /"
  done
done
