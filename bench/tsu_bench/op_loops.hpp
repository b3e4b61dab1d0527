// Generic measuring loops for the copy and atomic subcommands: the request is
// whatever `issue(state, cb)` does, so one loop serves tsu_try_copy with four
// address pairs and tsu_try_atomic with two operations.
//   latency: one request in flight per thread; request -> callback (seed 000's
//            t2 - t0, seed 001's "one request completed before the next");
//   rate:    a window of requests in flight per thread; completions / second.
// A `Background` stream (the interference of seed 002) runs on its own thread
// with its own window until the measuring threads are done.
#pragma once

#include <atomic>
#include <barrier>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <tsunagi/tsunagi.h>

#include "../common/threads.hpp"
#include "../common/timer.hpp"

namespace bench {

// One thread's bookkeeping; the callback's line is separate from the issuer's.
struct alignas(64) OpState {
  std::atomic<uint64_t> completed{0};
  std::atomic<uint64_t> callback_ticks{0};
  std::atomic<int32_t> callback_error{TSU_OK};
  alignas(64) uint64_t issued = 0;
  uint64_t busy_ticks = 0;
  uint64_t samples = 0;
  uint64_t started_ticks = 0;
  uint64_t ended_ticks = 0;
  tsu_status_t issue_error = TSU_OK;
  std::string issue_message;
  // What the request works on (set by the subcommand).
  tsu_gaddr_t dst{};
  tsu_gaddr_t src{};
  tsu_laddr_t local{};
  std::vector<uint64_t> results = std::vector<uint64_t>(1024, 0);  // fetched values

  uint64_t outstanding() const noexcept {
    return issued - completed.load(std::memory_order_acquire);
  }
  uint64_t* result_slot(uint64_t seq) noexcept { return &results[seq % results.size()]; }
};

inline void op_note_error(OpState& s, tsu_status_t st) {
  int32_t ok = TSU_OK;
  s.callback_error.compare_exchange_strong(ok, st, std::memory_order_relaxed);
}

inline void op_on_latency(tsu_status_t st, void* arg) {
  auto& s = *static_cast<OpState*>(arg);
  s.callback_ticks.store(ticks(), std::memory_order_relaxed);
  if (st != TSU_OK) op_note_error(s, st);
  s.completed.fetch_add(1, std::memory_order_release);
}

inline void op_on_completion(tsu_status_t st, void* arg) {
  auto& s = *static_cast<OpState*>(arg);
  if (st != TSU_OK) op_note_error(s, st);
  s.completed.fetch_add(1, std::memory_order_release);
}

// Calls issue(s, seq, cb); counts the request before the call (a bypassed
// request completes inside it) and un-counts it when refused.
template <typename Issue>
inline tsu_status_t op_issue(OpState& s, Issue& issue, tsu_cb_fn_t fn) {
  const uint64_t seq = s.issued++;
  const tsu_status_t st = issue(s, seq, tsu_cb(fn, &s));
  if (st != TSU_OK) s.issued = seq;
  if (st < 0 && s.issue_error == TSU_OK) {
    s.issue_error = st;
    s.issue_message = tsu_last_error();
  }
  return st;
}

inline void op_drain(OpState& s, const Waiter& waiter) {
  Waiter::Wait wait(waiter);
  while (s.outstanding()) wait.pause();
}

inline std::string op_first_failure(const std::vector<OpState*>& states) {
  for (const OpState* s : states) {
    if (s->issue_error != TSU_OK)
      return std::string("request rejected: ") + tsu_strerror(s->issue_error) + ": " +
             s->issue_message;
    const int32_t cb = s->callback_error.load();
    if (cb != TSU_OK) return std::string("request failed at the target: ") + tsu_strerror(cb);
  }
  return {};
}

// Latency loop of one thread, for `duration_ms`.
template <typename Issue>
void op_latency_loop(OpState& s, Issue& issue, const Waiter& waiter, double duration_ms) {
  const Deadline deadline(duration_ms);
  while (!deadline.passed()) {
    const uint64_t before = s.completed.load(std::memory_order_relaxed);
    const uint64_t t0 = ticks();
    const tsu_status_t st = op_issue(s, issue, op_on_latency);
    if (st == TSU_EAGAIN) {
      Waiter::Wait(waiter).pause();
      continue;
    }
    if (st != TSU_OK) break;
    Waiter::Wait wait(waiter);
    while (s.completed.load(std::memory_order_acquire) == before) wait.pause();
    s.busy_ticks += s.callback_ticks.load(std::memory_order_relaxed) - t0;
    ++s.samples;
  }
  op_drain(s, waiter);
}

// Windowed loop of one thread: until the deadline, or (duration_ms < 0) until
// `stop` is set.  Records start/end ticks for the rate.
template <typename Issue>
void op_window_loop(OpState& s, Issue& issue, const Waiter& waiter, uint64_t window,
                    double duration_ms, const std::atomic<bool>* stop) {
  s.started_ticks = ticks();
  const Deadline deadline(duration_ms < 0 ? 0 : duration_ms);
  auto done = [&] {
    return stop ? stop->load(std::memory_order_relaxed) : deadline.passed();
  };
  Waiter::Wait wait(waiter);
  bool failed = false;
  while (!failed && !done()) {
    uint64_t accepted = 0;
    for (uint64_t k = 0; k < window && s.outstanding() < window; ++k) {
      const tsu_status_t st = op_issue(s, issue, op_on_completion);
      if (st != TSU_OK) {
        failed = st < 0;
        break;
      }
      ++accepted;
    }
    if (accepted) wait.reset();
    else wait.pause();
  }
  op_drain(s, waiter);
  s.ended_ticks = ticks();
}

inline double op_rate_per_second(const std::vector<OpState*>& states) {
  uint64_t first = std::numeric_limits<uint64_t>::max(), last = 0, completed = 0;
  for (const OpState* s : states) {
    first = std::min(first, s->started_ticks);
    last = std::max(last, s->ended_ticks);
    completed += s->completed.load();
  }
  const double seconds = TickClock::get().to_ns(static_cast<double>(last - first)) * 1e-9;
  return seconds > 0 ? static_cast<double>(completed) / seconds : 0;
}

inline double op_mean_latency_ns(const std::vector<OpState*>& states) {
  uint64_t busy = 0, samples = 0;
  for (const OpState* s : states) busy += s->busy_ticks, samples += s->samples;
  if (!samples) return std::numeric_limits<double>::quiet_NaN();
  const TickClock& clock = TickClock::get();
  return clock.to_ns(static_cast<double>(busy) / static_cast<double>(samples)) -
         clock.read_cost_ns();
}

}  // namespace bench
