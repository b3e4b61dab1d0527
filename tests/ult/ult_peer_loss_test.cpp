// A rank lost while others join threads they spawned on it: every join
// returns TSU_ERR_PEER_LOST (never hangs), later spawns to it are refused,
// threads on the survivors still work, and the survivors finalize.  Run on 3
// pseudo-nodes (udp) with peer-loss detection on; rank 2 dies (SIGKILL)
// inside one of the threads spawned on it.  (The balancer is off: idle
// survivors would otherwise take the slow threads before rank 2 dies.)
#include <signal.h>
#include <time.h>
#include <tsunagi/tsunagi.h>
#include <tsunagi/ult.h>

#include <cstdio>
#include <cstring>
#include <vector>

namespace {
uint32_t g_rank = 0;
enum : uint32_t { kSlow = 1, kDie = 2, kEcho = 3 };

void sleep_ms(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1'000'000};
  nanosleep(&ts, nullptr);
}

// Waits a long time, yielding (the rank is killed meanwhile).
void slow(const void*, size_t, void*, size_t*) {
  for (int i = 0; i < 20000; ++i) {
    sleep_ms(1);
    tsu_ult_yield();
  }
}
void die(const void*, size_t, void*, size_t*) {
  sleep_ms(300);  // the others are joining by now
  raise(SIGKILL);
}
void echo(const void* arg, size_t len, void* value, size_t* vlen) {
  std::memcpy(value, arg, len);
  *vlen = len;
}

int fail(const char* what) {
  std::printf("rank %u: FAIL: %s (%s)\n", g_rank, what, tsu_last_error());
  return 1;
}
}  // namespace

int main() {
  if (tsu_init(nullptr) != TSU_OK) return 1;
  uint32_t n = 0;
  tsu_rank(&g_rank);
  tsu_size(&n);
  if (n != 3) return fail("needs 3 ranks");
  if (tsu_ult_init(nullptr) != TSU_OK) return fail("tsu_ult_init");
  if (tsu_ult_register(kSlow, slow) != TSU_OK || tsu_ult_register(kDie, die) != TSU_OK ||
      tsu_ult_register(kEcho, echo) != TSU_OK)
    return fail("register");
  if (g_rank == 2) {
    // Our threads run until one of them kills the process.
    for (;;) sleep_ms(1000);
  }
  std::vector<tsu_ult_t> ts(20);
  for (auto& t : ts)
    if (tsu_ult_spawn(&t, 2, kSlow, nullptr, 0, nullptr) != TSU_OK) return fail("spawn slow");
  if (g_rank == 0) {
    tsu_ult_attr_t attr{};
    attr.struct_size = sizeof attr;
    attr.field_mask = TSU_ULT_ATTR_DETACHED;
    attr.detached = 1;
    if (tsu_ult_spawn(nullptr, 2, kDie, nullptr, 0, &attr) != TSU_OK) return fail("spawn die");
  }
  for (auto t : ts) {
    size_t len = 0;
    const tsu_status_t st = tsu_ult_join_value(t, nullptr, 0, &len);
    if (st != TSU_ERR_PEER_LOST) return fail("join of a thread on the lost rank");
  }
  tsu_ult_t t;
  if (tsu_ult_spawn(&t, 2, kEcho, nullptr, 0, nullptr) != TSU_ERR_PEER_LOST)
    return fail("spawn to the lost rank");
  // The survivors still work together.
  const uint32_t peer = 1 - g_rank;
  const uint64_t x = 1234 + g_rank;
  if (tsu_ult_spawn(&t, peer, kEcho, &x, sizeof x, nullptr) != TSU_OK) return fail("spawn echo");
  uint64_t y = 0;
  if (tsu_ult_join_value(t, &y, sizeof y, nullptr) != TSU_OK || y != x) return fail("echo");
  std::printf("rank %u: PASS\n", g_rank);
  std::fflush(stdout);
  // Collective over a job with a lost rank: it reports the loss, and stops.
  const tsu_status_t st = tsu_ult_finalize();
  if (st != TSU_OK && st != TSU_ERR_PEER_LOST) return fail("tsu_ult_finalize");
  if (tsu_finalize() != TSU_OK) return fail("finalize");
  std::printf("rank %u: finalized cleanly\n", g_rank);
  return 0;
}
