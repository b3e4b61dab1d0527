// tsu-info: what this build of tsunagi offers and how it is configured.
// Reads the same environment tsu_init would (without starting a job), so
// `TSU_BYPASS=0 tsu-info` shows the effective setting.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/config.hpp"
#include "core/control_block.hpp"
#include "tsunagi/tsunagi.h"

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
  std::printf("transports (chosen per rank at init, in this order):\n");
  std::printf("  self   the rank itself: plain loads, stores and CPU atomics\n");
  std::printf("  shm    ranks of the same node: shared segments (memfd) mapped by every\n"
              "         node peer; registered memory through Cross Memory Attach\n");
  std::printf("  udp    ranks on other nodes: reliable datagrams (sequence numbers, selective\n"
              "         acks, RTT-based retransmission, congestion control, fragmentation,\n"
              "         per-job secret + checksum, keep-alives and peer loss); RMA and\n"
              "         atomics executed by the target (see TSU_UDP_* below)\n\n");
  std::printf("limits:\n");
  std::printf("  live segments per rank     %u (main included; ids reused with a generation,\n"
              "                             so a freed segment's id fails: see docs)\n",
              tsu::core::kMaxLiveSegments);
  std::printf("  atomic widths              4 and 8 bytes, naturally aligned\n");
  std::printf("  atomics on                 main and allocated segments (not registered memory)\n");
  std::printf("  max RMA length             segment size (no other limit)\n\n");

  tsu::core::Config cfg;
  std::string error;
  const tsu_status_t st =
      tsu::core::config_from_env(cfg, [](const char* n) { return std::getenv(n); }, error);
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
              cfg.shm_ring_slots, cfg.shm_slot_size);
  std::printf("configuration (effective value, default, meaning):\n");
  const auto values = tsu::core::config_describe(cfg);
  const auto& vars = tsu::core::config_vars();
  for (std::size_t i = 0; i < vars.size(); ++i)
    std::printf("  %-18s %-12s [default %s] %s\n", vars[i].env, values[i].second.c_str(),
                vars[i].default_value, vars[i].help);
  if (st != TSU_OK) {
    std::fprintf(stderr, "\ntsu-info: %s\n", error.c_str());
    return 1;
  }
  return 0;
}
