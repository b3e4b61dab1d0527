// Messaging when a rank on another node, or on this one, dies
// mid-conversation.  Run under `tsurun --ranks-per-node 1
// --tolerate-rank-loss` with a short TSU_UDP_PEER_TIMEOUT (or with every rank
// on one node: messaging.node.*); the last rank is the victim.  It sends a rendezvous
// message to every survivor (who posted the receive in advance, so a CTS goes
// back to a dead rank) and dies.  Each survivor then has in flight: that
// receive, a receive nobody will match, a rendezvous send and a multi-MiB
// long AM to the victim, and a barrier on the world team.  Every one of them
// must complete exactly once with TSU_ERR_PEER_LOST; new requests to the
// victim fail the same way; blocking collectives over all ranks return
// TSU_ERR_PEER_LOST instead of hanging; the survivors still talk to each
// other and finalize cleanly.  Prints "rank R: PASS" / "FAIL: ...".
// PEER_LOSS_RTS_FIRST=1: the victim drives progress 100 ms before dying and
// each survivor 50 ms before its own requests, so that every survivor reads
// the victim's rendezvous before it learns of the death (the order the
// ofi.recv_refused tests need; otherwise a survivor's first send to the dead
// rank may find it lost first).
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "loss_util.hpp"
#include "tsunagi/tsunagi.h"

namespace {

using loss::cb_for;
using loss::fail;
using loss::Request;

using loss::wait_for;

// Retries TSU_EAGAIN for a bounded time.
template <typename F>
tsu_status_t issue(F&& try_fn) {
  tsu_status_t st;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while ((st = try_fn()) == TSU_EAGAIN && std::chrono::steady_clock::now() < end) tsu_progress();
  return st;
}

std::atomic<int> g_long_handled{0};
void on_long(tsu_am_token_t*, const uint64_t*, uint32_t, void*, size_t, void*) {
  g_long_handled.fetch_add(1);
}

// Calls tsu_progress for `ms` milliseconds (manual progress: nothing else
// reads the network meanwhile).
void drive_progress(int ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < end) {
    tsu_progress();
    usleep(1000);
  }
}

}  // namespace

int main() {
  uint32_t me = 0, n = 0;
  if (const int rc = loss::start(me, n, 2)) return rc;
  const uint32_t victim = n - 1;
  uint32_t my_node = 0, victim_node = 1;
  if (tsu_node_of(me, &my_node) != TSU_OK || tsu_node_of(victim, &victim_node) != TSU_OK)
    return fail(me, "tsu_node_of");
  const bool victim_on_my_node = my_node == victim_node;
  const size_t kRndv = 1u << 20, kLong = 3u << 20;
  const char* rts_env = std::getenv("PEER_LOSS_RTS_FIRST");
  const bool rts_first = rts_env && std::atoi(rts_env) == 1;
  std::vector<unsigned char> out(kLong, 0x3C), in(kRndv, 0);

  // Before the victim dies: the receive its rendezvous will match.
  Request from_victim{"receive of the victim's rendezvous"};
  tsu_msg_status_t from_victim_status{};
  if (me != victim &&
      tsu_try_recv(victim, 7, TSU_TAG_EXACT, in.data(), in.size(), &from_victim_status,
                   cb_for(from_victim), nullptr) != TSU_OK)
    return fail(me, "posting the receive");
  // Collective, drives progress: every rank is here and has posted.
  if (tsu_am_register(5, on_long, nullptr) != TSU_OK) return fail(me, "tsu_am_register");
  // tsu_am_register's synchronization ends on each rank when its last round
  // arrives: the victim may be done while its own last message to a survivor
  // still waits for an ack (udp) or a retransmission.  Killed then, it fails
  // that survivor's tsu_am_register, which is not what this test is about.
  // The bootstrap barrier (no transport traffic) keeps it until every rank
  // has returned from tsu_am_register.
  if (tsu_barrier() != TSU_OK) return fail(me, "tsu_barrier");

  if (me == victim) {
    for (uint32_t s = 0; s < victim; ++s)
      if (issue([&] { return tsu_try_send(s, 7, out.data(), kRndv, tsu_cb_none()); }) != TSU_OK)
        return fail(me, "rendezvous send");
    if (rts_first) drive_progress(100);
    std::printf("rank %u: dying now\n", me);
    std::fflush(stdout);
    raise(SIGKILL);
  }

  // Survivors: requests to (and from) the victim, in flight as it dies.  A
  // route that has already noticed the loss (over ofi a dead peer's
  // connection may reset at once) refuses them at the call instead:
  // TSU_ERR_PEER_LOST either way, recorded as that request's one completion.
  // The victim dies right after its sends: give it that moment, so that it
  // cannot still handle (and acknowledge) what follows.
  usleep(300 * 1000);
  if (rts_first) drive_progress(50);
  Request never{"receive nobody matches"}, rndv{"rendezvous send"}, long_am{"long AM"},
      barrier{"barrier on the world team"};
  auto accepted = [](tsu_status_t st, Request& r) {
    if (st == TSU_ERR_PEER_LOST) loss::on_done(st, &r);
    return st == TSU_OK || st == TSU_ERR_PEER_LOST;
  };
  if (tsu_try_recv(victim, 8, TSU_TAG_EXACT, in.data(), 64, nullptr, cb_for(never), nullptr) != TSU_OK)
    return fail(me, "posting the unmatched receive");
  if (!accepted(issue([&] { return tsu_try_send(victim, 6, out.data(), kRndv, cb_for(rndv)); }),
                rndv))
    return fail(me, "rendezvous send to the victim");
  if (!accepted(issue([&] {
                  return tsu_try_am_long(victim, 5, nullptr, 0, out.data(), kLong,
                                         tsu_gaddr(victim, TSU_SEG_MAIN, 1u << 20),
                                         cb_for(long_am));
                }),
                long_am))
    return fail(me, "long AM to the victim");
  if (!accepted(tsu_try_barrier(TSU_TEAM_WORLD, cb_for(barrier)), barrier))
    return fail(me, "tsu_try_barrier");

  const double limit = loss::peer_timeout_seconds() + 10.0;
  Request* all[] = {&from_victim, &never, &rndv, &long_am, &barrier};
  for (Request* r : all) {
    if (!wait_for([&] { return r->calls.load() > 0; }, limit)) {
      std::printf("rank %u: FAIL: %s never completed\n", me, r->what);
      std::fflush(stdout);
      return 1;
    }
    // The victim's progress thread may answer our CTS in the instant
    // between its send and its death: then that receive completes whole.
    const bool whole = r == &from_victim && r->status.load() == TSU_OK &&
                       from_victim_status.length == kRndv &&
                       std::all_of(in.begin(), in.end(), [](unsigned char c) { return c == 0x3C; });
    // To a node peer a long AM is complete once its data and header are in
    // the peer's memory and ring, which this rank may do before it notices
    // the death (a check every 50 ms of progress; docs/messaging.md, "A
    // node peer dies").  The late long AM below must fail.
    const bool delivered = r == &long_am && victim_on_my_node && r->status.load() == TSU_OK;
    if (r->status.load() != TSU_ERR_PEER_LOST && !whole && !delivered) {
      std::printf("rank %u: FAIL: %s completed with %s, not TSU_ERR_PEER_LOST\n", me, r->what,
                  tsu_strerror(r->status.load()));
      std::fflush(stdout);
      return 1;
    }
  }
  if (from_victim_status.error != from_victim.status.load()) return fail(me, "receive status");

  // New requests involving the victim fail the same way (at once, or through
  // the callback).
  Request late_recv{"late receive"}, late_long{"late long AM"};
  if (tsu_try_recv(victim, 9, TSU_TAG_EXACT, in.data(), 8, nullptr, cb_for(late_recv), nullptr) != TSU_OK)
    return fail(me, "late receive");
  if (late_recv.calls.load() != 1 || late_recv.status.load() != TSU_ERR_PEER_LOST)
    return fail(me, "a receive from a lost rank completes with TSU_ERR_PEER_LOST at once");
  const tsu_status_t st = tsu_try_am_long(victim, 5, nullptr, 0, out.data(), 100,
                                          tsu_gaddr(victim, TSU_SEG_MAIN, 0), cb_for(late_long));
  if (st != TSU_ERR_PEER_LOST &&
      !(st == TSU_OK && wait_for([&] { return late_long.calls.load() > 0; }, 5) &&
        late_long.status.load() == TSU_ERR_PEER_LOST)) {
    std::printf("rank %u: late long AM: returned %s, %d callbacks, last status %s\n", me,
                tsu_strerror(st), late_long.calls.load(), tsu_strerror(late_long.status.load()));
    return fail(me, "late long AM to the lost rank");
  }
  if (tsu_try_send(victim, 1, out.data(), kRndv, tsu_cb_none()) != TSU_ERR_PEER_LOST)
    return fail(me, "late rendezvous send to the lost rank");
  // One-sided requests on its memory fail too (on one node they no longer
  // write into the dead process's mapped segment).
  {
    Request late_put{"late put"}, late_get{"late get"}, late_fadd{"late fetch-add"};
    static uint64_t result = 0;
    auto refused = [&](tsu_status_t at_call, Request& r) {
      if (at_call != TSU_OK) return at_call == TSU_ERR_PEER_LOST;
      return wait_for([&] { return r.calls.load() > 0; }, 5) &&
             r.status.load() == TSU_ERR_PEER_LOST;
    };
    if (!refused(tsu_try_put(tsu_gaddr(victim, TSU_SEG_MAIN, 64), tsu_laddr(TSU_SEG_MAIN, 0), 8,
                             cb_for(late_put)),
                 late_put))
      return fail(me, "a late put to the lost rank does not fail with TSU_ERR_PEER_LOST");
    if (!refused(tsu_try_get(tsu_laddr(TSU_SEG_MAIN, 0), tsu_gaddr(victim, TSU_SEG_MAIN, 64), 8,
                             cb_for(late_get)),
                 late_get))
      return fail(me, "a late get from the lost rank does not fail with TSU_ERR_PEER_LOST");
    if (!refused(tsu_try_fetch_add_u64(tsu_gaddr(victim, TSU_SEG_MAIN, 128), 1, &result,
                                       cb_for(late_fadd)),
                 late_fadd))
      return fail(me, "a late fetch-add on the lost rank does not fail with TSU_ERR_PEER_LOST");
  }
  // Blocking collectives over every rank report the loss instead of hanging.
  if (tsu_am_register(6, on_long, nullptr) != TSU_ERR_PEER_LOST)
    return fail(me, "tsu_am_register with a lost rank");
  tsu_team_t team = TSU_TEAM_NULL;
  if (tsu_team_split(TSU_TEAM_WORLD, 0, me, &team) != TSU_ERR_PEER_LOST)
    return fail(me, "tsu_team_split with a lost rank");

  // The survivors still reach each other: a long AM between them.
  if (n > 2) {
    Request peer{"long AM between survivors"};
    const uint32_t other = me == 0 ? 1 : 0;
    if (issue([&] {
          return tsu_try_am_long(other, 5, nullptr, 0, out.data(), 300000,
                                 tsu_gaddr(other, TSU_SEG_MAIN, (2u << 20) + me * 400000),
                                 cb_for(peer));
        }) != TSU_OK)
      return fail(me, "long AM to a survivor");
    if (!wait_for([&] { return peer.calls.load() > 0; }, 20) || peer.status.load() != TSU_OK)
      return fail(me, "long AM to a survivor did not complete OK");
    if (!wait_for([&] { return g_long_handled.load() >= 1; }, 20))
      return fail(me, "the other survivor's long AM did not arrive");
  }
  // Exactly once: nothing completes a second time.
  for (int i = 0; i < 50; ++i) tsu_progress();
  for (Request* r : all)
    if (r->calls.load() != 1) {
      std::printf("rank %u: FAIL: %s completed %d times\n", me, r->what, r->calls.load());
      std::fflush(stdout);
      return 1;
    }
  std::printf("rank %u: PASS\n", me);
  std::fflush(stdout);
  if (tsu_finalize() != TSU_OK) return fail(me, "finalize");
  std::printf("rank %u: finalized cleanly\n", me);
  return 0;
}
