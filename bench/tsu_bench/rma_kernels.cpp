#include "rma_kernels.hpp"

#include <algorithm>
#include <atomic>
#include <barrier>
#include <limits>
#include <memory>
#include <vector>

#include <tsunagi/tsunagi.h>

#include "../common/timer.hpp"

namespace bench {

const char* rma_op_name(RmaOp op) {
  switch (op) {
    case RmaOp::kGet: return "get";
    case RmaOp::kPut: return "put";
    case RmaOp::kFetchAdd: return "fadd";
  }
  return "?";
}

std::optional<RmaOp> rma_op_from_name(const std::string& name) {
  if (name == "get") return RmaOp::kGet;
  if (name == "put") return RmaOp::kPut;
  if (name == "fadd") return RmaOp::kFetchAdd;
  return std::nullopt;
}

namespace {

// One worker's bookkeeping.  The callback writes the first cache line; the
// issuing thread's private counters sit on the next, so they do not bounce.
struct alignas(64) WorkerState {
  // Written by whoever runs the callback.
  std::atomic<uint64_t> completed{0};
  std::atomic<uint64_t> callback_ticks{0};
  std::atomic<int32_t> callback_error{TSU_OK};
  // Written by the issuing thread only.
  alignas(64) uint64_t issued = 0;
  uint64_t started_ticks = 0;
  uint64_t ended_ticks = 0;
  uint64_t busy_ticks = 0;  // latency or overhead sum
  uint64_t samples = 0;     // latency samples or accepted calls
  uint64_t eagain = 0;
  tsu_status_t issue_error = TSU_OK;
  std::string issue_message;
  std::vector<uint64_t> fetch_results;  // one slot per outstanding fetch-add
  tsu_laddr_t local{};
  tsu_gaddr_t remote{};

  uint64_t outstanding() const noexcept {
    return issued - completed.load(std::memory_order_acquire);
  }
};

void note_callback_error(WorkerState& s, tsu_status_t status) {
  int32_t ok = TSU_OK;
  s.callback_error.compare_exchange_strong(ok, status, std::memory_order_relaxed);
}

// Latency: remember when the callback ran.
void on_latency_completion(tsu_status_t status, void* arg) {
  auto& s = *static_cast<WorkerState*>(arg);
  s.callback_ticks.store(ticks(), std::memory_order_relaxed);
  if (status != TSU_OK) note_callback_error(s, status);
  s.completed.fetch_add(1, std::memory_order_release);
}

// Overhead and rate: count completions.
void on_completion(tsu_status_t status, void* arg) {
  auto& s = *static_cast<WorkerState*>(arg);
  if (status != TSU_OK) note_callback_error(s, status);
  s.completed.fetch_add(1, std::memory_order_release);
}

// Issues one request; counts it in s.issued before the call because a bypassed
// request completes (and counts its completion) inside the call.
inline tsu_status_t issue(const RmaPoint& p, WorkerState& s, tsu_cb_fn_t fn) {
  const uint64_t seq = s.issued++;
  const tsu_cb_t cb = tsu_cb(fn, &s);
  tsu_status_t st;
  switch (p.op) {
    case RmaOp::kGet: st = tsu_try_get(s.local, s.remote, p.size, cb); break;
    case RmaOp::kPut: st = tsu_try_put(s.remote, s.local, p.size, cb); break;
    default:
      st = tsu_try_fetch_add_u64(s.remote, 1, &s.fetch_results[seq % s.fetch_results.size()], cb);
  }
  if (st != TSU_OK) s.issued = seq;
  if (st < 0 && s.issue_error == TSU_OK) {
    s.issue_error = st;
    s.issue_message = tsu_last_error();
  }
  return st;
}

void drain(WorkerState& s, const Waiter& waiter) {
  Waiter::Wait wait(waiter);
  while (s.outstanding()) wait.pause();
}

std::vector<std::unique_ptr<WorkerState>> make_states(const RmaPoint& p) {
  std::vector<std::unique_ptr<WorkerState>> states;
  for (int t = 0; t < p.threads; ++t) {
    auto s = std::make_unique<WorkerState>();
    const uint64_t offset = static_cast<uint64_t>(t) * p.region_bytes;
    s->local = tsu_laddr(TSU_SEG_MAIN, offset);
    s->remote = tsu_gaddr(p.target_rank, TSU_SEG_MAIN, offset);
    s->fetch_results.assign(static_cast<std::size_t>(std::max(p.window, 1)), 0);
    states.push_back(std::move(s));
  }
  return states;
}

// Empty string if every request succeeded, else the first failure.
std::string first_failure(const std::vector<std::unique_ptr<WorkerState>>& states) {
  for (const auto& s : states) {
    if (s->issue_error != TSU_OK)
      return std::string("request rejected: ") + tsu_strerror(s->issue_error) + ": " +
             s->issue_message;
    const int32_t cb = s->callback_error.load();
    if (cb != TSU_OK) return std::string("request failed at the target: ") + tsu_strerror(cb);
  }
  return {};
}

}  // namespace

std::optional<double> RmaKernels::latency_ns(const RmaPoint& p) {
  auto states = make_states(p);
  const Waiter waiter = waiter_;
  pool_.run(p.threads, [&](int t) {
    WorkerState& s = *states[static_cast<std::size_t>(t)];
    const Deadline deadline(p.duration_ms);
    while (!deadline.passed()) {
      const uint64_t before = s.completed.load(std::memory_order_relaxed);
      const uint64_t t0 = ticks();
      const tsu_status_t st = issue(p, s, on_latency_completion);
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
    drain(s, waiter);
  });
  error_ = first_failure(states);
  if (!error_.empty()) return std::nullopt;
  uint64_t busy = 0, samples = 0;
  for (const auto& s : states) busy += s->busy_ticks, samples += s->samples;
  if (!samples) return std::numeric_limits<double>::quiet_NaN();
  const TickClock& clock = TickClock::get();
  return clock.to_ns(static_cast<double>(busy) / static_cast<double>(samples)) -
         clock.read_cost_ns();
}

std::optional<OverheadFigure> RmaKernels::overhead(const RmaPoint& p) {
  auto states = make_states(p);
  const Waiter waiter = waiter_;
  const auto window = static_cast<uint64_t>(p.window);
  pool_.run(p.threads, [&](int t) {
    WorkerState& s = *states[static_cast<std::size_t>(t)];
    const Deadline deadline(p.duration_ms);
    Waiter::Wait wait(waiter);  // one wait for a slot in the window, or a non-full ring
    while (!deadline.passed()) {
      if (s.outstanding() >= window) {
        wait.pause();
        continue;
      }
      const uint64_t t0 = ticks();
      const tsu_status_t st = issue(p, s, on_completion);
      const uint64_t t1 = ticks();
      if (st == TSU_OK) {
        s.busy_ticks += t1 - t0;
        ++s.samples;
        wait.reset();
      } else if (st == TSU_EAGAIN) {
        ++s.eagain;
        wait.pause();
      } else {
        break;
      }
    }
    drain(s, waiter);
  });
  error_ = first_failure(states);
  if (!error_.empty()) return std::nullopt;
  uint64_t busy = 0, accepted = 0, eagain = 0;
  for (const auto& s : states) busy += s->busy_ticks, accepted += s->samples, eagain += s->eagain;
  OverheadFigure f;
  if (!accepted) return f;
  const TickClock& clock = TickClock::get();
  f.mean_ns = clock.to_ns(static_cast<double>(busy) / static_cast<double>(accepted)) -
              clock.read_cost_ns();
  f.eagain_fraction = static_cast<double>(eagain) / static_cast<double>(accepted + eagain);
  return f;
}

std::optional<RateFigure> RmaKernels::rate(const RmaPoint& p) {
  auto states = make_states(p);
  const Waiter waiter = waiter_;
  const auto window = static_cast<uint64_t>(p.window);
  std::barrier start_line(p.threads);
  pool_.run(p.threads, [&](int t) {
    WorkerState& s = *states[static_cast<std::size_t>(t)];
    start_line.arrive_and_wait();
    s.started_ticks = ticks();
    const Deadline deadline(p.duration_ms);
    Waiter::Wait wait(waiter);
    bool failed = false;
    if (p.quiet_completion) {
      // A window of requests without callbacks, then tsu_quiet() for all of them.
      while (!failed && !deadline.passed()) {
        for (uint64_t k = 0; k < window;) {
          const tsu_status_t st = issue(p, s, nullptr);
          if (st == TSU_OK) ++k;
          else if (st == TSU_EAGAIN) wait.pause();
          else { failed = true; break; }
        }
        if (tsu_quiet() != TSU_OK) failed = true;
        s.completed.store(s.issued, std::memory_order_relaxed);
      }
      s.ended_ticks = ticks();
      return;
    }
    while (!failed && !deadline.passed()) {
      // Refill the window; at most `window` calls between deadline checks
      // (bypassed requests complete inline, so the window never fills).
      uint64_t accepted = 0;
      for (uint64_t k = 0; k < window && s.outstanding() < window; ++k) {
        const tsu_status_t st = issue(p, s, on_completion);
        if (st != TSU_OK) {
          failed = st < 0;
          break;
        }
        ++accepted;
      }
      if (accepted) wait.reset();
      else wait.pause();
    }
    drain(s, waiter);
    s.ended_ticks = ticks();
  });
  error_ = first_failure(states);
  if (!error_.empty()) return std::nullopt;
  uint64_t first_start = std::numeric_limits<uint64_t>::max(), last_end = 0, completed = 0;
  for (const auto& s : states) {
    first_start = std::min(first_start, s->started_ticks);
    last_end = std::max(last_end, s->ended_ticks);
    completed += s->completed.load();
  }
  RateFigure f;
  const double seconds = TickClock::get().to_ns(static_cast<double>(last_end - first_start)) * 1e-9;
  if (seconds > 0) f.per_second = static_cast<double>(completed) / seconds;
  return f;
}

}  // namespace bench
