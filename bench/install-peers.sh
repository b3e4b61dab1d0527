#!/usr/bin/env bash
# Installs what bench/compare compares tsunagi with, from Debian packages (no PyPI):
# UCX's ucx_perftest, Open MPI (for bench/peers/mpi_rma_bench.c) and matplotlib
# (for bench/plot.py).  Does nothing when they are present.
set -euo pipefail
packages=(ucx-utils libopenmpi-dev openmpi-bin python3-matplotlib)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-peers: all packages present"
  exit 0
fi
sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
echo "install-peers: installing ${missing[*]}"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
