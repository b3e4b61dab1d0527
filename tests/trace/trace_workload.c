/* A small job for the timeline test (check_trace.py): RMA and atomics to
 * every rank (node peers by bypass or the engine, other nodes over udp), an
 * allreduce and a barrier, and an idle gap so the progress thread sleeps.
 * Written against the public C API only. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <tsunagi/tsunagi.h>

#define CHECK(call)                                                          \
  do {                                                                       \
    tsu_status_t st_ = (call);                                               \
    if (st_ != TSU_OK) {                                                     \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,          \
              tsu_strerror(st_));                                            \
      return 1;                                                              \
    }                                                                        \
  } while (0)

/* Retries a request refused with TSU_EAGAIN (driving progress meanwhile). */
#define ISSUE(call)                                                          \
  do {                                                                       \
    tsu_status_t st_;                                                        \
    while ((st_ = (call)) == TSU_EAGAIN) tsu_progress();                     \
    CHECK(st_);                                                              \
  } while (0)

enum { kRequests = 50, kMaxRanks = 16 };

static void pause_ms(long ms) {
  struct timespec ts = {0, ms * 1000000L};
  nanosleep(&ts, NULL);
}

int main(void) {
  CHECK(tsu_init(NULL));
  uint32_t me = 0, n = 0;
  CHECK(tsu_rank(&me));
  CHECK(tsu_size(&n));
  if (n > kMaxRanks) {
    fprintf(stderr, "at most %d ranks\n", kMaxRanks);
    return 1;
  }
  /* Layout of every main segment, so no two requests in flight touch the
   * same bytes (the test runs under ThreadSanitizer too): [0, 8) the atomic
   * counter, [64, 128) put source and get source (only read), [4096 + 64 *
   * rank) each writer's put destination, [8192 + 64 * k) a get destination
   * per request. */
  static uint64_t old[kRequests * kMaxRanks];
  tsu_counter_t done;
  tsu_counter_init(&done);
  uint64_t issued = 0;
  for (int round = 0; round < 2; ++round) {
    for (uint32_t i = 0; i < kRequests; ++i)
      for (uint32_t r = 0; r < n; ++r) {
        const uint32_t k = i * n + r;
        ISSUE(tsu_try_put(tsu_gaddr(r, TSU_SEG_MAIN, 4096 + 64 * me), tsu_laddr(TSU_SEG_MAIN, 64),
                          64, tsu_counter_cb(&done)));
        ISSUE(tsu_try_get(tsu_laddr(TSU_SEG_MAIN, 8192 + 64 * k), tsu_gaddr(r, TSU_SEG_MAIN, 64),
                          64, tsu_counter_cb(&done)));
        ISSUE(tsu_try_fetch_add_u64(tsu_gaddr(r, TSU_SEG_MAIN, 0), 1, &old[k],
                                    tsu_counter_cb(&done)));
        issued += 3;
      }
    CHECK(tsu_counter_wait(&done, issued));
    /* Idle: the progress thread spins, then sleeps; the next round wakes it. */
    pause_ms(30);
  }
  uint64_t mine = me + 1, sum = 0;
  ISSUE(tsu_try_allreduce(TSU_TEAM_WORLD, &mine, &sum, 1, TSU_DT_UINT64, TSU_OP_SUM,
                          tsu_counter_cb(&done)));
  ISSUE(tsu_try_barrier(TSU_TEAM_WORLD, tsu_counter_cb(&done)));
  issued += 2;
  CHECK(tsu_counter_wait(&done, issued));
  if (sum != (uint64_t)n * (n + 1) / 2) {
    fprintf(stderr, "allreduce: %llu, expected %llu\n", (unsigned long long)sum,
            (unsigned long long)n * (n + 1) / 2);
    return 1;
  }
  CHECK(tsu_barrier());
  CHECK(tsu_finalize());
  return 0;
}
