#!/bin/bash
# make_peer_bundle.sh DEST -- copy Debian 12's installed UCX (ucx-utils, libucx0)
# and Open MPI 4.1 (openmpi-bin, libopenmpi3, libpmix2) into DEST so that
# bench/peers/ucx_perftest_json.py and mpi-rma-bench can run on an x86-64 host
# without them (needs glibc >= 2.36: libevent_core uses arc4random).
# On the target: PB=DEST; . DEST/peer_env.sh
#
# Layout: DEST/bin (programs), DEST/lib (all non-glibc libraries, by soname),
# DEST/lib/ucx (UCX modules), DEST/lib/openmpi3 (MCA components),
# DEST/lib/pmix (PMIx components), DEST/share/{openmpi,pmix}, DEST/etc/openmpi.
set -euo pipefail
dest=${1:?usage: make_peer_bundle.sh DEST}
repo=$(cd "$(dirname "$0")/../../.." && pwd)
rma_bench=${RMA_BENCH:-$repo/build/release/bench/mpi-rma-bench}
arch=/usr/lib/x86_64-linux-gnu
ompi_pkglib=$arch/openmpi/lib/openmpi3

rm -rf "$dest"
mkdir -p "$dest"/{bin,lib/ucx,lib/openmpi3,lib/pmix,share,etc}

# mpirun/mpiexec are symlinks to orterun; copy the real file under each name.
for p in /usr/bin/{ucx_perftest,ucx_info,orterun,orted,ompi_info} "$rma_bench"; do
  cp -L "$p" "$dest/bin/"
done
ln -s orterun "$dest/bin/mpirun"
ln -s orterun "$dest/bin/mpiexec"

# Only cma is needed from UCX's modules: posix, sysv and self live in libuct;
# the ib/rdmacm modules would drag in libibverbs/libmlx5/librdmacm.
cp -L "$arch/ucx/libuct_cma.so.0" "$dest/lib/ucx/"

# MCA components minus those for networks/launchers absent on one node, OSHMEM,
# MPI-IO and UCX/libfabric (Debian's openmpi-mca-params.conf already disables
# ucx/ofi/openib; mpi-rma-bench runs over pml ob1 + btl vader/self + osc sm).
skip_fw='^mca_(io|fs|fbtl|fcoll|sharedfp|scoll|spml|sshmem|memheap|atomic)_'
skip_comp='_(openib|ofi|psm|psm2|ucx|uct|slurm|flux|jsm|gridengine|monitoring|treematch)\.so$'
for f in "$ompi_pkglib"/mca_*.so; do
  b=$(basename "$f")
  [[ $b =~ $skip_fw || $b =~ $skip_comp ]] || cp -L "$f" "$dest/lib/openmpi3/"
done
# PMIx's own components (prm_slurm skipped); its conf file would point back at $arch.
cp -L "$arch"/pmix2/lib/pmix/pmix_mca_{pcompress_zlib,prm_default}.so "$dest/lib/pmix/"
cp -r /usr/share/openmpi "$arch/pmix2/share/pmix" "$dest/share/"  # help texts
rm -f "$dest"/share/openmpi/*wrapper-data.txt "$dest/share/openmpi/openmpi-valgrind.supp"
cp -r /etc/openmpi "$dest/etc/"

# Every library that any program or module needs, except glibc's own.
glibc='^(libc|libm|libpthread|libdl|librt|libresolv|libutil|ld-linux-x86-64|linux-vdso)\.so'
find "$dest/bin" "$dest/lib" -type f | while read -r f; do
  ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ $name =~ $glibc ]] || [ -e "$dest/lib/$name" ] || cp -L "$path" "$dest/lib/$name"
done
# libmpi.so.40 etc. are resolved again above; "not found" means the bundle is incomplete.
if find "$dest/bin" "$dest/lib" -type f -exec env LD_LIBRARY_PATH="$dest/lib" ldd {} + 2>/dev/null |
   grep 'not found'; then
  echo "make_peer_bundle: unresolved libraries (above)" >&2; exit 1
fi
cp "$(dirname "$0")/peer_env.sh" "$dest/"
du -sh "$dest"
