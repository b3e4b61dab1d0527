#!/usr/bin/env bash
# tsu-bench am (thread mode by default), old and new library alternating
# (who goes first alternates), same binary, library by LD_LIBRARY_PATH.
#   am_ab.sh OLD_BUILD NEW_BUILD ROUNDS   (from the repository root; B = binaries' build)
set -u
old=$(realpath "$1") new=$(realpath "$2") rounds=${3:-6} B=${B:-build/release}
for ((r = 1; r <= rounds; r++)); do
  order="old new"; ((r % 2 == 0)) && order="new old"
  for side in $order; do
    d=${!side}
    out=$(LD_LIBRARY_PATH=$d/src timeout 120 "$B/tools/tsurun/tsurun" -n 2 "$B/bench/tsu-bench" am --threads 1 2>&1)
    echo "round $r $side rt_us $(grep -o 'reply): [0-9.]*' <<<"$out" | cut -d' ' -f2) rate_M $(grep -o '[0-9.]* M msg/s' <<<"$out" | cut -d' ' -f1)"
  done
done
