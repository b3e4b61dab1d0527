// Keep-alive watches end when nothing waits (PeerLoss::unwatch_peer).  Run
// under `tsurun -n 4 --ranks-per-node 1 --tolerate-rank-loss` with a short
// keep-alive (TSU_OFI_KEEPALIVE / TSU_UDP_KEEPALIVE) and peer timeout.
//
// 1. Every rank waits on every other one: a receive from each (and one it
//    cancels), an alltoall, a barrier.
// 2. Once the transport (ofi or udp) reports no watched peer (watched=0 in
//    its stats), the rank idles for 10 keep-alive intervals and past the
//    peer timeout, and its pings= counter must not grow: an idle rank pings
//    no one.
// 3. Waits after the idle spell: a receive from a live peer that sends only
//    a few intervals later completes (the peer, silent past the timeout
//    while unwatched, is not lost the moment it is watched again), and a
//    receive from the last rank, which dies (SIGKILL), ends with
//    TSU_ERR_PEER_LOST (a watch dropped and restarted still detects loss).
// Prints "rank R: PASS" / "FAIL: ...".
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "loss_util.hpp"
#include "tsunagi/coll.h"
#include "tsunagi/msg.h"
#include "tsunagi/tsunagi.h"

namespace {

using loss::cb_for;
using loss::Request;
using loss::wait_for;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kTagEach = 1, kTagCancelled = 2, kTagRing = 3, kTagVictim = 4;

int fail(uint32_t me, const char* what, tsu_status_t st = TSU_OK) {
  std::printf("rank %u: FAIL: %s (%s; %s)\n", me, what, tsu_strerror(st), tsu_last_error());
  std::fflush(stdout);
  return 1;
}

// The network route: "udp" (the default), "ofi" or "tcp".
std::string route() {
  const char* net = std::getenv("TSU_NET");
  return net ? net : "udp";
}

double keepalive_seconds() {
  if (route() == "ofi") return loss::seconds_setting("TSU_OFI_KEEPALIVE", 0.5);
  if (route() == "tcp") return loss::seconds_setting("TSU_TCP_KEEPALIVE", 0.5);
  return loss::seconds_setting("TSU_UDP_KEEPALIVE", 0.5);
}

// Progress (for manual progress) without spinning a core: 4 ranks share 2.
void idle_for(double seconds) {
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < end) {
    tsu_progress();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// The value of `key` (e.g. "pings=") on the network transport's stats line
// (ofi's, udp's or tcp's), as tsu_stats_print writes it to stderr; -1 if absent.
long long net_stat(const char* key) {
  std::FILE* tmp = std::tmpfile();
  if (!tmp) return -1;
  std::fflush(stderr);
  const int saved = dup(2);
  dup2(fileno(tmp), 2);
  tsu_stats_print();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::rewind(tmp);
  std::string text;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, tmp)) > 0) text.append(buf, n);
  std::fclose(tmp);
  const std::size_t line = text.find(route() == "ofi" ? " ofi stats:" : " " + route() + ":");
  if (line == std::string::npos) return -1;
  const std::size_t at = text.find(std::string(" ") + key, line);
  if (at == std::string::npos) return -1;
  return std::atoll(text.c_str() + at + 1 + std::strlen(key));
}

// Waits (bounded, not timed) until the transport watches no peer.
bool until_unwatched() {
  return wait_for(
      [] {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        return net_stat("watched=") == 0;
      },
      loss::peer_timeout_seconds() + 30.0);
}

tsu_status_t send_retrying(uint32_t dst, uint64_t tag, const void* buf, std::size_t len,
                           Request& r) {
  tsu_status_t st;
  const auto end = Clock::now() + std::chrono::seconds(20);
  while ((st = tsu_try_send(dst, tag, buf, len, cb_for(r))) == TSU_EAGAIN && Clock::now() < end)
    tsu_progress();
  return st;
}

template <typename Start>
bool run_coll(Start&& start, Request& r) {
  r.calls = 0;
  r.status = 1;
  if (start(cb_for(r)) != TSU_OK) return false;
  return wait_for([&] { return r.calls.load() > 0; }, loss::peer_timeout_seconds() + 20.0) &&
         r.status.load() == TSU_OK;
}

}  // namespace

int main() {
  if (tsu_init(nullptr) != TSU_OK) return fail(0, "tsu_init");
  uint32_t me = 0, n = 0;
  tsu_rank(&me);
  tsu_size(&n);
  if (n < 3) return fail(me, "needs at least 3 ranks");
  const uint32_t victim = n - 1;
  const double keepalive = keepalive_seconds();

  // 1. Waits on every peer.
  std::vector<uint64_t> in(n, 0);
  std::vector<Request> recvs(n), sends(n);
  for (uint32_t p = 0; p < n; ++p)
    if (p != me && tsu_try_recv(p, kTagEach, TSU_TAG_EXACT, &in[p], sizeof in[p], nullptr,
                                cb_for(recvs[p]), nullptr) != TSU_OK)
      return fail(me, "posting a receive from a peer");
  uint64_t never = 0;
  Request cancelled;
  tsu_recv_t handle = 0;
  const uint32_t next = (me + 1) % n;
  if (tsu_try_recv(next, kTagCancelled, TSU_TAG_EXACT, &never, sizeof never, nullptr,
                   cb_for(cancelled), &handle) != TSU_OK)
    return fail(me, "posting the receive to cancel");
  const uint64_t out = 100 + me;
  for (uint32_t p = 0; p < n; ++p)
    if (p != me && send_retrying(p, kTagEach, &out, sizeof out, sends[p]) != TSU_OK)
      return fail(me, "send to a peer");
  for (uint32_t p = 0; p < n; ++p) {
    if (p == me) continue;
    if (!wait_for([&] { return recvs[p].calls.load() > 0 && sends[p].calls.load() > 0; }, 30) ||
        recvs[p].status.load() != TSU_OK || in[p] != 100 + p)
      return fail(me, "a message from a peer", recvs[p].status.load());
  }
  if (tsu_recv_cancel(handle) != TSU_OK ||
      !wait_for([&] { return cancelled.calls.load() > 0; }, 10) ||
      cancelled.status.load() != TSU_ERR_CANCELED)
    return fail(me, "cancelling a receive");
  std::vector<uint64_t> a2a_in(n, 0), a2a_out(n);
  for (uint32_t p = 0; p < n; ++p) a2a_out[p] = me * 1000 + p;
  Request coll;
  if (!run_coll([&](tsu_cb_t cb) {
        return tsu_try_alltoall(TSU_TEAM_WORLD, a2a_out.data(), a2a_in.data(), sizeof(uint64_t),
                                cb);
      }, coll))
    return fail(me, "alltoall", coll.status.load());
  for (uint32_t p = 0; p < n; ++p)
    if (a2a_in[p] != p * 1000 + me) return fail(me, "alltoall data");
  if (!run_coll([&](tsu_cb_t cb) { return tsu_try_barrier(TSU_TEAM_WORLD, cb); }, coll))
    return fail(me, "barrier", coll.status.load());

  // 2. Idle: no watch left, so no ping.  Long enough for several pings per
  // peer and for the silence to pass the peer timeout.
  const double idle = std::max(10 * keepalive, loss::peer_timeout_seconds() + 0.5);
  {
    if (!until_unwatched()) return fail(me, "peers still watched after every wait ended");
    const long long before = net_stat("pings=");
    idle_for(idle);
    const long long after = net_stat("pings=");
    if (before < 0 || after != before) {
      std::printf("rank %u: FAIL: idle with no wait, yet pings went from %lld to %lld\n", me,
                  before, after);
      std::fflush(stdout);
      return 1;
    }
    std::printf("rank %u: idle for %.1f s: pings=%lld before and after\n", me, idle, before);
  }
  if (!run_coll([&](tsu_cb_t cb) { return tsu_try_barrier(TSU_TEAM_WORLD, cb); }, coll))
    return fail(me, "barrier after the idle spell", coll.status.load());
  if (me == victim) {
    idle_for(4 * keepalive);  // the barrier's last messages leave first
    std::printf("rank %u: dying now\n", me);
    std::fflush(stdout);
    raise(SIGKILL);
  }

  // 3. The survivors in a ring: each waits on the next one, who sends after
  // a few keep-alive intervals, and on the victim.
  const uint32_t survivors = n - 1;
  const uint32_t from = (me + 1) % survivors, to = (me + survivors - 1) % survivors;
  uint64_t ring_in = 0, victim_in = 0;
  Request ring_recv, ring_send, victim_recv;
  if (tsu_try_recv(from, kTagRing, TSU_TAG_EXACT, &ring_in, sizeof ring_in, nullptr,
                   cb_for(ring_recv), nullptr) != TSU_OK ||
      tsu_try_recv(victim, kTagVictim, TSU_TAG_EXACT, &victim_in, sizeof victim_in, nullptr,
                   cb_for(victim_recv), nullptr) != TSU_OK)
    return fail(me, "posting the receives after the idle spell");
  idle_for(3 * keepalive);
  const uint64_t ring_out = 7000 + me;
  if (send_retrying(to, kTagRing, &ring_out, sizeof ring_out, ring_send) != TSU_OK)
    return fail(me, "send to the previous survivor");
  if (!wait_for([&] { return ring_recv.calls.load() > 0 && ring_send.calls.load() > 0; },
                loss::peer_timeout_seconds() + 20.0) ||
      ring_recv.status.load() != TSU_OK || ring_in != 7000 + from)
    return fail(me, "a receive from a live peer watched again after the idle spell",
                ring_recv.status.load());
  if (!wait_for([&] { return victim_recv.calls.load() > 0; }, loss::peer_timeout_seconds() + 20.0))
    return fail(me, "the receive from the lost rank never completed");
  if (victim_recv.status.load() != TSU_ERR_PEER_LOST)
    return fail(me, "the receive from the lost rank", victim_recv.status.load());
  if (!until_unwatched()) return fail(me, "peers still watched after the last wait");
  for (int i = 0; i < 50; ++i) tsu_progress();
  if (ring_recv.calls.load() != 1 || victim_recv.calls.load() != 1 || cancelled.calls.load() != 1)
    return fail(me, "a callback ran twice");

  std::printf("rank %u: PASS\n", me);
  std::fflush(stdout);
  if (tsu_finalize() != TSU_OK) return fail(me, "finalize");
  std::printf("rank %u: finalized cleanly\n", me);
  return 0;
}
