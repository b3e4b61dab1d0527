#!/bin/bash
# device_run4.sh: the collectives against Open MPI (bench/msg/run_coll.sh,
# the issue's own script) on the 16-core device machine, where the 2-core
# VM's load cannot blur them.  Bundles as for device_run.sh, plus a build
# tree of copies for the script:
#   mkdir -p .devbundle/build/tools/tsurun .devbundle/build/bench/peers
#   cp build/release/tools/tsurun/tsurun .devbundle/build/tools/tsurun/
#   cp build/release/bench/tsu-bench .devbundle/build/bench/
#   cp build/release/bench/peers/tsu-peers-mpi .devbundle/build/bench/peers/
set -u
B=$PWD/.devbundle
export PB=$B/peers
. docs/bench-data/session_2026-11-28g/peer_env.sh
export LD_LIBRARY_PATH=$B/lib:$LD_LIBRARY_PATH PATH=$B/bin:$PATH
export PMIX_MCA_pcompress_base_silence_warning=1
O=${OUT:-/tmp/out}; mkdir -p "$O"
{ nproc; cat /proc/loadavg; } >"$O/coll_machine.txt"
RAW=$O/coll.raw timeout 500 sh bench/msg/run_coll.sh "$B/build" "${RUNS:-5}" 2 4 2>&1 | tee "$O/coll.txt"
