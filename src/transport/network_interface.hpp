// The local network interface that holds an IPv4 address, and its MTU: for
// network transports that bind an address (ofi pins its domain to the
// interface; udp sizes its datagrams by the MTU).
#pragma once

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>

namespace tsu::transport {

// The interface holding IPv4 address `ip`, or "" (a wildcard or foreign
// address, or the query failed).
inline std::string interface_of(const std::string& ip) {
  in_addr want{};
  if (ip.empty() || inet_pton(AF_INET, ip.c_str(), &want) != 1) return {};
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return {};
  std::string name;
  for (const ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET || !a->ifa_name) continue;
    sockaddr_in sin;
    std::memcpy(&sin, a->ifa_addr, sizeof sin);
    if (sin.sin_addr.s_addr != want.s_addr) continue;
    name = a->ifa_name;
    break;
  }
  freeifaddrs(list);
  return name;
}

// The MTU of the interface holding `ip`; 0 when none holds it or the query
// fails.
inline uint32_t interface_mtu(const std::string& ip) {
  const std::string name = interface_of(ip);
  if (name.empty() || name.size() >= IFNAMSIZ) return 0;
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  ifreq req{};
  std::memcpy(req.ifr_name, name.c_str(), name.size() + 1);
  const int rc = ::ioctl(fd, SIOCGIFMTU, &req);
  ::close(fd);
  return rc == 0 && req.ifr_mtu > 0 ? static_cast<uint32_t>(req.ifr_mtu) : 0;
}

}  // namespace tsu::transport
