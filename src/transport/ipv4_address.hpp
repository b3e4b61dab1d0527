// For network transports that reach a peer at an IPv4 address and port (udp,
// tcp): each rank publishes its own through the bootstrap at connect, under
// "<key><rank>", and peers look it up on first contact, so start-up costs one
// put per rank whatever the job size (docs/scaling.md).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "core/log.hpp"
#include "tsunagi/tsunagi.h"

namespace tsu::transport {

// Where a peer listens; false: the rank has no address (a node peer, or the
// lookup failed).
using Ipv4Resolver = std::function<bool(uint32_t rank, sockaddr_in& out)>;

struct Ipv4Record {  // what each rank publishes
  uint32_t ip;       // network order
  uint16_t port;     // network order
  uint16_t reserved;
};

// The address to bind when the user named none: the one that reaches the
// bootstrap (another node's ranks reach us the same way), else loopback.
inline std::string default_bind_ip(const bootstrap::Bootstrap& boot) {
  std::string ip = boot.reachable_address();
  return ip.empty() ? std::string("127.0.0.1") : ip;
}

inline tsu_status_t publish_ipv4(bootstrap::Bootstrap& boot, const std::string& key,
                                 uint32_t rank, const sockaddr_in& local, std::string& error) {
  const Ipv4Record mine{local.sin_addr.s_addr, local.sin_port, 0};
  if (boot.put(key + std::to_string(rank), std::as_bytes(std::span(&mine, 1))) != TSU_OK) {
    error = "bootstrap put of the address (" + key + ") failed";
    return TSU_ERR_BOOTSTRAP;
  }
  char ip[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &local.sin_addr, ip, sizeof ip);
  TSU_LOG_INFO("%s%u listens on %s:%u", key.c_str(), rank, ip, ntohs(local.sin_port));
  return TSU_OK;
}

// Looks `rank`'s address up under `key` on first contact; only ranks in
// `reach` (those on other nodes) have one.
inline Ipv4Resolver ipv4_resolver(bootstrap::Bootstrap* boot, std::vector<bool> reach,
                                  std::string key) {
  return [boot, reach = std::move(reach), key = std::move(key)](uint32_t r, sockaddr_in& a) {
    if (r >= reach.size() || !reach[r]) return false;  // node peers go through shm
    std::vector<std::byte> v;
    if (boot->get(key + std::to_string(r), v) != TSU_OK || v.size() != sizeof(Ipv4Record)) {
      TSU_LOG_ERROR("bootstrap lookup of %s%u failed", key.c_str(), r);
      return false;
    }
    Ipv4Record rec;
    std::memcpy(&rec, v.data(), sizeof rec);
    a = sockaddr_in{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = rec.ip;
    a.sin_port = rec.port;
    return true;
  };
}

}  // namespace tsu::transport
