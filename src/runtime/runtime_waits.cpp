// The runtime's waits: the bootstrap barrier under manual progress,
// tsu_quiet, and finalize (drain, barrier, teardown).
#include "runtime/runtime.hpp"

#include <atomic>
#include <thread>

#include "core/blocking_wait.hpp"
#include "core/log.hpp"
#include "transport/network.hpp"
#include "transport/node.hpp"
#include "util/backoff.hpp"

namespace tsu::runtime {

using core::PollingMark;

namespace {
bool flag_set(const void* f) {
  return static_cast<const std::atomic<bool>*>(f)->load(std::memory_order_seq_cst);
}
}  // namespace

tsu_status_t Runtime::barrier() noexcept {
  // Manual progress: while this rank waits in the bootstrap barrier, requests
  // aimed at it (RMA and atomics over messages, AM requests, rendezvous) from
  // any rank, on any route, must still be served, or a peer that waits for a
  // reply before it enters the barrier never gets there.  The bootstrap's
  // barrier blocks in a socket read, so a helper thread drives the engine.
  if (size() == 1 || !manual_progress()) return boot_->barrier();
  std::atomic<bool> done{false};
  std::thread helper;
  engine_->helper_looks(+1);  // every tsu_progress caller counts now
  try {
    helper = std::thread([&] {
      util::Backoff backoff;
      ProgressEngine::DriverLook drivers;
      while (!done.load(std::memory_order_acquire)) {
        // Another pthread drives progress meanwhile (a user-level thread
        // scheduler's workers polling in manual progress): leave it to them.
        // Polling beside them takes their messages (a spawn handled here
        // waits for a worker to notice it) and their CPU
        // (docs/design-decisions.md, "Progress engine").
        if (engine_->driven_by_others(drivers, util::now_ns())) {
          engine_->nap_while_driven(drivers, done);
          continue;
        }
        // Idle past the spin and yield rounds: sleep as a progress thread
        // does, woken by the next request aimed at this rank: a timed nap,
        // stretched by the kernel's timer slack, would make every such
        // request (a passive target's put or get) wait for its end
        // (docs/design-decisions.md, "Progress engine").  The end of the
        // barrier rings the doorbell.
        if (engine_->progress()) backoff.reset();
        else if (!backoff.sleeping() || !engine_->idle_wait(flag_set, &done, UINT64_MAX))
          backoff.pause();
      }
    });
  } catch (...) {
    engine_->helper_looks(-1);
    return boot_->barrier();
  }
  const tsu_status_t st = boot_->barrier();
  done.store(true, std::memory_order_seq_cst);
  engine_->doorbell().ring();
  helper.join();
  engine_->helper_looks(-1);
  return st;
}

namespace {
// tsu_quiet's sleep between checks when nothing wakes it (safety net only:
// every completion of the thread's requests wakes it).
constexpr uint64_t kQuietSleepNs = 10'000'000;
}  // namespace

tsu_status_t Runtime::quiet(ThreadContext& tc) noexcept {
  // Nothing out (the bypass path's usual quiet): no mark on the shared count.
  if (tc.outstanding() == 0) return TSU_OK;
  util::Backoff backoff;
  PollingMark polling(&engine_->waiters_polling());
  while (tc.outstanding() != 0) {
    if (engine_->progress()) {
      backoff.reset();
      continue;
    }
    // With a progress thread, a long wait sleeps until the completer counts
    // one of this thread's requests (ThreadContext::count_completed) instead
    // of polling every 20 us: the waiter wakes with the completion, not up
    // to a sleep plus the kernel's timer slack later (a network route's
    // tail latency).  The timeout is a safety net only.  In manual progress
    // the waiter is the one that makes progress, so it keeps polling.
    if (!manual_progress() && backoff.sleeping()) {
      polling.off();  // asleep: the progress thread polls for it
      tc.sleep_until_completion(kQuietSleepNs);
      polling.on();
      continue;
    }
    // In manual progress this thread drives progress: past the spin it
    // sleeps in the engine, woken by the next message or local request, or
    // by another pthread's progress completing one of its requests
    // (count_completed rings the doorbell), not after a timed nap.
    if (manual_progress() && backoff.sleeping() && sleep_in_engine(tc)) continue;
    backoff.pause();
  }
  return TSU_OK;
}

bool Runtime::sleep_in_engine(ThreadContext& tc) noexcept {
  tc.quiet_doorbell.store(&engine_->doorbell(), std::memory_order_relaxed);
  // Dekker with count_completed: flag, then count (both seq_cst).
  tc.quiet_sleeper.store(ThreadContext::kQuietInEngine, std::memory_order_seq_cst);
  bool slept = true;
  if (tc.issued.load(std::memory_order_relaxed) != tc.completed.load(std::memory_order_seq_cst)) {
    auto woken = [](const void* t) {
      return static_cast<const ThreadContext*>(t)->quiet_sleeper.load(std::memory_order_seq_cst) == 0;
    };
    slept = engine_->idle_wait(woken, &tc, kQuietSleepNs);
  }
  tc.quiet_sleeper.store(0, std::memory_order_relaxed);
  return slept;
}

tsu_status_t Runtime::finalize(std::string& error, const std::function<void()>& before_teardown) {
  // Complete everything in flight, from every thread, callbacks included.
  util::Backoff backoff;
  for (;;) {
    uint64_t pending = 0;
    threads_.for_each([&](const ThreadContext& tc) { pending += tc.outstanding(); });
    if (!pending) break;
    if (!engine_->progress()) backoff.pause();
  }
  // The layers' queued sends leave before we tell peers we are done.
  while (extension_ && !extension_->quiescent())
    if (!engine_->progress()) backoff.pause();
  // Peers may still be reading or writing our memory until they get here.
  // Nothing of ours waits on a peer any more: one that exits from here on
  // has finalized (not died), so node peers' exits are no longer losses.
  for (auto& t : node_) t->finalizing();
  if (net_) net_->finalizing();
  tsu_status_t st = barrier();
  if (st != TSU_OK) error = "bootstrap barrier at finalize failed";
  // Every rank is here: no rank waits for our layers' threads any more (a
  // rank blocked on one would not have reached the barrier), so they stop
  // calling us now, before anything is torn down.
  if (before_teardown) before_teardown();
  stop_lanes();
  engine_->stop();
  if (cfg_.stats) {
    print_stats();
    print_transport_stats();
  }
  const tsu_status_t st2 = boot_->finalize();
  if (st == TSU_OK && st2 != TSU_OK) {
    error = "bootstrap finalize failed";
    st = st2;
  }
  return st;
}

}  // namespace tsu::runtime
