#!/bin/bash
# make_bundle.sh BUILD DEST: copies the binaries the device run needs and
# every shared library they load (ldd, minus the C runtime the device has)
# into DEST/bin and DEST/lib, so they run on a machine without Debian's
# packages (the 16-core device: no libpmix, hwloc, boost there).
set -euo pipefail
b=$1 d=$2
rm -rf "$d"; mkdir -p "$d/bin" "$d/lib"
bins="tools/tsurun/tsurun tests/scaling/startup_rank bench/tsu-bench examples/ult_tree_search"
for f in $bins; do cp "$b/$f" "$d/bin/"; done
# libfabric is dlopened by the ofi transport: carry it, its dependencies and
# fi_info too (device_run3.sh).
cp /usr/bin/fi_info "$d/bin/"
cp -L /lib/x86_64-linux-gnu/libfabric.so.1 "$d/lib/"
(for f in $bins; do ldd "$b/$f"; done; ldd /usr/bin/fi_info) | awk '$3 ~ /^\// {print $3}' | sort -u |
  grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux-x86-64)\.so' |
  while read -r l; do cp -L "$l" "$d/lib/"; done
du -sh "$d"
