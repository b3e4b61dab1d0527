// Peer loss: a rank dies (SIGKILL) in the middle of a run; the others get
// TSU_ERR_PEER_LOST for every pending and every new request to it within the
// configured timeout, and finalize cleanly.  Run under
// `tsurun --tolerate-rank-loss` with TSU_UDP_PEER_TIMEOUT set.
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tsunagi/tsunagi.h"

namespace {
std::atomic<int> g_done{0}, g_lost{0}, g_ok{0}, g_other{0};
void cb(tsu_status_t st, void*) {
  if (st == TSU_ERR_PEER_LOST) ++g_lost;
  else if (st == TSU_OK) ++g_ok;
  else ++g_other;
  ++g_done;
}
int fail(const char* what) {
  std::printf("FAIL: %s\n", what);
  std::fflush(stdout);
  return 1;
}
bool wait_done(int n, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (g_done.load() < n) {
    tsu_progress();
    sched_yield();
    if (std::chrono::steady_clock::now() > end) return false;
  }
  return true;
}
}  // namespace

int main() {
  if (tsu_init(nullptr) != TSU_OK) return fail(tsu_last_error());
  uint32_t me, n;
  tsu_rank(&me);
  tsu_size(&n);
  const uint32_t victim = n - 1;
  // Everyone talks to the victim first.
  uint64_t v = 0;
  if (me != victim) {
    if (tsu_try_fetch_add_u64(tsu_gaddr(victim, TSU_SEG_MAIN, 0), 1, &v, tsu_cb(cb, nullptr)) != TSU_OK)
      return fail("first fetch-add not accepted");
    if (!wait_done(1, 20) || g_ok.load() != 1) return fail("first fetch-add did not complete OK");
  }
  if (tsu_barrier() != TSU_OK) return fail("barrier");
  if (me == victim) {
    std::printf("rank %u: dying now\n", me);
    std::fflush(stdout);
    raise(SIGKILL);
  }
  // Keep requests in flight while the victim dies.
  const auto t0 = std::chrono::steady_clock::now();
  int issued = 1;
  for (int i = 0; i < 50; ++i) {
    tsu_status_t st;
    while ((st = tsu_try_get(tsu_laddr(TSU_SEG_MAIN, 4096), tsu_gaddr(victim, TSU_SEG_MAIN, 0), 4096,
                             tsu_cb(cb, nullptr))) == TSU_EAGAIN)
      tsu_progress();
    if (st != TSU_OK) return fail("get not accepted");
    ++issued;
    usleep(2000);
  }
  const char* to = std::getenv("TSU_UDP_PEER_TIMEOUT");
  const double limit = (to ? std::atof(to) : 10.0) + 3.0;
  if (!wait_done(issued, limit)) return fail("pending requests to the dead rank did not complete");
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (g_lost.load() == 0) return fail("no request completed with PEER_LOST");
  // A new request to the lost rank fails the same way.
  const int lost_before = g_lost.load();
  if (tsu_try_put(tsu_gaddr(victim, TSU_SEG_MAIN, 0), tsu_laddr(TSU_SEG_MAIN, 0), 8, tsu_cb(cb, nullptr)) != TSU_OK)
    return fail("new put not accepted");
  ++issued;
  if (!wait_done(issued, 5) || g_lost.load() != lost_before + 1) return fail("new request did not get PEER_LOST");
  // The survivors still reach each other.
  if (n > 2) {
    const uint32_t other = me == 0 ? 1 : 0;
    if (tsu_try_fetch_add_u64(tsu_gaddr(other, TSU_SEG_MAIN, 64), 1, &v, tsu_cb(cb, nullptr)) != TSU_OK)
      return fail("survivor fetch-add not accepted");
    ++issued;
    if (!wait_done(issued, 10)) return fail("survivor fetch-add did not complete");
  }
  std::printf("rank %u: PEER_LOST after %.2f s (lost=%d ok=%d other=%d)\n", me, secs, g_lost.load(),
              g_ok.load(), g_other.load());
  std::fflush(stdout);
  if (g_other.load()) return fail("unexpected status");
  if (tsu_finalize() != TSU_OK) return fail("finalize");
  std::printf("rank %u: finalized cleanly\n", me);
  return 0;
}
