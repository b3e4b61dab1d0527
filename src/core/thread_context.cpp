#include "core/thread_context.hpp"

#include <ctime>

#include "core/wait_table.hpp"
#include "util/futex.hpp"

namespace tsu::core {

thread_local uint64_t ThreadRegistry::t_epoch_ = 0;
thread_local ThreadContext* ThreadRegistry::t_ctx_ = nullptr;

ThreadContext* ThreadRegistry::register_thread() {
  auto ctx = std::make_unique<ThreadContext>();
  ThreadContext* raw = ctx.get();
  {
    std::lock_guard lock(mu_);
    all_.push_back(std::move(ctx));
  }
  t_ctx_ = raw;
  t_epoch_ = epoch_;
  return raw;
}

void ThreadContext::wake_quiet_sleeper() noexcept {
  // (acquire: pairs with the sleeper's seq_cst store, so quiet_doorbell is
  // the one it set.  A sleeper that woke meanwhile gets a spurious wake.)
  const uint32_t how = quiet_sleeper.load(std::memory_order_acquire);
  quiet_sleeper.store(0, std::memory_order_seq_cst);
  if (how == kQuietInEngine) {
    if (Doorbell* d = quiet_doorbell.load(std::memory_order_relaxed)) d->ring();
  } else {
    util::futex_wake(&quiet_sleeper);
  }
}

void ThreadContext::wake_parked_quiet() noexcept { wait_table::notify(this); }

void ThreadContext::sleep_until_completion(uint64_t timeout_ns) noexcept {
  quiet_sleeper.store(kQuietOnFutex, std::memory_order_seq_cst);
  if (issued.load(std::memory_order_relaxed) != completed.load(std::memory_order_seq_cst)) {
    const timespec ts{static_cast<time_t>(timeout_ns / 1'000'000'000),
                      static_cast<long>(timeout_ns % 1'000'000'000)};
    util::futex_wait(&quiet_sleeper, kQuietOnFutex, &ts);
  }
  quiet_sleeper.store(0, std::memory_order_relaxed);
}

const char* counter_name(Counter c) noexcept {
  switch (c) {
    case Counter::kPut: return "put";
    case Counter::kGet: return "get";
    case Counter::kCopy: return "copy";
    case Counter::kAtomic: return "atomic";
    case Counter::kBytesPut: return "bytes_put";
    case Counter::kBytesGet: return "bytes_get";
    case Counter::kBytesCopy: return "bytes_copy";
    case Counter::kBypassed: return "bypassed";
    case Counter::kQueued: return "queued";
    case Counter::kEagain: return "eagain";
    case Counter::kRejected: return "rejected";
    case Counter::kFailedAtTarget: return "failed_at_target";
    case Counter::kCount: break;
  }
  return "?";
}

}  // namespace tsu::core
