// Requests in flight to a rank that freezes: alive, its connections open,
// but it answers nothing (a hung node, a node that lost power behind a
// switch: no RST, no ICMP).  Run under `tsurun --ranks-per-node 1
// --tolerate-rank-loss` with short keep-alive settings; the last rank is the
// victim.  Each survivor first gets 64 KiB from the victim's main segment
// (values checked; over ofi this is one native fi_read, and it learns the
// key), then the victim stops itself (SIGSTOP) and each survivor issues a
// 64 KiB get and a 64 KiB put to it.  On every route both must complete
// once, with TSU_ERR_PEER_LOST, within the peer timeout plus slack: over
// ofi the provider holds the native read and write (delivery complete)
// forever, so only the survivor's keep-alives to a rank it has requests in
// flight to can end them.  Survivor 0 then kills the frozen victim
// (tsurun reports it lost), and the survivors finalize cleanly.
// Prints "rank R: PASS" / "FAIL: ...".
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdio>
#include <vector>

#include "loss_util.hpp"
#include "tsunagi/coll.h"
#include "tsunagi/tsunagi.h"

namespace {

using loss::cb_for;
using loss::fail;
using loss::Request;
using loss::wait_for;

constexpr std::size_t kBytes = 64u << 10;

unsigned char byte_at(uint32_t rank, std::size_t i) { return static_cast<unsigned char>(rank * 37 + i * 11 + 5); }

}  // namespace

int main() {
  uint32_t me = 0, n = 0;
  if (const int rc = loss::start(me, n, 2)) return rc;
  const uint32_t victim = n - 1;
  void* base = nullptr;
  size_t seg_size = 0;
  if (tsu_segment_info(TSU_SEG_MAIN, &base, &seg_size) != TSU_OK || seg_size < 3 * kBytes)
    return fail(me, "main segment");
  auto* seg = static_cast<unsigned char*>(base);
  for (std::size_t i = 0; i < kBytes; ++i) seg[i] = byte_at(me, i);
  // Every rank's pid, for survivor 0 to end the frozen victim.
  uint64_t pid = static_cast<uint64_t>(getpid());
  std::vector<uint64_t> pids(n);
  {
    Request gathered;
    if (tsu_try_allgather(TSU_TEAM_WORLD, &pid, pids.data(), sizeof pid, cb_for(gathered)) != TSU_OK ||
        !wait_for([&] { return gathered.calls.load() > 0; }, 30) || gathered.status.load() != TSU_OK)
      return fail(me, "allgather of pids");
  }
  const double limit = loss::peer_timeout_seconds() + 15.0;
  if (me != victim) {  // the path works while the victim answers
    Request warm;
    tsu_status_t st = tsu_try_get(tsu_laddr(TSU_SEG_MAIN, kBytes), tsu_gaddr(victim, TSU_SEG_MAIN, 0),
                                  kBytes, cb_for(warm));
    if (st != TSU_OK) return fail(me, "warm-up get refused");
    if (!wait_for([&] { return warm.calls.load() > 0; }, limit) || warm.status.load() != TSU_OK)
      return fail(me, "warm-up get did not complete");
    for (std::size_t i = 0; i < kBytes; ++i)
      if (seg[kBytes + i] != byte_at(victim, i)) return fail(me, "warm-up get: wrong data");
  }
  if (tsu_barrier() != TSU_OK) return fail(me, "tsu_barrier");
  if (me == victim) {
    std::printf("rank %u: freezing now\n", me);
    std::fflush(stdout);
    raise(SIGSTOP);  // until survivor 0 kills it
    return fail(me, "the victim ran on after SIGSTOP");
  }
  usleep(300 * 1000);  // the victim is stopped (its barrier reply left before)
  Request get, put;
  const tsu_status_t get_st = tsu_try_get(tsu_laddr(TSU_SEG_MAIN, kBytes), tsu_gaddr(victim, TSU_SEG_MAIN, 0),
                                          kBytes, cb_for(get));
  const tsu_status_t put_st = tsu_try_put(tsu_gaddr(victim, TSU_SEG_MAIN, kBytes),
                                          tsu_laddr(TSU_SEG_MAIN, 2 * kBytes), kBytes, cb_for(put));
  auto check = [&](const char* what, tsu_status_t st, Request& r) -> bool {
    if (st == TSU_OK) {
      if (!wait_for([&] { return r.calls.load() > 0; }, limit)) {
        std::printf("rank %u: FAIL: a %s to the frozen rank never completed (%.0f s)\n", me, what, limit);
        std::fflush(stdout);
        return false;
      }
      st = r.status.load();
    }
    if (st != TSU_ERR_PEER_LOST) {
      std::printf("rank %u: FAIL: a %s to the frozen rank ended with %s\n", me, what, tsu_strerror(st));
      std::fflush(stdout);
      return false;
    }
    return true;
  };
  if (!check("get", get_st, get) || !check("put", put_st, put)) {
    if (me == 0) kill(static_cast<pid_t>(pids[victim]), SIGKILL);
    return 1;
  }
  for (int i = 0; i < 50; ++i) tsu_progress();
  if (get.calls.load() > 1 || put.calls.load() > 1) return fail(me, "a callback ran twice");
  // Both survivors know; survivor 0 ends the victim, which tsurun reports.
  if (me == 0) kill(static_cast<pid_t>(pids[victim]), SIGKILL);
  std::printf("rank %u: PASS\n", me);
  std::fflush(stdout);
  if (tsu_finalize() != TSU_OK) return fail(me, "tsu_finalize");
  std::printf("rank %u: finalized cleanly\n", me);
  std::fflush(stdout);
  return 0;
}
