// One rank of the start-up scaling test (startup_scaling.sh): tsu_init, one
// remote atomic to a rank on the next pseudo-node (first contact: the udp
// address is looked up then, not at init), a barrier, then a report line
// with the memory this rank holds.  Bootstrap and udp traffic come from
// TSU_STATS=1 at tsu_finalize.
#include <tsunagi/tsunagi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

// A field of /proc/self/status in KiB ("VmRSS:", "VmHWM:"), 0 if absent.
unsigned long status_kib(const char* field) {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  unsigned long v = 0;
  const std::size_t n = std::strlen(field);
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, field, n) == 0) v = std::strtoul(line + n, nullptr, 10);
  std::fclose(f);
  return v;
}

int fail(const char* what) {
  std::fprintf(stderr, "startup_rank: %s: %s\n", what, tsu_last_error());
  return 1;
}

}  // namespace

int main() {
  const auto t0 = std::chrono::steady_clock::now();
  if (tsu_init(nullptr) != TSU_OK) return fail("tsu_init");
  const double init_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  uint32_t rank = 0, size = 0, nodes = 0, my_node = 0;
  if (tsu_rank(&rank) != TSU_OK || tsu_size(&size) != TSU_OK || tsu_node_count(&nodes) != TSU_OK ||
      tsu_node_of(rank, &my_node) != TSU_OK)
    return fail("queries");
  const unsigned long rss_after_init = status_kib("VmRSS:");
  // First contact with one rank of another node (the same local index on
  // the next node): its address is fetched now.
  uint32_t target = rank;
  for (uint32_t step = 1; step < size; ++step) {
    const uint32_t r = (rank + step) % size;
    uint32_t n = 0;
    if (tsu_node_of(r, &n) == TSU_OK && n == (my_node + 1) % nodes) {
      target = r;
      break;
    }
  }
  uint64_t one = 1, old = 0;
  tsu_counter_t c;
  tsu_counter_init(&c);
  tsu_status_t st;
  while ((st = tsu_try_atomic(tsu_gaddr(target, TSU_SEG_MAIN, 8u * (rank % 64)), TSU_AOP_FETCH_ADD,
                              TSU_TYPE_UINT64, &one, nullptr, &old, tsu_counter_cb(&c))) == TSU_EAGAIN)
    tsu_progress();
  if (st != TSU_OK) return fail("tsu_try_atomic");
  if (tsu_counter_wait(&c, 1) != TSU_OK) return fail("tsu_counter_wait");
  if (tsu_barrier() != TSU_OK) return fail("tsu_barrier");
  std::printf("startup rank=%u size=%u nodes=%u target=%u init_ms=%.1f rss_init_kib=%lu rss_kib=%lu "
              "hwm_kib=%lu\n",
              rank, size, nodes, target, init_ms, rss_after_init, status_kib("VmRSS:"),
              status_kib("VmHWM:"));
  std::fflush(stdout);
  if (tsu_finalize() != TSU_OK) return fail("tsu_finalize");
  return 0;
}
