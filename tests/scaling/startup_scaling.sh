#!/bin/bash
# startup_scaling.sh TSURUN PROG K N1 [N2 ...]
# Starts PROG (startup_rank) on N1, N2, ... ranks posing as nodes of K ranks
# (tsurun --ranks-per-node K; or, when TSURUN is a path to Open MPI's mpirun,
# under mpirun and the PMIx bootstrap), manual progress, and prints one line per job
# size: ranks started, bootstrap requests and bytes per rank (TSU_STATS=1),
# udp address lookups, per-rank memory, and the whole job's wall time
# (tsurun start to exit).  Fails unless every rank of every
# job started and the most bootstrap requests any rank made stays the same
# as the job grows (no all-to-all exchange at start-up).  docs/scaling.md.
set -u
tsurun=$1 prog=$2 k=$3
shift 3
limit=${TSU_SCALING_LIMIT:-120}
first_max=
status=0
printf "%6s %6s %8s %14s %16s %12s %12s %12s %12s %10s\n" ranks nodes started "requests/rank" \
  "bytes/rank" addr_lookups rss_init_kib hwm_kib init_ms_p50 job_ms
for n in "$@"; do
  out=$(mktemp)
  t0=$(date +%s%N)
  if [ "$(basename "$tsurun")" = mpirun ]; then
    # Open MPI's mpirun (its PMIx server): ranks pose as nodes of K by
    # TSU_PLACEMENT (the PMIx bootstrap takes it before PMIX_NODEID) and a
    # node name per rank.
    TSU_STATS=1 TSU_PROGRESS=manual TSU_SEGMENT_SIZE=${TSU_SEGMENT_SIZE:-256K} \
      TSU_PLACEMENT=block:$k timeout -k 10 $((limit + 10)) \
      "$tsurun" --allow-run-as-root --oversubscribe -n "$n" \
      sh -c "TSU_NODE_ID=n\$((OMPI_COMM_WORLD_RANK / $k)) exec $prog" >"$out" 2>&1
  else
    TSU_STATS=1 TSU_PROGRESS=manual TSU_SEGMENT_SIZE=${TSU_SEGMENT_SIZE:-256K} \
      timeout -k 10 $((limit + 10)) "$tsurun" -n "$n" --ranks-per-node "$k" --timeout "$limit" \
      "$prog" >"$out" 2>&1
  fi
  rc=$?
  job_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  line=$(awk -v n="$n" '
    /startup rank=/ {
      started++
      for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      nodes = v["nodes"]; rss += v["rss_init_kib"]; hwm += v["hwm_kib"]; ms[started] = v["init_ms"]
    }
    /bootstrap: requests=/ {
      for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      b++; req = v["requests"]; by = v["bytes_out"] + v["bytes_in"]
      if (req > rmax) rmax = req; if (rmin == "" || req < rmin) rmin = req; bytes += by
    }
    /udp: peers=/ {
      for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "addr_lookups") lk += kv[2] }
    }
    END {
      for (i = 2; i <= started; i++) {  # insertion sort (mawk has no asort)
        x = ms[i] + 0; j = i - 1
        while (j >= 1 && ms[j] + 0 > x) { ms[j + 1] = ms[j]; j-- }
        ms[j + 1] = x
      }
      p50 = started ? ms[int((started + 1) / 2)] : 0
      printf "%d %d %d %s %s %.0f %d %.0f %.0f %.1f", n, nodes, started, rmin, rmax,
             b ? bytes / b : 0, lk, started ? rss / started : 0, started ? hwm / started : 0, p50
    }' "$out")
  read -r _ nodes started rmin rmax bytes lookups rss hwm p50 <<<"$line"
  printf "%6s %6s %8s %14s %16s %12s %12s %12s %12s %10s\n" "$n" "$nodes" "$started" "$rmin..$rmax" \
    "$bytes" "$lookups" "$rss" "$hwm" "$p50" "$job_ms"
  if [ "$rc" -ne 0 ] || [ "$started" != "$n" ]; then
    echo "FAIL: $n ranks: tsurun exited $rc, $started of $n ranks reported"
    tail -20 "$out"
    status=1
  elif [ -z "$first_max" ]; then
    first_max=$rmax
  elif [ "$rmax" -gt "$first_max" ]; then
    echo "FAIL: $n ranks: a rank made $rmax bootstrap requests, $first_max at the smallest job:"
    echo "      start-up traffic per rank grows with the job"
    status=1
  fi
  rm -f "$out"
done
[ "$status" -eq 0 ] && echo "OK: every rank started; bootstrap requests per rank stay at ${first_max}"
exit $status
