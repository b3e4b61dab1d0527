#!/bin/bash
# am_ab.sh OLD_BUILD NEW_BUILD ROUNDS: shm AM round trip and message rate
# (tsu-bench am, 2 ranks on CPUs 0 and 1, manual progress) with the old and
# the new library interleaved (order alternating per round), NEW's binaries;
# then median / mean / p99 over rounds per side.
set -u
old=$1 new=$2 rounds=$3 out=$(mktemp)
for r in $(seq "$rounds"); do
  sides="A B"; [ $((r % 2)) -eq 0 ] && sides="B A"
  for v in $sides; do
    d=$old; [ "$v" = B ] && d=$new
    LD_LIBRARY_PATH=$d/src TSU_PROGRESS=manual "$new/tools/tsurun/tsurun" -n 2 "$new/bench/tsu-bench" am --cpus 0 1 2>&1 |
      awk -v v="$v" '/round trip/ {print v, "rt_us", $(NF-1)} /message rate/ {print v, "rate_M", $(NF-6)}'
  done
done >"$out"
python3 - "$out" <<'PY'
import sys, statistics as st
d = {}
for line in open(sys.argv[1]):
    v, k, x = line.split(); d.setdefault((k, v), []).append(float(x))
for k in ("rt_us", "rate_M"):
    for v in "AB":
        xs = sorted(d.get((k, v), []))
        if xs:
            p99 = xs[min(len(xs) - 1, int(len(xs) * 0.99))]
            print(f"{k} {'old' if v == 'A' else 'new'}: median {st.median(xs):.3f} mean {st.mean(xs):.3f} p99 {p99:.3f} min {xs[0]:.3f} (n={len(xs)})")
PY
rm -f "$out"
