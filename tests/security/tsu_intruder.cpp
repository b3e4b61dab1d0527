// A foreign client for the security tests: it holds no job secret and
// attacks a running job's entry points, then says what happened.
//
//   tsu_intruder probe TSU_BOOTSTRAP SIZE
//       Tries, each on a fresh connection, what the issue (15) lists: Get a
//       key, Put a key, Barrier before any Hello; claim every rank with a
//       wrong proof; an old-protocol Hello.  Exit 0 if every attempt was
//       refused with an Error and nothing was read or written, else 1.
//   tsu_intruder flood-bootstrap TSU_BOOTSTRAP CONNECTIONS SIZE
//       Opens CONNECTIONS connections (at most 400 open at once, more than tsurun keeps waiting), each
//       sending one kind of abuse: garbage, an oversized length, a truncated
//       frame, a Hello then a bad proof, or nothing (those stay open to the
//       end, more than tsurun lets wait); then closes them.
//   tsu_intruder flood-udp IP:PORT DATAGRAMS [CAPTURE_SECONDS]
//       Sends DATAGRAMS datagrams as fast as the socket takes them: random
//       garbage, headers with our magic and a forged MAC, and - if it may open
//       a packet socket (root) - real datagrams of the job captured on the
//       loopback interface for CAPTURE_SECONDS, replayed as they were and
//       with a flipped payload byte.
// Bounded in count and time; loopback or a test's own namespaces only.
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bootstrap/local/wire.hpp"

namespace wire = tsu::bootstrap::wire;

namespace {

std::mt19937_64 g_rng(12345);

// Connects to unix:PATH or tcp:HOST:PORT; -1 on failure.
int connect_to(const std::string& spec) {
  if (spec.rfind("unix:", 0) == 0) {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, spec.c_str() + 5, sizeof a.sun_path - 1);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
    if (fd >= 0) ::close(fd);
    return -1;
  }
  if (spec.rfind("tcp:", 0) == 0) {
    const std::string rest = spec.substr(4);
    const auto colon = rest.rfind(':');
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(std::atoi(rest.c_str() + colon + 1)));
    if (::inet_pton(AF_INET, rest.substr(0, colon).c_str(), &a.sin_addr) != 1) return -1;
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
    if (fd >= 0) ::close(fd);
    return -1;
  }
  return -1;
}

bool send_all(int fd, const std::vector<std::byte>& b) {
  size_t off = 0;
  while (off < b.size()) {
    const ssize_t n = ::send(fd, b.data() + off, b.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

// Reads one frame, waiting at most 5 s; false on close, timeout or garbage.
bool recv_frame(int fd, wire::Frame& f) {
  wire::FrameDecoder dec;
  std::byte buf[4096];
  for (;;) {
    std::string err;
    const auto r = dec.next(f, err);
    if (r == wire::FrameDecoder::Result::kFrame) return true;
    if (r == wire::FrameDecoder::Result::kBad) return false;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 5000) <= 0) return false;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return false;
    dec.feed(std::span<const std::byte>(buf, static_cast<size_t>(n)));
  }
}

std::vector<std::byte> hello_payload(uint32_t version, uint32_t rank, uint32_t size, bool with_nonce = true) {
  wire::Writer w;
  w.u32(version);
  w.u32(rank);
  w.u32(size);
  if (with_nonce)
    for (int i = 0; i < 32; ++i) w.u8(static_cast<uint8_t>(g_rng()));
  return std::move(w.data());
}

// One attempt: sends `frames`, expects the last reply to be Error and then
// the connection to close.  Returns "" if refused, else what happened.
std::string expect_refused(const std::string& spec, const std::vector<std::vector<std::byte>>& frames,
                           const char* what) {
  const int fd = connect_to(spec);
  if (fd < 0) return std::string(what) + ": cannot connect";
  std::string result;
  for (size_t i = 0; i < frames.size(); ++i) {
    if (!send_all(fd, frames[i])) break;
    wire::Frame f;
    if (!recv_frame(fd, f)) {
      result = std::string(what) + ": no reply";
      break;
    }
    if (f.type == wire::MsgType::kError) {
      std::printf("intruder: %s: refused: %s\n", what, std::string(wire::as_string(f.payload)).c_str());
      // The service must close the connection after an Error.
      char c;
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 5000) <= 0 || ::recv(fd, &c, 1, 0) > 0) result = std::string(what) + ": still open after Error";
      ::close(fd);
      return result;
    }
    if (f.type == wire::MsgType::kChallenge && i + 1 < frames.size()) continue;  // answer it with the next frame
    result = std::string(what) + ": ACCEPTED (reply type " + std::to_string(static_cast<int>(f.type)) + ")";
    break;
  }
  ::close(fd);
  return result.empty() ? std::string(what) + ": connection closed without an Error" : result;
}

int probe(const std::string& spec, uint32_t size) {
  std::vector<std::string> failures;
  auto check = [&](std::string r) {
    if (!r.empty()) {
      std::printf("intruder: FAIL: %s\n", r.c_str());
      failures.push_back(r);
    }
  };
  wire::Writer put;
  put.u32(9);
  put.str("tsu.udp.0");
  put.str("evil-address");
  wire::Writer bar;
  bar.u64(0);
  check(expect_refused(spec, {wire::make_frame(wire::MsgType::kGet, std::as_bytes(std::span("tsu.udp.0", 9)))},
                       "Get tsu.udp.0 without Hello"));
  check(expect_refused(spec, {wire::make_frame(wire::MsgType::kPut, put.data())}, "Put tsu.udp.0 without Hello"));
  check(expect_refused(spec, {wire::make_frame(wire::MsgType::kBarrier, bar.data())}, "Barrier without Hello"));
  check(expect_refused(spec, {wire::make_frame(wire::MsgType::kHello, hello_payload(1, 0, size, false))},
                       "protocol-1 Hello (no handshake)"));
  for (uint32_t r = 0; r < size; ++r) {
    std::vector<std::byte> proof(32);
    for (auto& b : proof) b = static_cast<std::byte>(g_rng());
    const std::string what = "claim rank " + std::to_string(r) + " with a wrong proof";
    check(expect_refused(spec,
                         {wire::make_frame(wire::MsgType::kHello, hello_payload(wire::kProtocolVersion, r, size)),
                          wire::make_frame(wire::MsgType::kAuth, proof)},
                         what.c_str()));
    // And: Hello, then straight to Get (skipping Auth).
    const std::string what2 = "Hello as rank " + std::to_string(r) + " then Get";
    check(expect_refused(spec,
                         {wire::make_frame(wire::MsgType::kHello, hello_payload(wire::kProtocolVersion, r, size)),
                          wire::make_frame(wire::MsgType::kGet, std::as_bytes(std::span("tsu.udp.0", 9)))},
                         what2.c_str()));
  }
  std::printf("intruder: probe: %zu of %u attempts not refused\n", failures.size(), 4 + 2 * size);
  return failures.empty() ? 0 : 1;
}

std::vector<std::byte> abuse(uint64_t i, uint32_t size, uint32_t& kind) {
  kind = static_cast<uint32_t>(i % 5);
  std::vector<std::byte> b;
  switch (kind) {
    case 0:  // garbage
      b.resize(1 + g_rng() % 200);
      for (auto& x : b) x = static_cast<std::byte>(g_rng());
      break;
    case 1: {  // oversized frame length
      wire::Writer w;
      w.u32(64u << 20);
      w.u8(2);
      w.str("xxxxxxxx");
      b = std::move(w.data());
      break;
    }
    case 2: {  // truncated Hello
      b = wire::make_frame(wire::MsgType::kHello, hello_payload(wire::kProtocolVersion, 0, size));
      b.resize(b.size() / 2);
      break;
    }
    case 3: {  // Hello then a bad proof
      b = wire::make_frame(wire::MsgType::kHello, hello_payload(wire::kProtocolVersion, static_cast<uint32_t>(i % size), size));
      std::vector<std::byte> proof(32, std::byte{0x5a});
      const auto a = wire::make_frame(wire::MsgType::kAuth, proof);
      b.insert(b.end(), a.begin(), a.end());
      break;
    }
    default:  // nothing at all: just hold a slot
      break;
  }
  return b;
}

int flood_bootstrap(const std::string& spec, uint64_t count, uint32_t size) {
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t opened = 0, failed = 0;
  std::vector<int> open_fds, idle_fds;  // idle ones stay open to the end
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    rl.rlim_cur = rl.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &rl);
  }
  for (uint64_t i = 0; i < count; ++i) {
    const int fd = connect_to(spec);
    if (fd < 0) {
      ++failed;
      continue;
    }
    ++opened;
    uint32_t kind;
    const auto bytes = abuse(i, size, kind);
    if (!bytes.empty()) send_all(fd, bytes);
    (kind == 4 && idle_fds.size() < 900 ? idle_fds : open_fds).push_back(fd);
    if (open_fds.size() >= 400) {
      for (int f : open_fds) ::close(f);
      open_fds.clear();
    }
  }
  for (int f : open_fds) ::close(f);
  for (int f : idle_fds) ::close(f);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("intruder: flood-bootstrap: %llu connections opened, %llu failed to connect, %.2f s\n",
              static_cast<unsigned long long>(opened), static_cast<unsigned long long>(failed), s);
  return 0;
}

// Captures udp datagrams to `port` on lo for up to `seconds` (root only).
std::vector<std::vector<std::byte>> capture(uint16_t port, double seconds) {
  std::vector<std::vector<std::byte>> got;
  const int fd = ::socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC, htons(ETH_P_IP));
  if (fd < 0) {
    std::printf("intruder: no packet socket (%s): replays skipped\n", std::strerror(errno));
    return got;
  }
  sockaddr_ll ll{};
  ll.sll_family = AF_PACKET;
  ll.sll_protocol = htons(ETH_P_IP);
  ll.sll_ifindex = static_cast<int>(if_nametoindex("lo"));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&ll), sizeof ll) != 0) {
    ::close(fd);
    return got;
  }
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::byte buf[70000];
  while (got.size() < 64 && std::chrono::steady_clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    sockaddr_ll from{};
    socklen_t fl = sizeof from;
    const ssize_t n = ::recvfrom(fd, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &fl);
    if (n < static_cast<ssize_t>(sizeof(iphdr) + sizeof(udphdr)) || from.sll_pkttype == PACKET_OUTGOING) continue;
    iphdr ip;
    std::memcpy(&ip, buf, sizeof ip);
    if (ip.protocol != IPPROTO_UDP) continue;
    const size_t ihl = ip.ihl * 4u;
    udphdr uh;
    std::memcpy(&uh, buf + ihl, sizeof uh);
    if (ntohs(uh.dest) != port) continue;
    const size_t len = ntohs(uh.len) - sizeof uh;
    if (ihl + sizeof uh + len > static_cast<size_t>(n)) continue;
    got.emplace_back(buf + ihl + sizeof uh, buf + ihl + sizeof uh + len);
  }
  ::close(fd);
  return got;
}

int flood_udp(const std::string& target, uint64_t count, double capture_s) {
  const auto colon = target.rfind(':');
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(std::atoi(target.c_str() + colon + 1)));
  if (::inet_pton(AF_INET, target.substr(0, colon).c_str(), &a.sin_addr) != 1) {
    std::printf("intruder: bad address %s\n", target.c_str());
    return 2;
  }
  const auto captured = capture(ntohs(a.sin_port), capture_s);
  std::printf("intruder: captured %zu datagram(s) of the job\n", captured.size());
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  uint64_t sent[4] = {}, attempted = 0;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::byte> d;
  for (uint64_t i = 0; i < count; ++i) {
    const uint32_t kind = captured.empty() ? static_cast<uint32_t>(i % 2) : static_cast<uint32_t>(i % 4);
    switch (kind) {
      case 0:  // garbage
        d.resize(1 + g_rng() % 1400);
        for (auto& x : d) x = static_cast<std::byte>(g_rng());
        break;
      case 1: {  // our magic and version, a plausible header, a forged MAC
        d.assign(64 + g_rng() % 512, std::byte{0});
        for (auto& x : d) x = static_cast<std::byte>(g_rng());
        const uint32_t magic = 0x47555354;
        std::memcpy(d.data(), &magic, 4);
        d[4] = std::byte{1};
        d[5] = std::byte{1};
        const uint32_t len = static_cast<uint32_t>(d.size() - 64);
        std::memcpy(d.data() + 48, &len, 4);
        break;
      }
      case 2:  // a captured datagram, replayed unchanged
        d = captured[i % captured.size()];
        break;
      default:  // a captured datagram with one payload (or header) byte flipped
        d = captured[i % captured.size()];
        d[d.size() > 64 ? 64 + g_rng() % (d.size() - 64) : g_rng() % d.size()] ^= std::byte{0x01};
        break;
    }
    ++attempted;
    if (::sendto(fd, d.data(), d.size(), 0, reinterpret_cast<sockaddr*>(&a), sizeof a) >= 0) ++sent[kind];
  }
  ::close(fd);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("intruder: flood-udp: %llu sent (garbage %llu, forged %llu, replayed %llu, replayed-altered %llu) "
              "in %.2f s\n",
              static_cast<unsigned long long>(sent[0] + sent[1] + sent[2] + sent[3]),
              static_cast<unsigned long long>(sent[0]), static_cast<unsigned long long>(sent[1]),
              static_cast<unsigned long long>(sent[2]), static_cast<unsigned long long>(sent[3]), s);
  return attempted == count ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "probe" && argc == 4) return probe(argv[2], static_cast<uint32_t>(std::atoi(argv[3])));
  if (mode == "flood-bootstrap" && argc == 5)
    return flood_bootstrap(argv[2], std::strtoull(argv[3], nullptr, 10), static_cast<uint32_t>(std::atoi(argv[4])));
  if (mode == "flood-udp" && (argc == 4 || argc == 5))
    return flood_udp(argv[2], std::strtoull(argv[3], nullptr, 10), argc == 5 ? std::atof(argv[4]) : 0.5);
  std::fprintf(stderr,
               "usage: tsu_intruder probe TSU_BOOTSTRAP SIZE | flood-bootstrap TSU_BOOTSTRAP N SIZE |\n"
               "       flood-udp IP:PORT N [CAPTURE_SECONDS]\n");
  return 2;
}
