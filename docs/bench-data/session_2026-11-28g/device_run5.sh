#!/bin/bash
# device_run5.sh: the collectives A/B on the 16-core device machine: main
# before this session's 2-member reduce (old: its libtsunagi under the same
# tsu-bench, by a wrapper that sets LD_LIBRARY_PATH) against this change,
# with Open MPI in every run (bench/msg/run_coll.sh's OLD= mode).  Bundles as
# for device_run4.sh, plus .devbundle/oldlib/libtsunagi.so.0 and
# .devbundle/oldbuild/{tools/tsurun/tsurun,bench/tsu-bench (the wrapper)}.
set -u
B=$PWD/.devbundle
export PB=$B/peers
. docs/bench-data/session_2026-11-28g/peer_env.sh
export LD_LIBRARY_PATH=$B/lib:$LD_LIBRARY_PATH PATH=$B/bin:$PATH
export PMIX_MCA_pcompress_base_silence_warning=1
O=${OUT:-/tmp/out}; mkdir -p "$O"
OLD=$B/oldbuild RAW=$O/coll_ab.raw timeout 500 sh bench/msg/run_coll.sh "$B/build" "${RUNS:-5}" 2 4 2>&1 |
  grep -v 'pmix_mca_base\|dlopen error\|Perhaps a missing' | tee "$O/coll_ab.txt"
