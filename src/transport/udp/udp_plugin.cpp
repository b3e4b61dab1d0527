#include "transport/udp/udp_plugin.hpp"

#include <arpa/inet.h>

#include <cstring>

#include "core/log.hpp"
#include "transport/udp/interface_mtu.hpp"
#include "transport/ipv4_address.hpp"

namespace tsu::transport::udp {

namespace {

using core::Setting;
using U = UdpConfig;

const char* const kSummary =
    "ranks on other nodes: reliable datagrams (sequence numbers, selective acks,\n"
    "RTT-based retransmission, congestion control, fragmentation, per-job secret +\n"
    "checksum, keep-alives and peer loss); RMA and atomics executed by the target";

tsu_status_t settings(const core::GetEnv& getenv, std::vector<core::SettingView>& out,
                      std::string& error) {
  UdpConfig cfg;
  const tsu_status_t st = udp_settings().apply(cfg, getenv, error);
  out = udp_settings().describe(cfg);
  return st;
}

tsu_status_t connect(const NetworkSetup& setup, std::unique_ptr<Transport>& out,
                     std::string& error) {
  UdpConfig uc;
  tsu_status_t st = udp_settings().apply(uc, setup.getenv, error);
  if (st != TSU_OK) return st;
  if (!uc.bind_ip_given) uc.bind_ip = default_bind_ip(*setup.boot);
  if (!uc.mtu_given) {
    const uint32_t ifmtu = interface_mtu(uc.bind_ip);
    uc.mtu = auto_datagram_bytes(ifmtu);
    TSU_LOG_INFO("udp: %u-byte datagrams (interface MTU of %s: %u)", uc.mtu, uc.bind_ip.c_str(),
                 ifmtu);
    if (std::string e = udp_settings().finish(uc); !e.empty()) {
      error = "udp: with TSU_UDP_MTU=auto (" + std::to_string(uc.mtu) + " bytes): " + e;
      return TSU_ERR_CONFIG;
    }
  }
  Secret secret;
  if (setup.job_secret.size() != sizeof secret) {
    error = "udp: the job secret has " + std::to_string(setup.job_secret.size()) +
            " bytes, expected " + std::to_string(sizeof secret);
    return TSU_ERR_CONFIG;
  }
  std::memcpy(&secret, setup.job_secret.data(), sizeof secret);
  if (uc.auth) {
    if (!setup.derive_key) {
      error = "udp: payload authentication needs a key derivation from the job secret";
      return TSU_ERR_CONFIG;
    }
    const auto k = setup.derive_key("tsu-udp-payload");
    static_assert(sizeof uc.auth_key.k <= sizeof k);
    std::memcpy(uc.auth_key.k, k.data(), sizeof uc.auth_key.k);
  }
  auto t = std::make_unique<UdpTransport>(setup.rank, setup.size, secret, uc);
  st = t->open(error);
  if (st != TSU_OK) return st;
  st = publish_ipv4(*setup.boot, "tsu.udp.", setup.rank, t->local_address(), error);
  if (st != TSU_OK) return st;
  // No address exchange at init: a peer's address is fetched from the
  // bootstrap on first contact (or learned from its first datagram).
  t->set_address_resolver(ipv4_resolver(setup.boot, setup.reach, "tsu.udp."));
  out = std::move(t);
  return TSU_OK;
}

}  // namespace

const NetworkPlugin kUdpPlugin = {"udp", kSummary, settings, connect};

const core::SettingsTable<UdpConfig>& udp_settings() {
  static const core::SettingsTable<UdpConfig> table = [] {
    core::SettingsTable<UdpConfig> t{"udp", {}};
    auto& r = t.rows;
    r.push_back({"TSU_UDP_ADDR", "(derived)",
                 "udp: IPv4 address to bind and advertise (default: the address reaching the "
                 "tcp bootstrap, else 127.0.0.1)",
                 "an IPv4 address",
                 [](const char* v, U& c) {
                   in_addr a;
                   if (inet_pton(AF_INET, v, &a) != 1) return false;
                   c.bind_ip = v;
                   c.bind_ip_given = true;
                   return true;
                 },
                 [](const U& c) { return c.bind_ip_given ? c.bind_ip : std::string("(derived)"); }});
    r.push_back({"TSU_UDP_PORT", "0", "udp: port to bind (0: any free port)", "0..65535",
                 [](const char* v, U& c) {
                   uint64_t n;
                   if (!core::parse_u64(v, n) || n > 65535) return false;
                   c.port = static_cast<uint16_t>(n);
                   return true;
                 },
                 [](const U& c) { return std::to_string(c.port); }});
    r.push_back({"TSU_UDP_MTU", "auto",
                 "udp: bytes per datagram (UDP payload); auto: the bound interface's MTU less "
                 "28, at most 8972 (1472 on a 1500-byte Ethernet); one value on every rank",
                 "auto or 256..65507",
                 [](const char* v, U& c) {
                   if (std::strcmp(v, "auto") == 0) {
                     c.mtu_given = false;
                     return true;
                   }
                   uint64_t n;
                   if (!core::parse_u64(v, n) || n < kMinDatagram || n > 65507) return false;
                   c.mtu = static_cast<uint32_t>(n);
                   c.mtu_given = true;
                   return true;
                 },
                 [](const U& c) {
                   return c.mtu_given ? std::to_string(c.mtu) : std::string("auto");
                 }});
    r.push_back(core::u32_setting<U>("TSU_UDP_WINDOW", "1024",
                                     "udp: most datagrams in flight per peer (power of two)",
                                     &U::window, 2, 4096, true,
                                     "a power of two between 2 and 4096"));
    r.push_back(core::u32_setting<U>("TSU_UDP_QUEUE", "4096",
                                     "udp: most datagrams queued per peer (power of two >= window)",
                                     &U::queue, 2, 1u << 20, true,
                                     "a power of two between 2 and 1048576"));
    r.push_back(core::size_setting<U>("TSU_UDP_MAX_MESSAGE", "256K",
                                      "udp: largest message; RMA is split into pieces this big",
                                      &U::max_message, 1024, 64u << 20,
                                      "a size between 1K and 64M"));
    r.push_back(core::size_setting<U>("TSU_UDP_EAGER_MAX", "32K",
                                      "udp: tagged messages to ranks on other nodes up to this "
                                      "size go eager (one message, copied at the receiver) "
                                      "instead of by rendezvous (RTS, CTS, DATA, FIN); 0: "
                                      "TSU_EAGER_MAX; at most TSU_UDP_MAX_MESSAGE",
                                      &U::eager_max, 0, 64u << 20, "a size up to 64M"));
    r.push_back(core::duration_setting<U>("TSU_UDP_RTO_INIT", "20ms",
                                          "udp: retransmission timeout before an RTT is measured",
                                          &U::initial_rto_ns, 10'000));
    r.push_back(core::duration_setting<U>("TSU_UDP_RTO_MIN", "10ms",
                                          "udp: lower bound of the retransmission timeout "
                                          "(scheduling delays on busy hosts exceed RTTs)",
                                          &U::min_rto_ns, 10'000));
    r.push_back(core::duration_setting<U>("TSU_UDP_KEEPALIVE", "500ms",
                                          "udp: ping a peer silent for this long",
                                          &U::keepalive_ns, 1'000'000));
    r.push_back(core::duration_setting<U>("TSU_UDP_PEER_TIMEOUT", "10s",
                                          "udp: a peer silent this long is lost (TSU_ERR_PEER_LOST)",
                                          &U::peer_timeout_ns, 10'000'000));
    r.push_back(core::size_setting<U>("TSU_UDP_SOCKBUF", "4M",
                                      "udp: kernel send/receive buffer of the socket", &U::sockbuf,
                                      4096, 1u << 30, "a size between 4K and 1G"));
    r.push_back(core::bool_setting<U>("TSU_UDP_GSO", "1",
                                      "udp: 1: consecutive datagrams to one peer leave as one "
                                      "segmented send (UDP_SEGMENT)",
                                      &U::gso));
    r.push_back(core::bool_setting<U>("TSU_UDP_GRO", "1",
                                      "udp: 1: receive segmented sends coalesced, one buffer per "
                                      "group (UDP_GRO)",
                                      &U::gro));
    r.push_back(core::bool_setting<U>("TSU_UDP_AUTH", "0",
                                      "udp: 1: authenticate every datagram's payload too "
                                      "(ChaCha20-Poly1305 tag; for untrusted networks; every rank "
                                      "must agree)",
                                      &U::auth));
    r.push_back({"TSU_UDP_CWND_MIN", "4", "udp: congestion window floor in datagrams", "1..4096",
                 [](const char* v, U& c) {
                   uint64_t n;
                   if (!core::parse_u64(v, n) || n < 1 || n > 4096) return false;
                   c.cwnd_min = static_cast<double>(n);
                   return true;
                 },
                 [](const U& c) { return std::to_string(static_cast<uint64_t>(c.cwnd_min)); }});
    r.push_back(core::text_setting<U>("TSU_UDP_IMPAIR", "(off)",
                                      "udp TEST FACILITY: impair sent datagrams, e.g. "
                                      "loss=10,reorder=25,dup=5,corrupt=1,delay=2ms,jitter=1ms,seed=1",
                                      &U::impair, 256, "an impairment list"));
    r.push_back(core::text_setting<U>("TSU_UDP_TRACE", "(off)",
                                      "udp: write cwnd/RTT/retransmission events to FILE.<rank>",
                                      &U::trace_file, 4000, "a file name prefix"));
    t.finish = [](U& c) -> std::string {
      if (c.queue < c.window)
        return "TSU_UDP_QUEUE (" + std::to_string(c.queue) + ") must be >= TSU_UDP_WINDOW (" +
               std::to_string(c.window) + ")";
      if (c.keepalive_ns >= c.peer_timeout_ns)
        return "TSU_UDP_KEEPALIVE must be shorter than TSU_UDP_PEER_TIMEOUT";
      if ((c.max_message + 40) / (c.mtu - kHeaderSize - (c.auth ? kTagSize : 0)) + 1 > c.queue)
        return "TSU_UDP_MAX_MESSAGE needs more datagrams than TSU_UDP_QUEUE holds";
      return std::string();
    };
    return t;
  }();
  return table;
}

}  // namespace tsu::transport::udp
