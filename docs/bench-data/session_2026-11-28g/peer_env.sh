# peer_env.sh -- source (bash) on the target to use a bundle made by
# make_peer_bundle.sh:   PB=/path/to/bundle; . peer_env.sh
PB=${PB:-$PWD/.devbundle/peers}
export PB
export PATH="$PB/bin:$PATH"
# The programs' RUNPATH names /usr/lib/x86_64-linux-gnu/openmpi/lib; LD_LIBRARY_PATH
# is searched first, and also serves the dlopen()ed modules' dependencies.
export LD_LIBRARY_PATH="$PB/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# UCX would also find lib/ucx next to libucs.so, but its default is Debian's path.
export UCX_MODULE_DIR="$PB/lib/ucx"
# Open MPI's installdirs/env component: OPAL_PREFIX alone would give
# $PB/lib/x86_64-linux-gnu/openmpi/lib/openmpi3 (Debian's relative layout) and
# leave sysconfdir at /etc/openmpi (absolute), so name each directory.
export OPAL_PREFIX="$PB" OPAL_EXEC_PREFIX="$PB" OPAL_BINDIR="$PB/bin" OPAL_LIBDIR="$PB/lib"
export OPAL_PKGLIBDIR="$PB/lib/openmpi3" OPAL_DATADIR="$PB/share"
export OPAL_PKGDATADIR="$PB/share/openmpi" OPAL_SYSCONFDIR="$PB/etc/openmpi"
# External PMIx 4 (libpmix2) has its own installdirs under Debian's pmix2 dir;
# without its components mpirun warns "pcompress ... unavailable".
export PMIX_MCA_mca_base_component_path="$PB/lib/pmix" PMIX_PKGDATADIR="$PB/share/pmix"
