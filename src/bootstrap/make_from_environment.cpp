// Picks the bootstrap from the environment tsurun (or nobody) set up.
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "bootstrap/local/local_bootstrap.hpp"
#include "bootstrap/pmix/pmix_bootstrap.hpp"

namespace tsu::bootstrap {

namespace {

// Strict decimal parse: no sign, no spaces, no trailing junk, fits in u32.
bool parse_u32(const char* text, uint32_t& out) {
  if (text == nullptr || *text == '\0') return false;
  const std::string_view s(text);
  if (s.front() < '0' || s.front() > '9') return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

bool set(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0';
}

}  // namespace

bool PmixBootstrap::launched_by_pmix() { return set("PMIX_NAMESPACE") && set("PMIX_RANK"); }

std::optional<uint32_t> key_owner(std::string_view key) {
  const auto dot = key.rfind('.');
  if (dot == std::string_view::npos || dot + 1 == key.size()) return std::nullopt;
  const std::string digits(key.substr(dot + 1));
  uint32_t rank = 0;
  if (!parse_u32(digits.c_str(), rank)) return std::nullopt;
  return rank;
}

bool Bootstrap::placement_from_environment(uint32_t size, std::vector<uint32_t>& node_of) {
  const char* spec = std::getenv("TSU_PLACEMENT");
  if (spec == nullptr || *spec == '\0' || size == 0) return false;
  const std::string_view s(spec);
  const bool block = s.starts_with("block:");
  const bool cyclic = s.starts_with("cyclic:");
  if (!block && !cyclic) return false;
  const std::string n_text(s.substr(s.find(':') + 1));
  uint32_t n = 0;
  if (!parse_u32(n_text.c_str(), n) || n == 0) return false;
  node_of.resize(size);
  // Dense indices in order of first appearance, as the runtime numbers nodes.
  const uint32_t nodes = block ? (size + n - 1) / n : std::min(n, size);
  for (uint32_t r = 0; r < size; ++r) node_of[r] = block ? r / n : r % nodes;
  return true;
}

void print_traffic_if_asked(uint32_t rank, const Traffic& t) {
  const char* stats = std::getenv("TSU_STATS");
  if (stats == nullptr || std::string_view(stats) != "1") return;
  std::fprintf(stderr, "tsunagi[%u] bootstrap: requests=%llu bytes_out=%llu bytes_in=%llu\n", rank,
               static_cast<unsigned long long>(t.requests), static_cast<unsigned long long>(t.bytes_out),
               static_cast<unsigned long long>(t.bytes_in));
}

bool started_by_launcher() { return set("TSU_BOOTSTRAP") || PmixBootstrap::launched_by_pmix(); }

std::unique_ptr<Bootstrap> make_from_environment(tsu_status_t& status, std::string& error) {
  const char* spec = std::getenv("TSU_BOOTSTRAP");
  // tsurun's own service first (a tsurun started inside an allocation keeps
  // its job), then a PMIx launcher, then a job of one.
  const bool forced_pmix = spec != nullptr && std::string_view(spec) == "pmix";
  if (forced_pmix || ((spec == nullptr || *spec == '\0') && PmixBootstrap::launched_by_pmix())) {
    if (!PmixBootstrap::launched_by_pmix() && forced_pmix) {
      status = TSU_ERR_CONFIG;
      error = "TSU_BOOTSTRAP=pmix, but no PMIx launcher started this process (PMIX_NAMESPACE / "
              "PMIX_RANK are not set)";
      return nullptr;
    }
    return PmixBootstrap::connect(status, error);
  }
  if (spec == nullptr || *spec == '\0') {
    status = TSU_OK;
    return std::make_unique<SingletonBootstrap>();
  }

  constexpr std::string_view kUnix = "unix:";
  constexpr std::string_view kTcp = "tcp:";
  const std::string_view s(spec);
  const bool is_unix = s.substr(0, kUnix.size()) == kUnix;
  const bool is_tcp = s.substr(0, kTcp.size()) == kTcp;
  std::string tcp_host;
  uint16_t tcp_port = 0;
  if (is_tcp) {
    // tcp:HOST:PORT (HOST an IPv4 address or a name)
    const std::string_view rest = s.substr(kTcp.size());
    const auto colon = rest.rfind(':');
    uint32_t port = 0;
    const std::string port_text = colon == std::string_view::npos ? "" : std::string(rest.substr(colon + 1));
    if (colon == std::string_view::npos || colon == 0 || !parse_u32(port_text.c_str(), port) ||
        port == 0 || port > 65535) {
      status = TSU_ERR_CONFIG;
      error = "TSU_BOOTSTRAP='" + std::string(s) + "' is not tcp:HOST:PORT";
      return nullptr;
    }
    tcp_host = std::string(rest.substr(0, colon));
    tcp_port = static_cast<uint16_t>(port);
  }
  if (!is_unix && !is_tcp) {
    status = TSU_ERR_CONFIG;
    error = "TSU_BOOTSTRAP='" + std::string(s) + "' is not supported (expected unix:PATH, tcp:HOST:PORT or pmix)";
    return nullptr;
  }

  const char* rank_text = std::getenv("TSU_RANK");
  const char* size_text = std::getenv("TSU_SIZE");
  uint32_t rank = 0;
  uint32_t size = 0;
  if (!parse_u32(rank_text, rank) || !parse_u32(size_text, size) || size == 0 || rank >= size) {
    status = TSU_ERR_CONFIG;
    error = "TSU_BOOTSTRAP is set but TSU_RANK='" + std::string(rank_text ? rank_text : "") +
            "' / TSU_SIZE='" + std::string(size_text ? size_text : "") +
            "' are not numbers with 0 <= rank < size";
    return nullptr;
  }

  // The service admits only ranks that prove they hold the job secret.
  std::string secret_error;
  const auto secret = auth::job_secret(secret_error);
  if (!secret) {
    status = TSU_ERR_CONFIG;
    error = !secret_error.empty() ? secret_error
                                  : "TSU_BOOTSTRAP is set but no job secret was given (TSU_JOB_SECRET_FD); "
                                    "start the ranks with tsurun";
    return nullptr;
  }
  if (is_tcp) return LocalBootstrap::connect_tcp(tcp_host, tcp_port, rank, size, *secret, status, error);
  return LocalBootstrap::connect(std::string(s.substr(kUnix.size())), rank, size, *secret, status, error);
}

}  // namespace tsu::bootstrap
