// Starting ordered requests (seed 001) once the book releases them: the
// engine side of tsu_try_*_ordered.  An ordered request carries
// `ordered_done` as its callback; when it completes (wherever that is: the
// progress thread, a tsu_progress caller, the issuer for a bypassed request)
// the caller's callback runs, the book marks it done and hands back the held
// requests that followed it, which start here at once: inline where the
// caller could bypass, else through the command ring.  Releases are drained
// iteratively (a chain of bypassed requests does not recurse).  A request the
// full ring refuses is kept and retried from the engine's poll (layers.hpp).
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <vector>

#include "core/command.hpp"
#include "core/order_book.hpp"
#include "runtime/runtime.hpp"

namespace tsu::api {

class OrderedRequests {
 public:
  explicit OrderedRequests(runtime::Runtime& rt) : rt_(rt) {}

  // The calling thread's book (made on its first ordered request), or null
  // when it cannot be made.
  core::OrderBook* book_of(core::ThreadContext& tc) noexcept;
  // The callback every running ordered request carries (arg: the request).
  static tsu_cb_t done_cb(core::OrderedRequest* req) noexcept;
  // True when the caller runs `cmd` itself (bypass, memory reached here).
  bool runs_inline(const core::Command& cmd) const noexcept;
  // Starts (or fails) released requests, and those their completion releases.
  void release(std::vector<core::OrderedRelease>& released) noexcept;
  // `req` completed with `status` (its caller's callback has run).
  void finish(core::OrderedRequest* req, tsu_status_t status) noexcept;

  // Engine poll: retries the requests the full ring refused (the empty check
  // inline: every progress pass runs it).
  std::size_t poll() noexcept {
    return retry_pending_.load(std::memory_order_acquire) ? retry_refused() : 0;
  }
  bool idle() const noexcept { return !retry_pending_.load(std::memory_order_acquire); }

 private:
  std::size_t retry_refused() noexcept;  // poll() with refused requests
  void start(const core::OrderedRelease& r) noexcept;

  runtime::Runtime& rt_;
  std::mutex retry_mu_;
  std::vector<core::Command> retry_;  // guarded by retry_mu_
  std::atomic<bool> retry_pending_{false};
};

}  // namespace tsu::api
