#!/usr/bin/env bash
# Builds the fuzzers with clang and runs each: the udp datagram parser and
# the bootstrap wire decoder / request parser.
#   tests/fuzz/run_fuzz.sh [SECONDS]     (default 20 each: the CI run)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
secs=${1:-20}
command -v clang++ >/dev/null || { echo "SKIPPED: clang++ not installed"; exit 77; }
cmake -S "$root" -B "$root/build/fuzz" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DTSU_BUILD_TESTS=ON \
  -DTSU_BUILD_BENCH=OFF -DTSU_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$root/build/fuzz" --target tsu_fuzz_datagram tsu_fuzz_bootstrap
mkdir -p "$root/build/fuzz/corpus" "$root/build/fuzz/corpus-bootstrap"
echo "=== fuzz: udp datagram parser (${secs} s)"
"$root/build/fuzz/tests/fuzz/tsu_fuzz_datagram" -max_total_time="$secs" -max_len=2048 \
  -print_final_stats=1 "$root/build/fuzz/corpus"
echo "=== fuzz: bootstrap wire decoder and request parser (${secs} s)"
"$root/build/fuzz/tests/fuzz/tsu_fuzz_bootstrap" -max_total_time="$secs" -max_len=4096 \
  -print_final_stats=1 "$root/build/fuzz/corpus-bootstrap"
