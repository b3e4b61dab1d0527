// Waiting yields: 64 ULTs per rank, on ONE worker per rank, ping-pong tagged
// messages between two ranks.  Rank 1 runs its threads in the reverse order
// of rank 0's, so the first thread on each side waits for a partner that has
// not run yet: without waits that yield (tsu_set_wait_hook), the single
// worker would spin in the first wait forever.  Half the threads wait with
// tsu_counter_wait, half with the C++ future's get(); each ends with
// tsu_quiet.
#include <tsunagi/tsunagi.hpp>
#include <tsunagi/ult.h>

#include <atomic>
#include <cstdio>
#include <vector>

namespace {

constexpr uint32_t kThreads = 64;
constexpr uint64_t kRounds = 20;
uint32_t g_rank = 0;
std::atomic<uint32_t> g_failures{0};

void fail(const char* what, uint32_t i, uint64_t r) {
  std::fprintf(stderr, "rank %u thread %u round %llu: %s (%s)\n", g_rank, i,
               static_cast<unsigned long long>(r), what, tsu_last_error());
  g_failures.fetch_add(1);
}

void send_value(uint32_t dst, uint64_t tag, const uint64_t* v) {
  tsu_counter_t c;
  tsu_counter_init(&c);
  // Eager sends copy the value out before returning or completing.
  while (tsu_try_send(dst, tag, v, sizeof *v, tsu_counter_cb(&c)) == TSU_EAGAIN) tsu_ult_yield();
  tsu_counter_wait(&c, 1);
}

uint64_t recv_value(uint32_t src, uint64_t tag, bool use_future, uint32_t i, uint64_t r) {
  uint64_t v = 0;
  if (use_future) {
    try {
      tsu::recv(src, tag, &v, sizeof v).get();
    } catch (const tsu::error&) {
      fail("future receive failed", i, r);
    }
    return v;
  }
  tsu_counter_t c;
  tsu_counter_init(&c);
  tsu_msg_status_t st;
  if (tsu_try_recv(src, tag, TSU_TAG_EXACT, &v, sizeof v, &st, tsu_counter_cb(&c), nullptr) !=
      TSU_OK) {
    fail("tsu_try_recv refused", i, r);
    return 0;
  }
  if (tsu_counter_wait(&c, 1) != TSU_OK) fail("receive failed", i, r);
  return v;
}

void* ping(void* a) {
  const auto i = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(a));
  for (uint64_t r = 0; r < kRounds; ++r) {
    const uint64_t tag = uint64_t{i} << 32 | r;
    const uint64_t out = tag * 3;
    send_value(1, tag, &out);
    if (recv_value(1, tag, i % 2 == 1, i, r) != out + 1) fail("wrong reply", i, r);
  }
  if (tsu_quiet() != TSU_OK) fail("tsu_quiet", i, 0);
  return nullptr;
}

void* pong(void* a) {
  const auto i = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(a));
  for (uint64_t r = 0; r < kRounds; ++r) {
    const uint64_t tag = uint64_t{i} << 32 | r;
    const uint64_t in = recv_value(0, tag, i % 2 == 0, i, r);
    if (in != tag * 3) fail("wrong ping", i, r);
    const uint64_t back = in + 1;
    send_value(0, tag, &back);
  }
  if (tsu_quiet() != TSU_OK) fail("tsu_quiet", i, 0);
  return nullptr;
}

}  // namespace

int main() {
  if (tsu_init(nullptr) != TSU_OK) return 1;
  uint32_t n = 0;
  tsu_rank(&g_rank);
  tsu_size(&n);
  if (n != 2) {
    std::printf("SKIPPED: needs 2 ranks\n");
    tsu_finalize();
    return 0;
  }
  tsu_ult_config_t cfg{};
  cfg.struct_size = sizeof cfg;
  cfg.field_mask = TSU_ULT_CONFIG_WORKERS;
  cfg.workers = 1;
  if (tsu_ult_init(&cfg) != TSU_OK) return 1;
  std::vector<tsu_ult_t> ts(kThreads);
  for (uint32_t k = 0; k < kThreads; ++k) {
    // Rank 1 starts its threads in reverse order.
    const uint32_t i = g_rank == 0 ? k : kThreads - 1 - k;
    if (tsu_ult_create(&ts[k], nullptr, g_rank == 0 ? ping : pong,
                       reinterpret_cast<void*>(uintptr_t{i})) != TSU_OK)
      return 1;
  }
  for (auto t : ts) tsu_ult_join(t, nullptr);
  tsu_ult_finalize();
  const bool ok = g_failures.load() == 0;
  std::printf("rank %u: %s\n", g_rank, ok ? "PASS" : "FAIL");
  tsu_finalize();
  return ok ? 0 : 1;
}
