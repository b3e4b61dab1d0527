#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages tsunagi builds and tests with.
set -euo pipefail
packages=(cmake ninja-build g++ pkg-config libgtest-dev libcli11-dev python3
  # rebuilds of unchanged files (other clones, the sanitizer presets) come from its cache
  ccache
  # the bootstrap handshake and udp payload authentication (HMAC, BLAKE2b)
  libsodium-dev
  # the ofi transport (libfabric) and its tools (fi_info, fi_pingpong)
  libfabric-dev libfabric-bin
  # the PMIx bootstrap (srun --mpi=pmix, mpirun); the launcher tests run the programs under
  # Open MPI's mpirun and a one-machine Slurm (slurmctld, slurmd, munged); libopenmpi-dev
  # gives mpicc its headers (without them CMake's FindMPI fails the configure on a fresh
  # machine) and builds bench/peers' MPI-3 RMA peer
  libpmix-dev openmpi-bin libopenmpi-dev slurm-wlm munge
  # user-level threads: context switches (Boost.Context fcontext); tsu-bench ult's peer
  libboost-context-dev libboost-fiber-dev
  # udp transport tests: network namespaces, nftables drops/dups, tc tbf, the NFQUEUE
  # holder (libnetfilter-queue-dev; iptables where the kernel lacks nft_queue);
  # fuzzing; benchmarks
  iproute2 nftables libnetfilter-queue-dev iptables clang libclang-rt-14-dev ucx-utils python3-matplotlib)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all packages present"
  exit 0
fi
sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
