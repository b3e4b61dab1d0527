// The datagram size the udp transport uses when TSU_UDP_MTU is "auto" (the
// default): the MTU of the interface that holds the bound address, less the
// IPv4 and UDP headers, so that one datagram is one frame on that link.
// Loopback (MTU 65536) and jumbo-frame networks then carry a 4-8 KiB message
// in one datagram instead of three to six; a 1500-byte Ethernet keeps 1472.
#pragma once

#include <cstdint>

#include "transport/network_interface.hpp"

namespace tsu::transport::udp {

inline constexpr uint32_t kIpUdpHeaders = 28;          // IPv4 (20) + UDP (8)
inline constexpr uint32_t kDefaultDatagram = 1472;     // a 1500-byte MTU
// Capped at a 9000-byte jumbo frame: every queued datagram holds a buffer of
// this size, so a larger one would multiply the memory of small messages.
inline constexpr uint32_t kMaxAutoDatagram = 9000 - kIpUdpHeaders;
inline constexpr uint32_t kMinDatagram = 256;

using transport::interface_mtu;  // of the bound address (network_interface.hpp)

// The datagram size for an interface MTU (0: unknown).
constexpr uint32_t auto_datagram_bytes(uint32_t interface_mtu) noexcept {
  if (interface_mtu == 0) return kDefaultDatagram;
  const uint32_t d = interface_mtu > kIpUdpHeaders ? interface_mtu - kIpUdpHeaders : 0;
  return d < kMinDatagram ? kMinDatagram : d > kMaxAutoDatagram ? kMaxAutoDatagram : d;
}

}  // namespace tsu::transport::udp
