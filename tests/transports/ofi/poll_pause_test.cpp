// A rank that stops polling for longer than the peer timeout (manual
// progress, a long computation) must not declare a peer lost whose message
// sits unread in its queue.  Run with TSU_PROGRESS=manual, a 2 s peer
// timeout (TSU_OFI_PEER_TIMEOUT / TSU_UDP_PEER_TIMEOUT), two ranks as nodes.
//
// After one message each way (the provider's connection is up), rank 0
// posts a receive from rank 1 (it now waits on rank 1), makes one progress
// call, then sleeps 3 s without a tsunagi call.  Rank 1 sends 1 s in, then
// sleeps 3 s itself (waiting on nobody); both meet in a barrier.  When rank
// 0 polls again the message is there: the receive must complete TSU_OK with
// the data, and a message each way afterwards must too (no peer lost).
// Before, the ofi transport judged silence before reading its queue and
// counted time it did not poll, and the ranks declared each other lost
// ("silent past TSU_OFI_PEER_TIMEOUT").
// Prints "rank R: PASS" or "FAIL: ...".
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "tsunagi/tsunagi.h"

namespace {

std::atomic<int> g_done{0};
std::atomic<tsu_status_t> g_status{TSU_OK};
void cb(tsu_status_t st, void*) {
  g_status.store(st);
  g_done.fetch_add(1);
}

int fail(uint32_t me, const char* what, tsu_status_t st) {
  std::printf("FAIL: rank %u: %s (status %d: %s)\n", me, what, static_cast<int>(st),
              tsu_last_error());
  std::fflush(stdout);
  return 1;
}

// Sends a short message to the other rank and receives its own (tag),
// bounded by 20 s; false (and a FAIL line) on any failure.
bool exchange(uint32_t me, uint64_t tag, const char* what) {
  char in[8] = {};
  const char out[8] = "ping";
  tsu_status_t st;
  g_done.store(0);
  while ((st = tsu_try_send(1 - me, tag, out, sizeof out, tsu_cb_none())) == TSU_EAGAIN)
    tsu_progress();
  if (st != TSU_OK) return fail(me, what, st), false;
  st = tsu_try_recv(1 - me, tag, ~uint64_t{0}, in, sizeof in, nullptr, tsu_cb(cb, nullptr),
                    nullptr);
  if (st != TSU_OK) return fail(me, what, st), false;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (g_done.load() == 0) {
    tsu_progress();
    if (std::chrono::steady_clock::now() > end) {
      std::printf("FAIL: rank %u: %s: no message in 20 s\n", me, what);
      return false;
    }
  }
  if (g_status.load() != TSU_OK) return fail(me, what, g_status.load()), false;
  g_done.store(0);
  return true;
}

}  // namespace

int main() {
  if (tsu_init(nullptr) != TSU_OK) {
    std::printf("FAIL: init: %s\n", tsu_last_error());
    return 1;
  }
  uint32_t me = 0, n = 0;
  tsu_rank(&me);
  tsu_size(&n);
  if (n != 2) return fail(me, "needs 2 ranks", TSU_OK);
  // One message each way first: the provider's connection between the two
  // is up before the pause (setting one up needs both sides to poll).
  if (!exchange(me, 1, "hello")) return 1;
  tsu_status_t st = tsu_barrier();
  if (st != TSU_OK) return fail(me, "first barrier", st);
  constexpr uint64_t kTag = 7;
  const char text[] = "sent before the pause";
  if (me == 0) {
    char buf[64] = {};
    tsu_msg_status_t ms{};
    st = tsu_try_recv(1, kTag, ~uint64_t{0}, buf, sizeof buf, &ms, tsu_cb(cb, nullptr), nullptr);
    if (st != TSU_OK) return fail(me, "posting the receive", st);
    tsu_progress();  // the wait on rank 1 is now known to the transport
    sleep(3);  // no tsunagi call: longer than the 2 s peer timeout
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (g_done.load() == 0) {
      tsu_progress();
      sched_yield();
      if (std::chrono::steady_clock::now() > end)
        return fail(me, "receive not done in 10 s", TSU_OK);
    }
    if (g_status.load() != TSU_OK) return fail(me, "the receive failed", g_status.load());
    if (std::strcmp(buf, text) != 0) return fail(me, "wrong data", TSU_OK);
  } else {
    sleep(1);  // the message comes while rank 0 sleeps
    while ((st = tsu_try_send(0, kTag, text, sizeof text, tsu_cb(cb, nullptr))) == TSU_EAGAIN)
      tsu_progress();
    if (st != TSU_OK) return fail(me, "send", st);
    sleep(3);  // waiting on nobody
  }
  st = tsu_barrier();
  if (st != TSU_OK) return fail(me, "last barrier", st);
  // Neither rank may have been declared lost: one more message each way.
  if (!exchange(me, 9, "after the pause")) return 1;
  std::printf("rank %u: PASS\n", me);
  std::fflush(stdout);
  return tsu_finalize() == TSU_OK ? 0 : fail(me, "finalize", TSU_OK);
}
