// Shared pieces of the C API: the runtime check, rejection bookkeeping and the
// issue path (fence, bypass or engine) used by RMA and atomics.
#pragma once

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/trace.hpp"
#include "runtime/runtime.hpp"

namespace tsu::api {

using core::Counter;
using runtime::Runtime;
using core::ThreadContext;

inline Runtime* live_runtime() noexcept { return ::tsu::runtime::g_runtime.load(std::memory_order_acquire); }

[[gnu::cold]] inline tsu_status_t not_initialized(const char* fn) noexcept {
  return core::fail(TSU_ERR_NOT_INITIALIZED, "%s: tsunagi is not initialized (call tsu_init first)",
                    fn);
}

// Counts a rejected request; `status` already carries the message.
inline tsu_status_t rejected(ThreadContext& tc, tsu_status_t status) noexcept {
  tc.stats.add(Counter::kRejected);
  return status;
}

// Fence: until the thread's earlier requests have completed, refuse new ones.
inline bool fence_allows(Runtime& rt, ThreadContext& tc) noexcept {
  if (!tc.fence_pending) [[likely]] return true;
  if (tc.outstanding() && rt.manual_progress()) rt.engine().progress();
  if (tc.outstanding()) return false;
  tc.fence_pending = false;
  return true;
}

// Requests of a thread in flight from which a new network request waits for
// the engine's next batch instead of being started at once.
inline constexpr uint64_t kBatchInFlight = 4;

// A node-local command into the thread's lane (Runtime::lane_of), which may
// be the progress thread's own engine.
[[gnu::noinline]] inline bool submit_to_lane(Runtime& rt, ThreadContext& tc,
                                             const core::Command& cmd) noexcept {
  runtime::ProgressEngine& lane = rt.lane_of(tc);
  return lane.is_lane() ? lane.submit_to_lane(tc, cmd) : lane.submit_own(tc, cmd);
}

// Hands a command to the progress engine.  TSU_EAGAIN when the ring is full.
// Always inlined, so the caller's Command stays in registers instead of being
// stored and reloaded through memory on the way into the ring.
[[gnu::always_inline]] inline tsu_status_t submit(Runtime& rt, ThreadContext& tc, const core::Command& cmd) noexcept {
  const uint64_t issued = tc.issued.load(std::memory_order_relaxed);
  // Count before pushing so completion can never overtake the count.
  tc.issued.store(issued + 1, std::memory_order_relaxed);
  // A command for another node, when the engine sleeps, is started by this
  // thread (it saves a wake-up per request) or, with enough of this thread's
  // requests in flight to wake the engine soon, left for it to batch
  // (progress_engine.hpp).
  using IfAsleep = runtime::ProgressEngine::IfAsleep;
  const bool network = !rt.memory_route(cmd.dst.rank) || !rt.memory_route(cmd.src.rank);
  const IfAsleep if_asleep =
      !network ? IfAsleep::kWake
      : issued - tc.completed.load(std::memory_order_relaxed) >= kBatchInFlight ? IfAsleep::kLeave
                                                                                 : IfAsleep::kRunInline;
  if (cmd.kind == core::CommandKind::kCopy)
    TSU_TRACE(core::trace::kIssueCopy, cmd.dst.rank, cmd.src.rank, cmd.len);
  else
    TSU_TRACE(core::trace::kIssueAtomic, cmd.dst.rank, cmd.aop, cmd.atype);
  // With lanes, a node-local request goes to the thread's lane; an atomic
  // only on a main segment (another segment's words may be the NIC's, which
  // only the progress thread's network protocol reaches).
  const bool pushed =
      !network && rt.has_lanes() &&
              (cmd.kind != core::CommandKind::kAtomic || cmd.dst.seg == TSU_SEG_MAIN)
          ? submit_to_lane(rt, tc, cmd)
          : rt.engine().submit_own(tc, cmd, if_asleep);
  if (!pushed) [[unlikely]] {
    TSU_TRACE(core::trace::kRingFull, cmd.dst.rank, cmd.src.rank, 0);
    tc.issued.store(issued, std::memory_order_relaxed);
    tc.stats.add(Counter::kEagain);
    return TSU_EAGAIN;
  }
  tc.stats.add(Counter::kQueued);
  return TSU_OK;
}

// Completes a bypassed request in the caller: the callback runs before
// tsu_try_* returns TSU_OK.
inline tsu_status_t complete_inline(ThreadContext& tc, const tsu_cb_t& cb,
                                    tsu_status_t status) noexcept {
  tc.stats.add(Counter::kBypassed);
  if (status != TSU_OK) tc.stats.add(Counter::kFailedAtTarget);
  TSU_TRACE(core::trace::kBypass, static_cast<int64_t>(status), 0, 0);
  runtime::run_callback(cb, status);
  return TSU_OK;
}

inline bool memory_route(Runtime& rt, uint32_t rank) noexcept { return rt.memory_route(rank); }

// ---- Implicit completion (tsu_try_*_nbi) -------------------------------------
// A request without a callback that the issuing thread's tsu_quiet completes.
// It uses the thread's issued/completed counters like every request (they are
// what tsu_quiet waits on); only a failure needs more: the first one is kept
// in ThreadContext::implicit_error for tsu_quiet to return.
inline void note_implicit_error(ThreadContext& tc, tsu_status_t status) noexcept {
  int32_t ok = TSU_OK;
  tc.implicit_error.compare_exchange_strong(ok, status, std::memory_order_relaxed);
}

// The engine's callback for an implicit request: arg is the issuing thread's
// context.  Nothing to do on success (the completer counts it).
inline void implicit_done(tsu_status_t status, void* arg) noexcept {
  if (status != TSU_OK) [[unlikely]] note_implicit_error(*static_cast<ThreadContext*>(arg), status);
}

inline tsu_cb_t implicit_cb(ThreadContext& tc) noexcept { return tsu_cb(&implicit_done, &tc); }

// A bypassed implicit request: done in the call, no callback to run.
inline tsu_status_t complete_inline_implicit(ThreadContext& tc, tsu_status_t status) noexcept {
  tc.stats.add(Counter::kBypassed);
  if (status != TSU_OK) [[unlikely]] {
    tc.stats.add(Counter::kFailedAtTarget);
    note_implicit_error(tc, status);
  }
  return TSU_OK;
}

// Either completion form behind one issue path: `implicit` is a template
// argument, so the callback form compiles exactly as before.
template <bool kImplicit>
inline tsu_status_t finish_inline(ThreadContext& tc, const tsu_cb_t& cb,
                                  tsu_status_t status) noexcept {
  if constexpr (kImplicit) return complete_inline_implicit(tc, status);
  else return complete_inline(tc, cb, status);
}

}  // namespace tsu::api
