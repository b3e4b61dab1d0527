// A blocking call's waiter for a parked user-level thread (tsu_waiter_t):
// the waiting call arms it, the scheduler's park hook commits it once the
// thread's context is saved, and the completion side wakes it.
//
// Protocol (one word, `state_`):
//   kArmed  --commit()-->  kParked   (the scheduler holds the thread)
//   kArmed  --wake()--->   kWoken    (the wake came before the park)
//   kParked --wake()--->   kWoken    + unpark(ctx, token): resume it
// Both transitions out of kArmed are read-modify-writes on the same word, so
// exactly one of commit() and wake() sees kArmed: a wake that races with
// parking is never lost (commit() then fails and the scheduler resumes the
// thread itself), and unpark runs at most once, only for a committed park.
// Lifetime: the record lives in the waiting call's frame.  wake()'s exchange
// is its last access to the record unless it saw kParked, in which case the
// thread cannot run (so cannot leave the frame) before unpark.
#pragma once

#include <atomic>
#include <cstdint>

#include "tsunagi/tsunagi.h"

struct tsu_waiter {};  // the public opaque type; core::Waiter derives from it

namespace tsu::core {

class Waiter : public tsu_waiter {
 public:
  Waiter(tsu_unpark_fn_t unpark, void* ctx) noexcept : unpark_(unpark), ctx_(ctx) {}
  Waiter(const Waiter&) = delete;
  Waiter& operator=(const Waiter&) = delete;

  // The scheduler, after saving the parking thread's context: true when
  // parked (the thread waits for unpark), false when already woken.
  bool commit(void* token) noexcept {
    token_ = token;  // published by the release below, read by wake() after acquire
    uint32_t expected = kArmed;
    return state_.compare_exchange_strong(expected, kParked, std::memory_order_acq_rel,
                                          std::memory_order_acquire);
  }
  // From any thread, at most once per arming.
  void wake() noexcept {
    // Copied first: after the exchange the record may be gone (see above).
    const tsu_unpark_fn_t unpark = unpark_;
    void* const ctx = ctx_;
    if (state_.exchange(kWoken, std::memory_order_acq_rel) == kParked) unpark(ctx, token_);
  }
  bool woken() const noexcept { return state_.load(std::memory_order_acquire) == kWoken; }

 private:
  enum : uint32_t { kArmed, kParked, kWoken };
  std::atomic<uint32_t> state_{kArmed};
  const tsu_unpark_fn_t unpark_;
  void* const ctx_;
  void* token_ = nullptr;
};

}  // namespace tsu::core
