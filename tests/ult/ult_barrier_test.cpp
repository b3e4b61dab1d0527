// tsu_barrier inside a ULT lets its worker run other ULTs while it waits.
// Two ranks, ONE worker each.  On rank 0, thread A enters tsu_barrier first;
// thread B, queued behind A on the same worker, then sends rank 1 the
// message rank 1 waits for before it enters the barrier.  If the barrier
// held the worker, B would never run and both ranks would wait forever (the
// test then fails by its timeout).
#include <tsunagi/tsunagi.h>
#include <tsunagi/ult.h>

#include <atomic>
#include <cstdio>

namespace {

constexpr uint64_t kGoTag = 77;
std::atomic<bool> g_a_entered{false};
std::atomic<int> g_failures{0};

void* enter_barrier(void*) {
  g_a_entered.store(true);
  const tsu_status_t st = tsu_barrier();
  if (st != TSU_OK) {
    std::fprintf(stderr, "rank 0: tsu_barrier in a ULT: %s\n", tsu_last_error());
    g_failures.fetch_add(1);
  }
  return nullptr;
}

void* release_rank1(void*) {
  while (!g_a_entered.load()) tsu_ult_yield();
  static const uint64_t go = 1;
  tsu_counter_t c;
  tsu_counter_init(&c);
  while (tsu_try_send(1, kGoTag, &go, sizeof go, tsu_counter_cb(&c)) == TSU_EAGAIN)
    tsu_ult_yield();
  if (tsu_counter_wait(&c, 1) != TSU_OK) g_failures.fetch_add(1);
  return nullptr;
}

}  // namespace

int main() {
  if (tsu_init(nullptr) != TSU_OK) return 2;
  uint32_t me = 0, n = 0;
  tsu_rank(&me);
  tsu_size(&n);
  if (n != 2) {
    std::fprintf(stderr, "needs 2 ranks\n");
    return 2;
  }
  tsu_ult_config_t cfg{};
  cfg.struct_size = sizeof cfg;
  cfg.field_mask = TSU_ULT_CONFIG_WORKERS;
  cfg.workers = 1;
  if (tsu_ult_init(&cfg) != TSU_OK) return 2;
  if (me == 0) {
    tsu_ult_t a, b;
    tsu_ult_create(&a, nullptr, enter_barrier, nullptr);
    tsu_ult_create(&b, nullptr, release_rank1, nullptr);
    tsu_ult_join(a, nullptr);
    tsu_ult_join(b, nullptr);
  } else {
    uint64_t go = 0;
    tsu_counter_t c;
    tsu_counter_init(&c);
    tsu_msg_status_t st;
    if (tsu_try_recv(0, kGoTag, TSU_TAG_EXACT, &go, sizeof go, &st, tsu_counter_cb(&c), nullptr) !=
            TSU_OK ||
        tsu_counter_wait(&c, 1) != TSU_OK || go != 1)
      g_failures.fetch_add(1);
    if (tsu_barrier() != TSU_OK) g_failures.fetch_add(1);
  }
  tsu_ult_finalize();
  tsu_finalize();
  if (g_failures.load() != 0) {
    std::printf("rank %u: FAIL\n", me);
    return 1;
  }
  std::printf("rank %u: PASS\n", me);
  return 0;
}
