#include "transport/tcp/tcp_plugin.hpp"

#include <arpa/inet.h>

#include <cstring>

#include "core/log.hpp"
#include "transport/ipv4_address.hpp"

namespace tsu::transport::tcp {

namespace {

using T = TcpConfig;

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
  if (!cfg.bind_ip_given) cfg.bind_ip = default_bind_ip(*setup.boot);
  if (!setup.derive_key) {
    error = "tcp: streams are opened with a token derived from the job secret, and none is given";
    return TSU_ERR_CONFIG;
  }
  const Token token = setup.derive_key("tsu-tcp-hello");
  auto t = std::make_unique<TcpTransport>(setup.rank, setup.size, cfg, token);
  st = t->open(error);
  if (st != TSU_OK) return st;
  st = publish_ipv4(*setup.boot, "tsu.tcp.", setup.rank, t->local_address(), error);
  if (st != TSU_OK) return st;
  t->set_address_resolver(ipv4_resolver(setup.boot, setup.reach, "tsu.tcp."));
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
