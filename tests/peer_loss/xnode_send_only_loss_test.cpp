// Requests to a rank this one never exchanged a message with, and that died:
// nothing waits on a message *from* it (no receive, no collective), the
// survivors only send to it.  Run under `tsurun --ranks-per-node 1
// --tolerate-rank-loss` with short keep-alive settings; the last rank is the
// victim and dies right after the bootstrap barrier, before any transport
// traffic to it.  On every network route each survivor must learn of the loss
// from its own sends within the peer timeout (plus slack), never retry
// TSU_EAGAIN forever or wait on a callback that never runs:
//   * a put and a fetch-add issued first (the first contact) complete once,
//     with TSU_ERR_PEER_LOST;
//   * short active messages, retried on TSU_EAGAIN, end in TSU_ERR_PEER_LOST;
//   * a put and a fetch-add with callbacks complete once, with
//     TSU_ERR_PEER_LOST (or are refused with it at the call);
//   * tsu_quiet after a put_nbi to the victim returns TSU_ERR_PEER_LOST.
// The survivors still talk to each other and finalize cleanly.
// Prints "rank R: PASS" / "FAIL: ...".
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "loss_util.hpp"
#include "tsunagi/am.h"
#include "tsunagi/msg.h"
#include "tsunagi/tsunagi.h"

namespace {

using loss::cb_for;
using loss::fail;
using loss::Request;
using loss::wait_for;
using Clock = std::chrono::steady_clock;

// A request to the victim: refused at the call with `st`, or accepted and
// completed once through its callback.  Either way the final status, as
// text ("never completed" when the callback did not run within `limit`).
const char* outcome(tsu_status_t st, Request& r, double limit) {
  if (st == TSU_OK) {
    if (!wait_for([&] { return r.calls.load() > 0; }, limit)) return "never completed";
    st = r.status.load();
  }
  return st == TSU_ERR_PEER_LOST ? nullptr : tsu_strerror(st);
}

}  // namespace

int main() {
  uint32_t me = 0, n = 0;
  if (const int rc = loss::start(me, n, 2)) return rc;
  const uint32_t victim = n - 1;
  // The bootstrap barrier (no transport traffic): the victim dies right after
  // it, so no survivor ever reached it through its transport.
  if (tsu_barrier() != TSU_OK) return fail(me, "tsu_barrier");
  if (me == victim) {
    std::printf("rank %u: dying now\n", me);
    std::fflush(stdout);
    raise(SIGKILL);
  }
  usleep(200 * 1000);  // the victim is gone (tsurun reports it)

  const double limit = loss::peer_timeout_seconds() + 15.0;

  // First contact is a put and a fetch-add (in flight while the loss is
  // found), then short AMs, retried on TSU_EAGAIN: the sender must be told.
  Request first_put, first_fadd;
  static uint64_t first_result = 0;
  const tsu_status_t first_put_st = tsu_try_put(tsu_gaddr(victim, TSU_SEG_MAIN, 64),
                                                tsu_laddr(TSU_SEG_MAIN, 0), 8, cb_for(first_put));
  const tsu_status_t first_fadd_st = tsu_try_fetch_add_u64(
      tsu_gaddr(victim, TSU_SEG_MAIN, 128), 1, &first_result, cb_for(first_fadd));
  {
    const auto end = Clock::now() + std::chrono::duration<double>(limit);
    tsu_status_t st = TSU_OK;
    uint64_t sent = 0, eagain = 0;
    const uint64_t args[2] = {me, 0};
    while (Clock::now() < end) {
      st = tsu_try_am_short(victim, 5, args, 2, tsu_cb_none());
      if (st == TSU_OK) {
        ++sent;
      } else if (st == TSU_EAGAIN) {
        ++eagain;
        tsu_progress();
        usleep(1000);
      } else {
        break;
      }
    }
    if (st != TSU_ERR_PEER_LOST) {
      std::printf("rank %u: FAIL: short AMs to the lost rank ended with %s after %llu sent, "
                  "%llu TSU_EAGAIN\n",
                  me, tsu_strerror(st), static_cast<unsigned long long>(sent),
                  static_cast<unsigned long long>(eagain));
      std::fflush(stdout);
      return 1;
    }
  }

  if (const char* why = outcome(first_put_st, first_put, limit)) {
    std::printf("rank %u: FAIL: a put in flight to the lost rank ended with %s\n", me, why);
    std::fflush(stdout);
    return 1;
  }
  if (const char* why = outcome(first_fadd_st, first_fadd, limit)) {
    std::printf("rank %u: FAIL: a fetch-add in flight to the lost rank ended with %s\n", me, why);
    std::fflush(stdout);
    return 1;
  }

  // One-sided requests to the rank now known lost.
  Request put, fadd;
  static uint64_t word = 7, result = 0;
  const char* put_st =
      outcome(tsu_try_put(tsu_gaddr(victim, TSU_SEG_MAIN, 64), tsu_laddr(TSU_SEG_MAIN, 0), 8,
                          cb_for(put)),
              put, limit);
  if (put_st) {
    std::printf("rank %u: FAIL: a put to the lost rank ended with %s\n", me, put_st);
    std::fflush(stdout);
    return 1;
  }
  const char* fadd_st = outcome(
      tsu_try_fetch_add_u64(tsu_gaddr(victim, TSU_SEG_MAIN, 128), word, &result, cb_for(fadd)),
      fadd, limit);
  if (fadd_st) {
    std::printf("rank %u: FAIL: a fetch-add to the lost rank ended with %s\n", me, fadd_st);
    std::fflush(stdout);
    return 1;
  }
  // Implicit completion: refused at the call, or reported by tsu_quiet.
  const tsu_status_t nbi =
      tsu_try_put_nbi(tsu_gaddr(victim, TSU_SEG_MAIN, 256), tsu_laddr(TSU_SEG_MAIN, 0), 8);
  const tsu_status_t quiet = nbi == TSU_OK ? tsu_quiet() : nbi;
  if (quiet != TSU_ERR_PEER_LOST) {
    std::printf("rank %u: FAIL: put_nbi + tsu_quiet to the lost rank ended with %s\n", me,
                tsu_strerror(quiet));
    std::fflush(stdout);
    return 1;
  }
  // Exactly once.
  for (int i = 0; i < 50; ++i) tsu_progress();
  if (put.calls.load() > 1 || fadd.calls.load() > 1 || first_put.calls.load() > 1 ||
      first_fadd.calls.load() > 1)
    return fail(me, "a callback ran twice");

  // The survivors still reach each other (a tagged message each way).
  if (n > 2) {
    const uint32_t other = me == 0 ? 1 : 0;
    uint64_t in = 0, out = 1000 + me;
    Request recv, send;
    if (tsu_try_recv(other, 3, TSU_TAG_EXACT, &in, sizeof in, nullptr, cb_for(recv), nullptr) !=
        TSU_OK)
      return fail(me, "receive from a survivor");
    tsu_status_t st;
    const auto end = Clock::now() + std::chrono::seconds(10);
    while ((st = tsu_try_send(other, 3, &out, sizeof out, cb_for(send))) == TSU_EAGAIN &&
           Clock::now() < end)
      tsu_progress();
    if (st != TSU_OK) return fail(me, "send to a survivor");
    if (!wait_for([&] { return recv.calls.load() > 0 && send.calls.load() > 0; }, 20) ||
        recv.status.load() != TSU_OK || send.status.load() != TSU_OK || in != 1000 + other)
      return fail(me, "a tagged message between survivors");
  }
  std::printf("rank %u: PASS\n", me);
  std::fflush(stdout);
  if (tsu_finalize() != TSU_OK) return fail(me, "finalize");
  std::printf("rank %u: finalized cleanly\n", me);
  return 0;
}
