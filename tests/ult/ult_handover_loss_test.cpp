// A rank lost in the middle of a hand-over of threads (load balancing):
// rank 1 holds queued spawned threads (its own, and rank 0's, spawned with
// attr.migratable so the balancer may move them), rank 2 asks
// it for work and is lost before or right after receiving them.  Every
// join of a thread handed to rank 2 must return TSU_ERR_PEER_LOST (never
// hang), the others their value; the survivors finalize.  Run on 3
// pseudo-nodes (udp) with peer-loss detection, one worker per rank, under
// test faults (TSU_ULT_TEST_FAULTS, docs/ult.md):
//   handover_eagain                 the hand-over's messages find the queue
//                                   full at their first try (a move notice
//                                   dropped then left rank 0's joins hanging)
//   handover_eagain,handover_lost   besides, the send to the thief fails as
//                                   if it were lost (rank 0 must hear of it
//                                   from rank 1)
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <tsunagi/tsunagi.h>
#include <tsunagi/ult.h>

#include <cstdio>
#include <cstring>
#include <vector>

namespace {
uint32_t g_rank = 0;
enum : uint32_t { kBlock = 1, kWork = 2 };
constexpr int kMine = 8;  // threads ranks 0 and 1 each spawn on rank 1 and join

void sleep_ms(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1'000'000};
  nanosleep(&ts, nullptr);
}

// Holds rank 1's only worker without yielding, so the threads behind it stay
// queued (not started: only those are handed over), until rank 1 has handed
// at least 16 threads to rank 2 (or 20 s, on a very busy machine: the joins
// then return values and the test fails as having tested nothing).
void block(const void*, size_t, void*, size_t*) {
  for (int i = 0; i < 2000; ++i) {
    tsu_ult_counters_t c{};
    tsu_ult_counters(&c);
    if (c.migrated >= 16) break;
    sleep_ms(10);
  }
  sleep_ms(100);
}
// Handed to rank 2, it dies there at once.
void work(const void*, size_t, void* value, size_t* vlen) {
  if (g_rank == 2) raise(SIGKILL);
  const uint32_t v = 7;
  std::memcpy(value, &v, sizeof v);
  *vlen = sizeof v;
}

int fail(const char* what, tsu_status_t st = TSU_OK) {
  std::printf("rank %u: FAIL: %s (%s; %s)\n", g_rank, what, tsu_strerror(st), tsu_last_error());
  std::fflush(stdout);
  return 1;
}
}  // namespace

int main() {
  if (tsu_init(nullptr) != TSU_OK) return 1;
  uint32_t n = 0;
  tsu_rank(&g_rank);
  tsu_size(&n);
  if (n != 3) return fail("needs 3 ranks");
  // Only rank 2 asks for work (rank 0 would take rank 1's threads too), and
  // only once it believes rank 1 holds more than 32 threads: it then asks
  // for at least 16, the oldest of which are ranks 0's and 1's 16.
  if (g_rank != 2) setenv("TSU_ULT_LB", "0", 1);
  else setenv("TSU_ULT_LB_THRESHOLD", "32", 1);
  if (tsu_ult_init(nullptr) != TSU_OK) return fail("tsu_ult_init");
  if (tsu_ult_register(kBlock, block) != TSU_OK || tsu_ult_register(kWork, work) != TSU_OK)
    return fail("register");
  tsu_ult_t blocker = nullptr;
  std::vector<tsu_ult_t> mine(kMine);
  if (g_rank == 1) {
    if (tsu_ult_spawn(&blocker, 1, kBlock, nullptr, 0, nullptr) != TSU_OK)
      return fail("spawn blocker");
    sleep_ms(100);  // it runs now: what follows stays queued behind it
  }
  if (tsu_barrier() != TSU_OK) return fail("barrier");  // (rank 0's must queue too)
  // Spawned on rank 1 and let move (a thread on a named rank moves only so).
  tsu_ult_attr_t movable{};
  movable.struct_size = sizeof movable;
  movable.field_mask = TSU_ULT_ATTR_MIGRATABLE;
  movable.migratable = 1;
  if (g_rank != 2) {
    for (auto& t : mine)
      if (const tsu_status_t st = tsu_ult_spawn(&t, 1, kWork, nullptr, 0, &movable); st != TSU_OK)
        return fail("spawn work", st);
  }
  if (tsu_barrier() != TSU_OK) return fail("barrier");
  if (g_rank == 2) {
    sleep_ms(200);  // rank 0's spawns have reached rank 1
    // Detached threads on rank 1: our estimate of its load grows by one per
    // spawn, so our idle worker asks it for half of them.
    tsu_ult_attr_t attr{};
    attr.struct_size = sizeof attr;
    attr.field_mask = TSU_ULT_ATTR_DETACHED | TSU_ULT_ATTR_MIGRATABLE;
    attr.detached = 1;
    attr.migratable = 1;
    for (int i = 0; i < 64; ++i)
      if (tsu_ult_spawn(nullptr, 1, kWork, nullptr, 0, &attr) != TSU_OK)
        return fail("spawn detached");
    sleep_ms(3000);  // lost by now at the latest (handover_lost: nothing comes)
    raise(SIGKILL);
  }
  int lost = 0, ok = 0;
  for (auto t : mine) {
    uint32_t v = 0;
    size_t len = 0;
    const tsu_status_t st = tsu_ult_join_value(t, &v, sizeof v, &len);
    if (st == TSU_OK && len == sizeof v && v == 7) ++ok;
    else if (st == TSU_ERR_PEER_LOST) ++lost;
    else return fail("join", st);
  }
  if (g_rank == 1 && tsu_ult_join(blocker, nullptr) != TSU_OK) return fail("join blocker");
  std::printf("rank %u: %d joins returned the value, %d TSU_ERR_PEER_LOST\n", g_rank, ok, lost);
  if (lost == 0) return fail("no thread was handed to rank 2 (the test tested nothing)");
  std::printf("rank %u: PASS\n", g_rank);
  std::fflush(stdout);
  const tsu_status_t st = tsu_ult_finalize();
  if (st != TSU_OK && st != TSU_ERR_PEER_LOST) return fail("tsu_ult_finalize", st);
  if (tsu_finalize() != TSU_OK) return fail("finalize");
  std::printf("rank %u: finalized cleanly\n", g_rank);
  return 0;
}
