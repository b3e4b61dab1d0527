// Per-thread state: counts of the thread's requests (for tsu_quiet and
// tsu_fence) and its statistics.  Created on a thread's first call, kept until
// finalize (requests may complete after their thread exits).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "core/command_ring.hpp"
#include "core/doorbell.hpp"
#include "core/order_book.hpp"
#include "core/stats.hpp"

namespace tsu::runtime {
class ProgressEngine;  // a lane: opaque to core, set and used by the runtime
}

namespace tsu::core {

struct ThreadRing;

struct alignas(kCacheLine) ThreadContext {
  // Requests this thread handed to the engine (written by this thread only).
  std::atomic<uint64_t> issued{0};
  // This thread's command ring (thread_ring.hpp), made by the engine on the
  // thread's first request and owned by it; null until then, or when the
  // engine gave the thread none (it then uses the shared ring).
  ThreadRing* ring = nullptr;
  bool ring_refused = false;  // the engine has no ring for this thread
  bool lane_ring_refused = false;  // likewise, the lane's
  // With TSU_PROGRESS_THREADS > 1: the engine that serves this thread's
  // node-local requests (null until its first one, Runtime::lane_of), and
  // its ring there when that is a lane (not the progress thread).
  runtime::ProgressEngine* lane = nullptr;
  ThreadRing* lane_ring = nullptr;
  bool fence_pending = false;  // this thread only
  ThreadStats stats;
  // Requests of this thread whose callback has returned (written by whoever
  // completes them; release pairs with the acquire in outstanding()).
  alignas(kCacheLine) std::atomic<uint64_t> completed{0};
  // First failure of this thread's implicit-completion requests (tsu_try_*_nbi)
  // since its last tsu_quiet, which reads and clears it.  Written by whoever
  // completes them (compare-exchange from TSU_OK: the first error stays).
  std::atomic<int32_t> implicit_error{0};
  // Non-zero while this thread sleeps in tsu_quiet waiting for its requests;
  // whoever counts a completion wakes it (count_completed): kQuietOnFutex
  // (with a progress thread) on this word, kQuietInEngine (manual progress:
  // asleep in the engine's idle sleep, ProgressEngine::idle_wait) by ringing
  // quiet_doorbell.  In the `completed` line, so the completer's check costs
  // no extra miss.
  static constexpr uint32_t kQuietOnFutex = 1, kQuietInEngine = 2;
  std::atomic<uint32_t> quiet_sleeper{0};
  // The engine's doorbell, set by this thread before it stores kQuietInEngine.
  std::atomic<Doorbell*> quiet_doorbell{nullptr};
  // User-level threads of this pthread parked in tsu_quiet (wait_table.hpp,
  // keyed by this context): the completer that drains the thread's requests
  // notifies them.  Same line, same reason.
  std::atomic<uint32_t> parked_quiet{0};
  // This thread's ordered requests (tsu_try_*_ordered), made by the thread on
  // its first one; completers reach the book through the request itself.
  std::unique_ptr<OrderBook> orders;

  uint64_t outstanding() const noexcept {
    return issued.load(std::memory_order_relaxed) - completed.load(std::memory_order_acquire);
  }

  // Counts n of this thread's requests completed (their callbacks have
  // returned) and wakes the thread if it sleeps in tsu_quiet.  Dekker-style
  // with sleep_until_completion(): the completer adds then reads the flag,
  // the sleeper sets the flag then reads the count, both seq_cst, so at least
  // one of them sees the other (no lost wake-up).
  // Parked user-level threads likewise (parked_quiet, then the wait table's
  // own count), woken only once nothing is outstanding: `issued` read here
  // may be stale, i.e. smaller, which wakes early (they re-check), never late.
  void count_completed(uint64_t n) noexcept {
    const uint64_t done = completed.fetch_add(n, std::memory_order_seq_cst) + n;
    if (quiet_sleeper.load(std::memory_order_seq_cst)) [[unlikely]] wake_quiet_sleeper();
    if (parked_quiet.load(std::memory_order_seq_cst) && done >= issued.load(std::memory_order_relaxed))
        [[unlikely]]
      wake_parked_quiet();
  }
  void wake_quiet_sleeper() noexcept;
  void wake_parked_quiet() noexcept;
  // The thread itself: sleeps until count_completed() runs for one of its
  // requests or `timeout_ns` passes; returns at once if none is outstanding.
  void sleep_until_completion(uint64_t timeout_ns) noexcept;
};

class ThreadRegistry {
 public:
  explicit ThreadRegistry(uint64_t epoch) : epoch_(epoch) {}
  // The calling thread's context (registers it on first use in this epoch).
  ThreadContext* current() {
    if (t_epoch_ == epoch_) [[likely]] return t_ctx_;
    return register_thread();
  }
  // Visits every context (finalize, stats).
  template <typename F>
  void for_each(F&& f) const {
    std::lock_guard lock(mu_);
    for (const auto& c : all_) f(*c);
  }

 private:
  ThreadContext* register_thread();
  const uint64_t epoch_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<ThreadContext>> all_;
  static thread_local uint64_t t_epoch_;
  static thread_local ThreadContext* t_ctx_;
};

}  // namespace tsu::core
