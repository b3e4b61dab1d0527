// What a blocking call (tsu_counter_wait, tsu_req_wait, a collective, a
// barrier) does each time a poll found nothing to do, in this order:
//   1. inside a user-level thread: park until the completion side notifies
//      `key` (the scheduler's park hook, wait_table.hpp);
//   2. let the scheduler run other user-level threads (the wait hook);
//   3. spin, then yield (util::Backoff);
//   4. past that, with a progress thread completing the work, sleep in the
//      kernel until the completion notifies `key` (a timed nap instead woke
//      a nap plus the kernel's timer slack after the completion:
//      docs/design-decisions.md, "Progress engine");
//      in manual progress the caller drives progress, so it keeps polling.
// `still_waiting(arg)` reads the condition with seq_cst loads (wait_table.hpp).
#pragma once

#include <atomic>
#include <cstdint>

#include "core/wait_hook.hpp"
#include "core/wait_table.hpp"
#include "util/backoff.hpp"

namespace tsu::core {

// Counts the calling thread among an engine's waiters that poll it
// themselves (ProgressEngine::waiters_polling) while on: relaxed, a hint.
class PollingMark {
 public:
  explicit PollingMark(std::atomic<uint32_t>* count) noexcept : count_(count) { on(); }
  ~PollingMark() { off(); }
  PollingMark(const PollingMark&) = delete;
  PollingMark& operator=(const PollingMark&) = delete;
  void on() noexcept {
    if (count_ && !on_) count_->fetch_add(1, std::memory_order_relaxed);
    on_ = true;
  }
  void off() noexcept {
    if (count_ && on_) count_->fetch_sub(1, std::memory_order_relaxed);
    on_ = false;
  }

 private:
  std::atomic<uint32_t>* const count_;
  bool on_ = false;
};

class BlockingWait {
 public:
  // `polling`: the engine's count of waiters polling it (nullptr: none).
  BlockingWait(const void* key, bool manual_progress, bool (*still_waiting)(const void*),
               const void* arg, std::atomic<uint32_t>* polling = nullptr) noexcept
      : key_(key), manual_(manual_progress), still_waiting_(still_waiting), arg_(arg),
        polling_(polling) {}

  // A poll found nothing to do.
  void idle() noexcept {
    if (wait_table::park_while(key_, manual_ ? TSU_PARK_DRIVE_PROGRESS : 0, still_waiting_, arg_))
      return;
    if (wait_hook_yield()) return;
    if (!manual_ && backoff_.sleeping()) {
      polling_.off();  // asleep: the progress thread polls for it
      wait_table::sleep_while(key_, still_waiting_, arg_, kSleepSafetyNs);
      polling_.on();
      return;
    }
    backoff_.pause();
  }
  // A poll did some work: spin again before sleeping.
  void worked() noexcept { backoff_.reset(); }

 private:
  // The longest sleep without a notify (a safety net: completions notify).
  static constexpr uint64_t kSleepSafetyNs = 1'000'000;
  const void* const key_;
  const bool manual_;
  bool (*const still_waiting_)(const void*);
  const void* const arg_;
  PollingMark polling_;
  util::Backoff backoff_;
};

}  // namespace tsu::core
