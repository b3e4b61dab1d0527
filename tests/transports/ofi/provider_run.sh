#!/usr/bin/env bash
# Runs a tsurun job over one libfabric provider, or says SKIPPED (exit 77)
# with the reason when the provider cannot run here.
#
#   provider_run.sh PROVIDER [--iface NAME] [--skip-reason TEXT] -- COMMAND ARGS...
#
# PROVIDER may separate layered providers by "," (udp,ofi_rxd), which is
# easier to pass through CMake than ";".
# Sets TSU_NET=ofi and TSU_OFI_PROVIDER, and pins every provider that binds a
# network interface to loopback (FI_TCP_IFACE, FI_UDP_IFACE,
# FI_SOCKETS_IFACE) so that nothing binds eth0.  --iface NAME pins them,
# and TSU_OFI_IFACE unless the caller set it, to NAME instead (veth0: COMMAND
# is tests/harness/netns_run.sh, whose namespaces have it; the check that the
# provider exists still runs here, on lo).
# --full-matrix-only: SKIPPED unless TSU_TEST_OFI_MATRIX=1.
# --skip-reason: this provider/program pair is known not to work
# here (the text says why; docs/ofi.md keeps the matrix).
set -u
prov=${1//,/;}; shift
reason="" iface=lo iface_given=0
while (($#)); do
  case $1 in
    --iface) iface=$2; iface_given=1; shift 2 ;;
    --skip-reason) reason=$2; shift 2 ;;
    --full-matrix-only)
      [[ ${TSU_TEST_OFI_MATRIX:-0} == 1 ]] ||
        reason="part of the full provider matrix (~3 min here when quiet): run with TSU_TEST_OFI_MATRIX=1"
      shift ;;
    --) shift; break ;;
    *) echo "provider_run.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ -n $reason ]] && { echo "SKIPPED: provider '$prov': $reason"; exit 77; }
if command -v fi_info >/dev/null; then
  # The provider's own answer (fi_info: the first provider of a ';' list).
  if ! out=$(FI_TCP_IFACE=lo FI_UDP_IFACE=lo FI_SOCKETS_IFACE=lo fi_info -p "$prov" -t FI_EP_RDM 2>&1); then
    echo "SKIPPED: libfabric provider '$prov' offers no reliable datagram endpoint here: $(echo "$out" | head -1)"
    exit 77
  fi
fi
export TSU_NET=ofi TSU_OFI_PROVIDER=$prov FI_TCP_IFACE=$iface FI_UDP_IFACE=$iface FI_SOCKETS_IFACE=$iface
((iface_given)) && export TSU_OFI_IFACE=${TSU_OFI_IFACE:-$iface}
exec "$@"
