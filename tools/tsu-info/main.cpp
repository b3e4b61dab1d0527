// tsu-info: what this build of tsunagi offers and how it is configured.
// Reads the same environment tsu_init would (without starting a job), so
// `TSU_BYPASS=0 tsu-info` shows the effective setting.
#include <cstdio>
#include <cstdlib>
#include <string>

#include <algorithm>
#include <vector>

#include "bootstrap/environment.hpp"
#include "core/config.hpp"
#include "core/control_block.hpp"
#include "transport/network.hpp"
#include "transport/node.hpp"
#include "tsunagi/tsunagi.h"
#include "ult/settings.hpp"

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) != "--help" && std::string(argv[1]) != "-h") {
    std::fprintf(stderr, "tsu-info: unknown argument '%s' (try --help)\n", argv[1]);
    return 2;
  }
  if (argc > 1) {
    std::printf("usage: tsu-info\n  Prints the version, transports, limits and the effective "
                "configuration\n  (built-in defaults overridden by TSU_* environment "
                "variables).\n");
    return 0;
  }
  std::printf("tsunagi %s\n\n", tsu_version());
  std::printf("transports (chosen per rank at init: self, shm for node peers, then the\n"
              "network transport TSU_NET names for ranks on other nodes):\n");
  auto print_summary = [](const char* name, const char* summary, const char* tag) {
    std::string text(summary);
    std::printf("  %-6s ", name);
    for (std::size_t at = 0; at < text.size();) {
      const std::size_t nl = std::min(text.find('\n', at), text.size());
      std::printf("%s%.*s\n", at ? "         " : "", static_cast<int>(nl - at), text.c_str() + at);
      at = nl + 1;
    }
    if (*tag) std::printf("         %s\n", tag);
  };
  for (const auto* t : tsu::transport::node_transports()) print_summary(t->name, t->summary, "");
  for (const auto* p : tsu::transport::network_transports()) {
    print_summary(p->name, p->summary, "(network: TSU_NET)");
    if (p->report) {
      std::fflush(stdout);
      p->report(stdout);
    }
  }
  std::printf("\n");
  std::printf("limits:\n");
  std::printf("  live segments per rank     %u (main included; ids reused with a generation,\n"
              "                             so a freed segment's id fails: see docs)\n",
              tsu::core::kMaxLiveSegments);
  std::printf("  atomic widths              4 and 8 bytes, naturally aligned\n");
  std::printf("  atomics on                 main and allocated segments (not registered memory)\n");
  std::printf("  max RMA length             segment size (no other limit)\n\n");

  const tsu::core::GetEnv getenv_fn = [](const char* n) { return std::getenv(n); };
  tsu::core::Config cfg;
  std::string error;
  tsu_status_t st = tsu::core::config_from_env(cfg, getenv_fn, error);
  // The message ring's geometry is the shm transport's setting (as at init).
  tsu::transport::MessageGeometry geometry;
  std::string geometry_error;
  const tsu_status_t geometry_st =
      tsu::transport::node_message_geometry(getenv_fn, geometry, geometry_error);
  if (geometry_st == TSU_OK) tsu::core::clamp_to_slot(cfg, geometry.slot_size);
  std::printf("messaging limits (with this configuration):\n");
  std::printf("  AM handler ids             0..%u; %u arguments of 64 bits\n", TSU_AM_MAX_HANDLER,
              TSU_AM_MAX_ARGS);
  std::printf("  max medium AM payload      %zu B (TSU_AM_MEDIUM_MAX, at most TSU_SHM_SLOT_SIZE-64)\n",
              cfg.am_medium_max);
  std::printf("  long AM / rendezvous       any length (RMA into shared segments, or CMA)\n");
  std::printf("  tagged eager up to         %zu B (TSU_EAGER_MAX); rendezvous above\n",
              cfg.eager_max);
  std::printf("  single-copy eager          %s, from %zu B (TSU_SCEAGER, TSU_SCEAGER_MIN)\n",
              cfg.sceager ? "on" : "off", cfg.sceager_min);
  std::printf("  message ring per rank      %u slots x %u B (TSU_SHM_RING_SLOTS, TSU_SHM_SLOT_SIZE)\n\n",
              geometry.ring_slots, geometry.slot_size);
  std::printf("configuration (effective value, default, meaning):\n");
  auto print_table = [](const char* title, const std::vector<tsu::core::SettingView>& rows) {
    std::printf(" %s\n", title);
    for (const auto& r : rows)
      std::printf("  %-20s %-12s [default %s] %s\n", r.env.c_str(), r.value.c_str(),
                  r.default_text.c_str(), r.help.c_str());
  };
  print_table("core", tsu::core::config_settings().describe(cfg));
  tsu_status_t net_st = TSU_OK;
  for (const auto* p : tsu::transport::node_transports()) {
    if (!p->settings) continue;
    std::vector<tsu::core::SettingView> rows;
    std::string node_error;
    if (p->settings(getenv_fn, rows, node_error) != TSU_OK)
      std::fprintf(stderr, "\ntsu-info: %s\n", node_error.c_str());
    print_table(p->name, rows);
  }
  if (geometry_st != TSU_OK) net_st = geometry_st;
  for (const auto* p : tsu::transport::network_transports()) {
    std::vector<tsu::core::SettingView> rows;
    std::string net_error;
    const tsu_status_t s2 = p->settings(getenv_fn, rows, net_error);
    print_table(p->name, rows);
    if (s2 != TSU_OK) {
      std::fprintf(stderr, "\ntsu-info: %s\n", net_error.c_str());
      net_st = s2;
    }
  }
  {
    std::vector<tsu::ult::SettingView> ult_rows;
    const char* ult_error = nullptr;
    const bool ult_ok = tsu::ult::describe_settings(ult_rows, ult_error);
    std::vector<tsu::core::SettingView> rows;
    for (auto& r : ult_rows) rows.push_back({r.env, r.value, r.default_text, r.help});
    print_table("ult (libtsunagi-ult, docs/ult.md)", rows);
    if (!ult_ok) {
      std::fprintf(stderr, "\ntsu-info: %s\n", ult_error);
      net_st = TSU_ERR_CONFIG;
    }
  }
  {
    std::vector<tsu::core::SettingView> rows;
    for (const auto& v : tsu::bootstrap::user_settings()) {
      const char* value = std::getenv(v.env);
      rows.push_back({v.env, value ? value : "(unset)", v.default_text, v.help});
    }
    print_table("launch (how ranks find each other; docs/launchers.md)", rows);
  }
  std::printf("\nset by the launcher for each rank (not for users; docs/launchers.md):\n");
  for (const auto& v : tsu::bootstrap::launcher_variables()) {
    const char* value = std::getenv(v.env);
    std::printf("  %-20s %-12s %s\n", v.env, value ? value : "(unset)", v.help);
  }
  std::printf("\ntest-only fault injection (TSU_OFI_TEST_FAULT, TSU_ULT_TEST_FAULTS; "
              "docs/ofi.md, docs/ult.md):\n  %s\n",
              tsu::core::kFaultInjection
                  ? "compiled in (TSU_FAULT_INJECTION=ON: a build for tests, not for production)"
                  : "not in this build");
  if (net_st != TSU_OK && st == TSU_OK) return 1;
  if (st != TSU_OK) {
    std::fprintf(stderr, "\ntsu-info: %s\n", error.c_str());
    return 1;
  }
  return 0;
}
