// Hierarchical collectives when a whole node is lost.  Run under
// `tsurun -n 5 --ranks-per-node 2 --tolerate-rank-loss` with a short
// TSU_UDP_PEER_TIMEOUT (over ofi: TSU_OFI_PEER_TIMEOUT): nodes {0,1} {2,3}
// {4}, so the world team runs its collectives by hierarchy (node phase,
// leaders 0/2/4, node phase).  Rank 4
// (a node of its own, hence a leader) checks one allreduce with the others
// and dies.  The survivors then run every collective on the world team.  The
// leaders' phase fails on the leaders; the rule checked here is that a rank
// never gets TSU_OK with a wrong result: every rank whose result needs the
// lost node (all of barrier, allreduce, allgather, alltoall; the other nodes
// of a broadcast; the root of a reduce or gather) gets TSU_ERR_PEER_LOST,
// non-leaders included, and any TSU_OK comes with exactly the right data.
// A receive posted for the victim fails the same way.  No survivor sends to
// the victim: the ranks learn of the loss because one that waits on another
// has its transport watch it.  Prints "rank R: PASS" / "FAIL: ...".
#include <sched.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "loss_util.hpp"
#include "tsunagi/tsunagi.h"

namespace {

constexpr uint32_t kRanks = 5;
constexpr uint32_t kVictim = kRanks - 1;

using loss::on_done;
using loss::Request;

int fail(uint32_t me, const char* what, tsu_status_t st = TSU_OK) {
  std::printf("rank %u: FAIL: %s (%s; %s)\n", me, what, tsu_strerror(st), tsu_last_error());
  std::fflush(stdout);
  return 1;
}

// Starts one collective and waits for its callback (bounded).
template <typename Start>
bool run(Start&& start, Request& r, tsu_status_t& out) {
  r.calls = 0;
  r.status = 1;
  const tsu_status_t st = start(tsu_cb(on_done, &r));
  if (st != TSU_OK) {
    out = st;
    return true;
  }
  // The route's peer timeout (udp or ofi; 10 s by default), plus slack.
  if (!loss::wait_for([&] { return r.calls.load() > 0; }, loss::peer_timeout_seconds() + 20.0))
    return false;
  out = r.status.load();
  return true;
}

}  // namespace

int main() {
  if (tsu_init(nullptr) != TSU_OK) return fail(0, "tsu_init");
  uint32_t me = 0, n = 0;
  tsu_rank(&me);
  tsu_size(&n);
  if (n != kRanks) return fail(me, "needs exactly 5 ranks (tsurun -n 5 --ranks-per-node 2)");
  Request req;
  tsu_status_t st = TSU_OK;

  // Before the loss: the hierarchy gives the right sum everywhere.
  uint64_t mine = me + 1, sum = 0;
  if (!run([&](tsu_cb_t cb) {
        return tsu_try_allreduce(TSU_TEAM_WORLD, &mine, &sum, 1, TSU_DT_UINT64, TSU_OP_SUM, cb);
      }, req, st) || st != TSU_OK || sum != 15)
    return fail(me, "allreduce before the loss", st);
  // No survivor sends anything to the victim itself: the non-leaders never
  // exchange a datagram with it, and a leader may only wait for its message.
  // They learn of the loss because a rank that waits on another one has its
  // transport watch it (PeerLoss::watch_peer).
  if (!run([&](tsu_cb_t cb) { return tsu_try_barrier(TSU_TEAM_WORLD, cb); }, req, st) ||
      st != TSU_OK)
    return fail(me, "barrier before the loss", st);
  if (me == kVictim) {
    std::printf("rank %u: dying now\n", me);
    std::fflush(stdout);
    raise(SIGKILL);
  }

  int checks = 0;
  auto expect = [&](const char* what, bool must_fail, bool ok_data) -> bool {
    ++checks;
    if (st == TSU_ERR_PEER_LOST) return true;
    if (st == TSU_OK && !must_fail && ok_data) return true;
    std::printf("rank %u: FAIL: %s completed with %s%s\n", me, what, tsu_strerror(st),
                st == TSU_OK ? (ok_data ? " although its result needs the lost node"
                                        : " and a wrong result")
                             : "");
    std::fflush(stdout);
    return false;
  };
#define RUN(what, call)                                                               \
  if (!run([&](tsu_cb_t cb) { return call; }, req, st)) {                             \
    std::printf("rank %u: FAIL: %s never completed\n", me, what);                     \
    std::fflush(stdout);                                                              \
    return 1;                                                                         \
  }

  RUN("barrier", tsu_try_barrier(TSU_TEAM_WORLD, cb));
  if (!expect("barrier", true, true)) return 1;

  sum = 0;
  RUN("allreduce", tsu_try_allreduce(TSU_TEAM_WORLD, &mine, &sum, 1, TSU_DT_UINT64, TSU_OP_SUM, cb));
  if (!expect("allreduce", true, sum == 15)) return 1;

  // Broadcast from rank 0: node {0,1} has the data from the root itself; node
  // {2,3} needs the leaders' phase.
  std::vector<unsigned char> buf(64, me == 0 ? 0xA5 : 0);
  RUN("broadcast", tsu_try_broadcast(TSU_TEAM_WORLD, buf.data(), buf.size(), 0, cb));
  bool bcast_ok = true;
  for (unsigned char c : buf) bcast_ok &= c == 0xA5;
  if (!expect("broadcast", me >= 2, bcast_ok)) return 1;

  // Reduce to rank 1 (not a leader): only the root's result is defined.
  sum = 0;
  RUN("reduce", tsu_try_reduce(TSU_TEAM_WORLD, &mine, me == 1 ? &sum : nullptr, 1, TSU_DT_UINT64,
                               TSU_OP_SUM, 1, cb));
  if (me == 1 && !expect("reduce to rank 1", true, sum == 15)) return 1;

  // Gather to rank 3 (not a leader).
  std::vector<uint64_t> all(kRanks, 0);
  RUN("gather", tsu_try_gather(TSU_TEAM_WORLD, &mine, me == 3 ? all.data() : nullptr,
                               sizeof mine, 3, cb));
  bool gather_ok = true;
  for (uint32_t i = 0; i < kRanks; ++i) gather_ok &= all[i] == i + 1;
  if (me == 3 && !expect("gather to rank 3", true, gather_ok)) return 1;

  std::fill(all.begin(), all.end(), 0);
  RUN("allgather", tsu_try_allgather(TSU_TEAM_WORLD, &mine, all.data(), sizeof mine, cb));
  gather_ok = true;
  for (uint32_t i = 0; i < kRanks; ++i) gather_ok &= all[i] == i + 1;
  if (!expect("allgather", true, gather_ok)) return 1;

  std::vector<uint64_t> send(kRanks), recv(kRanks, 0);
  for (uint32_t i = 0; i < kRanks; ++i) send[i] = me * 100 + i;
  RUN("alltoall", tsu_try_alltoall(TSU_TEAM_WORLD, send.data(), recv.data(), sizeof(uint64_t), cb));
  bool a2a_ok = true;
  for (uint32_t i = 0; i < kRanks; ++i) a2a_ok &= recv[i] == i * 100 + me;
  if (!expect("alltoall", true, a2a_ok)) return 1;
  // A receive posted for the victim by a rank that never exchanged a datagram
  // with it (the non-leaders, unless the loss is known already) fails too.
  std::vector<unsigned char> in(16);
  RUN("receive from the lost rank",
      tsu_try_recv(kVictim, 77, TSU_TAG_EXACT, in.data(), in.size(), nullptr, cb, nullptr));
  if (!expect("receive from the lost rank", true, false)) return 1;
#undef RUN

  std::printf("rank %u: PASS (%d checks)\n", me, checks);
  std::fflush(stdout);
  if (tsu_finalize() != TSU_OK) return fail(me, "finalize");
  std::printf("rank %u: finalized cleanly\n", me);
  return 0;
}
