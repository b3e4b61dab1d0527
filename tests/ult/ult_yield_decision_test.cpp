// TSU_YIELD=auto counts the threads that poll on the node: its ranks times
// each rank's busy threads, which tsu_ult_init makes its workers
// (docs/ult.md, "Oversubscription").  Before, it counted ranks only, so
// ranks whose workers outnumbered the CPUs did not yield.  Run on two ranks
// of a node, with and without a progress thread (not counted either way);
// the expectations are computed from this machine's CPUs.
#include <sched.h>
#include <tsunagi/tsunagi.h>
#include <tsunagi/ult.h>

#include <cstdio>
#include <cstdlib>

#include "rank_check.hpp"

namespace {

uint32_t cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return static_cast<uint32_t>(CPU_COUNT(&set));
}

}  // namespace

int main() {
  if (tsu_init(nullptr) != TSU_OK) return 2;
  tsu_rank(&ult_test::g_rank);
  uint32_t size = 0, my_node = 0, node_ranks = 0;
  tsu_size(&size);
  tsu_node_of(ult_test::g_rank, &my_node);
  for (uint32_t r = 0; r < size; ++r) {
    uint32_t n = 0;
    if (tsu_node_of(r, &n) == TSU_OK && n == my_node) ++node_ranks;
  }
  const uint32_t n = cpus();
  const int alone = node_ranks > n ? 1 : 0;  // one busy thread per rank

  CHECK(tsu_yield_when_idle() == alone);
  tsu_ult_config_t cfg{};
  cfg.struct_size = sizeof cfg;
  cfg.field_mask = TSU_ULT_CONFIG_WORKERS;
  cfg.workers = n;  // every rank of the node: as many workers as CPUs
  CHECK(tsu_ult_init(&cfg) == TSU_OK);
  CHECK(tsu_yield_when_idle() == (node_ranks > 1 ? 1 : 0));
  CHECK(tsu_ult_finalize() == TSU_OK);
  CHECK(tsu_yield_when_idle() == alone);  // the workers are gone
  // An application declares its own busy threads the same way; the node's
  // CPUs exactly do not oversubscribe it.
  if (n % node_ranks == 0) {
    CHECK(tsu_set_busy_threads(n / node_ranks) == TSU_OK);
    CHECK(tsu_yield_when_idle() == 0);
  }
  CHECK(tsu_set_busy_threads(n / node_ranks + 1) == TSU_OK);
  CHECK(tsu_yield_when_idle() == 1);
  CHECK(tsu_set_busy_threads(0) == TSU_OK);  // back to 1
  CHECK(tsu_yield_when_idle() == alone);
  CHECK(tsu_finalize() == TSU_OK);
  std::printf("rank %u: %s (%u ranks on the node, %u CPUs)\n", ult_test::g_rank,
              ult_test::g_failed ? "FAIL" : "PASS", node_ranks, n);
  return ult_test::g_failed ? 1 : 0;
}
