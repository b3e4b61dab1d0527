#include "transport/tcp/tcp_plugin.hpp"

#include <arpa/inet.h>

#include <cstring>

#include "core/log.hpp"

namespace tsu::transport::tcp {

namespace {

using T = TcpConfig;

struct TcpRecord {  // what each rank publishes: "tsu.tcp.<rank>"
  uint32_t ip;      // network order
  uint16_t port;    // network order
  uint16_t reserved;
};

const char* const kSummary =
    "ranks on other nodes: one TCP stream per direction, messages framed on it;\n"
    "peer loss when a stream ends; RMA and atomics executed by the target (the\n"
    "reference network transport: docs/architecture.md, \"Adding a transport\")";

tsu_status_t settings(const core::GetEnv& getenv, std::vector<core::SettingView>& out,
                      std::string& error) {
  TcpConfig cfg;
  const tsu_status_t st = tcp_settings().apply(cfg, getenv, error);
  out = tcp_settings().describe(cfg);
  return st;
}

tsu_status_t connect(const NetworkSetup& setup, std::unique_ptr<Transport>& out,
                     std::string& error) {
  TcpConfig cfg;
  tsu_status_t st = tcp_settings().apply(cfg, setup.getenv, error);
  if (st != TSU_OK) return st;
  if (!cfg.bind_ip_given) {
    cfg.bind_ip = setup.boot->reachable_address();
    if (cfg.bind_ip.empty()) cfg.bind_ip = "127.0.0.1";
  }
  if (!setup.derive_key) {
    error = "tcp: streams are opened with a token derived from the job secret, and none is given";
    return TSU_ERR_CONFIG;
  }
  const Token token = setup.derive_key("tsu-tcp-hello");
  auto t = std::make_unique<TcpTransport>(setup.rank, setup.size, cfg, token);
  st = t->open(error);
  if (st != TSU_OK) return st;
  const sockaddr_in local = t->local_address();
  const TcpRecord mine{local.sin_addr.s_addr, local.sin_port, 0};
  if (setup.boot->put("tsu.tcp." + std::to_string(setup.rank),
                      std::as_bytes(std::span(&mine, 1))) != TSU_OK) {
    error = "bootstrap put of the tcp address failed";
    return TSU_ERR_BOOTSTRAP;
  }
  char ip[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &local.sin_addr, ip, sizeof ip);
  TSU_LOG_INFO("tcp: rank %u listens on %s:%u", setup.rank, ip, ntohs(local.sin_port));
  // Addresses are fetched on first contact: a rank's start-up costs one put
  // whatever the job size.
  t->set_address_resolver([boot = setup.boot, reach = setup.reach](uint32_t r, sockaddr_in& a) {
    if (r >= reach.size() || !reach[r]) return false;  // node peers go through shm
    std::vector<std::byte> v;
    if (boot->get("tsu.tcp." + std::to_string(r), v) != TSU_OK || v.size() != sizeof(TcpRecord)) {
      TSU_LOG_ERROR("tcp: bootstrap lookup of rank %u's address failed", r);
      return false;
    }
    TcpRecord rec;
    std::memcpy(&rec, v.data(), sizeof rec);
    a = sockaddr_in{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = rec.ip;
    a.sin_port = rec.port;
    return true;
  });
  out = std::move(t);
  return TSU_OK;
}

}  // namespace

const NetworkPlugin kTcpPlugin = {"tcp", kSummary, settings, connect};

const core::SettingsTable<TcpConfig>& tcp_settings() {
  static const core::SettingsTable<TcpConfig> table = [] {
    core::SettingsTable<TcpConfig> t{"tcp", {}};
    auto& r = t.rows;
    r.push_back({"TSU_TCP_ADDR", "(derived)",
                 "tcp: IPv4 address to listen on and advertise (default: the address reaching "
                 "the tcp bootstrap, else 127.0.0.1)",
                 "an IPv4 address",
                 [](const char* v, T& c) {
                   in_addr a;
                   if (inet_pton(AF_INET, v, &a) != 1) return false;
                   c.bind_ip = v;
                   c.bind_ip_given = true;
                   return true;
                 },
                 [](const T& c) { return c.bind_ip_given ? c.bind_ip : std::string("(derived)"); }});
    r.push_back(core::size_setting<T>("TSU_TCP_MAX_MESSAGE", "256K",
                                      "tcp: largest message; RMA is split into pieces this big",
                                      &T::max_message, 1024, 64u << 20,
                                      "a size between 1K and 64M"));
    r.push_back(core::size_setting<T>("TSU_TCP_SEND_QUEUE", "8M",
                                      "tcp: bytes queued per peer behind a full socket before "
                                      "sends say TSU_EAGAIN",
                                      &T::send_queue, 64u << 10, 1u << 30,
                                      "a size between 64K and 1G"));
    r.push_back(core::duration_setting<T>("TSU_TCP_KEEPALIVE", "500ms",
                                          "tcp: ping a peer this rank waits on after this long "
                                          "without a frame from it",
                                          &T::keepalive_ns, 1'000'000));
    r.push_back(core::duration_setting<T>("TSU_TCP_PEER_TIMEOUT", "10s",
                                          "tcp: a peer this rank waits on is lost when silent "
                                          "this long (and any peer when TCP gives up on it)",
                                          &T::peer_timeout_ns, 10'000'000));
    t.finish = [](T& c) -> std::string {
      if (c.send_queue < c.max_message + 64)
        return "TSU_TCP_SEND_QUEUE must hold at least one TSU_TCP_MAX_MESSAGE";
      if (c.keepalive_ns >= c.peer_timeout_ns)
        return "TSU_TCP_KEEPALIVE must be shorter than TSU_TCP_PEER_TIMEOUT";
      return std::string();
    };
    return t;
  }();
  return table;
}

}  // namespace tsu::transport::tcp
