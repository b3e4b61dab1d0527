// Shared by the peer-loss programs (xnode_*_loss_test.cpp): a request's
// completion record, its callback, bounded waits that drive progress, and
// the peer timeout the job was given.
#pragma once

#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tsunagi/tsunagi.h"

namespace loss {

// Prints "rank R: FAIL: what (last error)"; returns 1, main's exit status.
inline int fail(uint32_t me, const char* what) {
  std::printf("rank %u: FAIL: %s (%s)\n", me, what, tsu_last_error());
  std::fflush(stdout);
  return 1;
}

// tsu_init, this rank and the job's size.  0, or 1 after printing FAIL where
// init fails or the job has fewer than `min_ranks` ranks.
inline int start(uint32_t& me, uint32_t& n, uint32_t min_ranks) {
  if (tsu_init(nullptr) != TSU_OK) return fail(0, "tsu_init");
  tsu_rank(&me);
  tsu_size(&n);
  if (n < min_ranks) {
    std::printf("rank %u: FAIL: needs at least %u ranks\n", me, min_ranks);
    std::fflush(stdout);
    return 1;
  }
  return 0;
}

// One request: how many times its callback ran and with what status.
struct Request {
  const char* what = "";
  std::atomic<int> calls{0};
  std::atomic<tsu_status_t> status{1};
};

inline void on_done(tsu_status_t st, void* arg) {
  auto* r = static_cast<Request*>(arg);
  r->status.store(st);
  r->calls.fetch_add(1);
}
inline tsu_cb_t cb_for(Request& r) { return tsu_cb(on_done, &r); }

// Polls `pred`, driving progress, for at most `seconds`.
template <typename Pred>
bool wait_for(Pred&& pred, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!pred()) {
    tsu_progress();
    sched_yield();
    if (std::chrono::steady_clock::now() > end) return false;
  }
  return true;
}

// A duration setting in seconds ("2s", "200ms", "10"); `fallback` if unset.
inline double seconds_setting(const char* name, double fallback) {
  const char* v = std::getenv(name);
  if (!v) return fallback;
  double x = std::atof(v);
  if (std::strstr(v, "ms")) x /= 1000.0;
  return x;
}

// The peer timeout of the network route this job runs over (10 s unless set).
inline double peer_timeout_seconds() {
  const char* net = std::getenv("TSU_NET");
  const std::string route = net ? net : "udp";
  if (route == "ofi") return seconds_setting("TSU_OFI_PEER_TIMEOUT", 10);
  if (route == "tcp") return seconds_setting("TSU_TCP_PEER_TIMEOUT", 10);
  return seconds_setting("TSU_UDP_PEER_TIMEOUT", 10);
}

}  // namespace loss
