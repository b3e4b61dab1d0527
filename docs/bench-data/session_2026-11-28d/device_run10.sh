#!/bin/bash
# device_run10.sh: which action between repetitions turns the raw jump loop
# slow on the Xeon (fctx_when.cpp), 2 runs of each.
B=$PWD/.devbundle
export LD_LIBRARY_PATH=$B/lib PATH=$B/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p "$O"
{ for r in 1 2; do for a in none snprintf memset strlen write sleep; do timeout 20 fctx_when $a 2>/dev/null; done; done; } 2>&1 | tee "$O/when_action.txt"
