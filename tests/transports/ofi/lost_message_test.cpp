// A provider that acknowledges a send and never delivers it (libfabric 1.17's
// rxd did, docs/ofi.md): the ranks must learn it and fail, not wait for ever.
// Run with TSU_OFI_TEST_FAULT=message_lost (each rank's 64th message is
// taken and dropped), TSU_OFI_RMA=0 (puts travel as messages), short
// TSU_OFI_PEER_TIMEOUT / TSU_OFI_KEEPALIVE, two ranks on two nodes.
//
// Both ranks put 8 bytes at each other, one request at a time.  Each rank
// must see its requests complete OK until the peer is declared lost, then
// TSU_ERR_PEER_LOST for the one in flight and for every later one, within
// the bound below.  Prints "rank R: PASS ..." or "FAIL: ...".
//
// LOST_MESSAGE_ONLY_RANK=R: only rank R loses a message.  The other rank
// finds the hole and declares R lost; R, alive, must learn it too (the
// "lost" notice) rather than wait for ever: over udp;ofi_rxd its pings
// complete at the provider, which reads as a live peer.
#include <sched.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tsunagi/tsunagi.h"

namespace {

std::atomic<int> g_done{0};
std::atomic<tsu_status_t> g_status{TSU_OK};
void cb(tsu_status_t st, void*) {
  g_status.store(st);
  g_done.fetch_add(1);
}

int fail(uint32_t me, const char* what, int i) {
  std::printf("FAIL: rank %u: %s (request %d): %s\n", me, what, i, tsu_last_error());
  std::fflush(stdout);
  return 1;
}

bool g_timed_out = false;

// One put (8 bytes from offset 0 of this rank's main segment), waited for;
// g_timed_out if it does not complete in `seconds`.
tsu_status_t put_and_wait(uint32_t peer, uint64_t off, double seconds) {
  g_timed_out = false;
  const int before = g_done.load();
  tsu_status_t st;
  while ((st = tsu_try_put(tsu_gaddr(peer, TSU_SEG_MAIN, off), tsu_laddr(TSU_SEG_MAIN, 0), 8,
                           tsu_cb(cb, nullptr))) == TSU_EAGAIN)
    tsu_progress();
  if (st != TSU_OK) return st;  // refused at the call
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (g_done.load() == before) {
    tsu_progress();
    sched_yield();
    if (std::chrono::steady_clock::now() > end) {
      g_timed_out = true;
      return TSU_OK;
    }
  }
  return g_status.load();
}

}  // namespace

int main() {
  if (const char* only = std::getenv("LOST_MESSAGE_ONLY_RANK")) {
    const char* rank = std::getenv("TSU_RANK");  // set by tsurun
    if (!rank || std::strcmp(rank, only) != 0) unsetenv("TSU_OFI_TEST_FAULT");
  }
  if (tsu_init(nullptr) != TSU_OK) {
    std::printf("FAIL: init: %s\n", tsu_last_error());
    return 1;
  }
  uint32_t me = 0, n = 0;
  tsu_rank(&me);
  tsu_size(&n);
  if (n != 2) return fail(me, "needs 2 ranks", 0);
  const uint32_t peer = 1 - me;
  int ok = 0, i = 0;
  tsu_status_t st = TSU_OK;
  // 64 messages at most before the fault; each put is one message (and
  // its acknowledgement one of the peer's), so the loss comes within 200.
  for (; i < 200; ++i) {
    st = put_and_wait(peer, 4096 + 8 * (i % 64), 30.0);
    if (g_timed_out) return fail(me, "a request still waits after 30 s", i);
    if (st != TSU_OK) break;
    ++ok;
  }
  if (st == TSU_OK) return fail(me, "no loss noticed in 200 requests", i);
  if (st != TSU_ERR_PEER_LOST) return fail(me, "a request failed, but not TSU_ERR_PEER_LOST", i);
  // Later requests fail at once, the same way.
  for (int k = 0; k < 5; ++k) {
    st = put_and_wait(peer, 4096, 5.0);
    if (g_timed_out || st != TSU_ERR_PEER_LOST)
      return fail(me, "a request after the loss did not fail so", i + k);
  }
  std::printf("rank %u: PASS (%d requests OK, then TSU_ERR_PEER_LOST)\n", me, ok);
  std::fflush(stdout);
  // Each rank has lost the other: finalize must not wait on it.
  const tsu_status_t fin = tsu_finalize();
  std::printf("rank %u: finalize returned %d\n", me, static_cast<int>(fin));
  return 0;
}
