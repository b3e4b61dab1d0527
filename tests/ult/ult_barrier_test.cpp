// A collective blocking call inside a ULT lets its worker run other ULTs
// while it waits: tsu_barrier, or (argument "am_register") tsu_am_register.
// Two ranks, ONE worker each.  On rank 0, thread A enters the call first;
// thread B, queued behind A on the same worker, then sends rank 1 the
// message rank 1 waits for before it makes the call.  If the call held the
// worker, B would never run and both ranks would wait forever (the test then
// fails by its timeout).
#include <tsunagi/am.h>
#include <tsunagi/tsunagi.h>
#include <tsunagi/ult.h>

#include <atomic>
#include <cstdio>
#include <cstring>

namespace {

constexpr uint64_t kGoTag = 77;
constexpr uint32_t kHandlerId = 5;
std::atomic<bool> g_a_entered{false};
std::atomic<int> g_failures{0};
bool g_register = false;  // the call: tsu_am_register instead of tsu_barrier

void on_am(tsu_am_token_t*, const uint64_t*, uint32_t, void*, size_t, void*) {}

tsu_status_t collective_call() {
  return g_register ? tsu_am_register(kHandlerId, on_am, nullptr) : tsu_barrier();
}

void* enter_collective(void*) {
  g_a_entered.store(true);
  const tsu_status_t st = collective_call();
  if (st != TSU_OK) {
    std::fprintf(stderr, "rank 0: %s in a ULT: %s\n", g_register ? "tsu_am_register" : "tsu_barrier",
                 tsu_last_error());
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

int main(int argc, char** argv) {
  g_register = argc > 1 && std::strcmp(argv[1], "am_register") == 0;
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
    tsu_ult_create(&a, nullptr, enter_collective, nullptr);
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
    if (collective_call() != TSU_OK) g_failures.fetch_add(1);
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
