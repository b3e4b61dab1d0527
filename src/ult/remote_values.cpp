// Exit values of threads run elsewhere (into their proxies, of every size up
// to TSU_ULT_VALUE_MAX), moves of those threads, and ranks lost meanwhile.
#include "remote.hpp"

#include <cstring>

#include "remote_internal.hpp"
#include "scheduler.hpp"

namespace tsu::ult {

// ---- Exit values and lost ranks -----------------------------------------------------

void Remote::complete_proxy(uint64_t token, tsu_status_t st, const void* v,
                            std::size_t len) noexcept {
  Ult* p = nullptr;
  {
    SpinGuard lock(proxies_lock_);
    p = proxies_.take(token);
  }
  if (!p) return;  // unknown or completed already
  p->remote->value_len = static_cast<uint16_t>(len);
  if (len) std::memcpy(p->remote->value, v, len);
  p->error = st;
  p->join_lock.lock();
  p->state.store(State::kDone, std::memory_order_relaxed);
  p->done = true;
  const bool detached = p->detached;
  Waiter* joiner = p->joiner;
  p->join_lock.unlock();
  if (detached) {
    sched_.free_record(p);
  } else if (joiner) {
    wake(joiner);
  }
}

void Remote::watch(uint32_t peer) noexcept {
  if (peer == rank_) return;
  Gate gate(*this);
  if (!gate) return;
  Watch& w = *watches_[peer];
  // Posted already (every spawn to the rank comes here): a load, not a
  // failing compare-exchange (a locked instruction) each time.
  if (w.state.load(std::memory_order_acquire) != 0) return;
  int expected = 0;
  if (!w.state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) return;
  static char sink[8];
  const tsu_status_t st = tsu_try_recv(
      peer, TSU_ULT_WATCH_TAG, TSU_TAG_EXACT, sink, 0, &w.status,
      tsu_cb(
          [](tsu_status_t s, void* a) {
            auto* wt = static_cast<Watch*>(a);
            if (s == TSU_ERR_PEER_LOST) wt->self->on_peer_lost(wt->peer);
            wt->state.store(2, std::memory_order_release);
          },
          &w),
      &w.handle);
  if (st != TSU_OK) {
    w.state.store(2, std::memory_order_release);
    if (st == TSU_ERR_PEER_LOST) on_peer_lost(peer);
  }
}

void Remote::proxy_moved(uint64_t token, uint32_t runner) noexcept {
  if (runner >= size_) return;
  {
    SpinGuard lock(proxies_lock_);
    Ult* p = proxies_.find(token);
    if (!p) return;  // already completed
    p->remote->runner.store(runner, std::memory_order_relaxed);
  }
  follow_runner(runner);
}

void Remote::follow_runner(uint32_t runner) noexcept {
  watch(runner);
  // The runner may be lost already, with on_peer_lost's scan done before our
  // proxy named it: then nothing else would end the join.  The caller set
  // the runner under proxies_lock_, and on_peer_lost sets lost_ before it
  // takes that lock to scan, so either the scan saw our runner or this load
  // sees lost_ (the lock orders the two).
  if (lost_[runner].load(std::memory_order_acquire)) on_peer_lost(runner);
}

void Remote::on_peer_lost(uint32_t peer) noexcept {
  lost_[peer].store(true, std::memory_order_release);
  std::vector<uint64_t> tokens;
  {
    SpinGuard lock(proxies_lock_);
    proxies_.for_each([&](uint64_t t, Ult* p) {
      if (p->remote->runner.load(std::memory_order_relaxed) == peer) tokens.push_back(t);
    });
  }
  for (uint64_t t : tokens) complete_proxy(t, TSU_ERR_PEER_LOST, nullptr, 0);
}
}  // namespace tsu::ult
