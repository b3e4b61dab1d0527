#include "transport/udp/interface_mtu.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace tsu::transport::udp {

uint32_t interface_mtu(const std::string& ip) noexcept {
  in_addr want{};
  if (inet_pton(AF_INET, ip.c_str(), &want) != 1 || want.s_addr == htonl(INADDR_ANY)) return 0;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return 0;
  char name[IFNAMSIZ] = {};
  for (const ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET || !a->ifa_name) continue;
    sockaddr_in sin;
    std::memcpy(&sin, a->ifa_addr, sizeof sin);
    if (sin.sin_addr.s_addr != want.s_addr) continue;
    std::strncpy(name, a->ifa_name, IFNAMSIZ - 1);
    break;
  }
  freeifaddrs(list);
  if (!name[0]) return 0;
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  ifreq req{};
  std::memcpy(req.ifr_name, name, IFNAMSIZ);
  const int rc = ::ioctl(fd, SIOCGIFMTU, &req);
  ::close(fd);
  return rc == 0 && req.ifr_mtu > 0 ? static_cast<uint32_t>(req.ifr_mtu) : 0;
}

}  // namespace tsu::transport::udp
