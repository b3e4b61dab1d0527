// One thread's ordered requests (seed 001: ACP's acp_copy handles).  A
// request may name an earlier request of the same thread it must follow
// (TSU_REQ_ALL: every earlier one); it is held here until that one has
// completed, then released to run, or failed with TSU_ERR_DEPENDENCY if the
// one it followed failed.  The book also keeps the thread's completion
// watermark: every request with an id below done_below() has completed.
//
// Who touches it: the owning thread adds requests and consumes failures; any
// thread that completes one of them (the progress thread, a tsu_progress
// caller, the owner for bypassed requests) calls finish().  Everything is
// under one mutex: ordered requests are not the fast path, and the plain
// tsu_try_* calls never come here.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <vector>

#include "core/command.hpp"
#include "tsunagi/tsunagi.h"

namespace tsu::core {

class OrderBook;

struct OrderedRequest {
  enum class State : uint8_t { kHeld, kRunning, kDone };
  uint64_t id = 0;
  State state = State::kRunning;
  bool after_all = false;  // held until every earlier request has completed
  // after_all only: an earlier request it waited for failed meanwhile.
  bool predecessor_failed = false;
  Command cmd;                      // the request; cmd.cb is the caller's callback
  std::vector<uint64_t> followers;  // requests that named this one
  OrderBook* book = nullptr;
};

// A held request leaving the book: to run now, or to fail without running.
struct OrderedRelease {
  OrderedRequest* req;
  bool fail;
};

// Held requests are counted in the owner's issued count when added; whoever
// starts one later counts it completed (ThreadContext::completed) or lets the
// engine do so.
class OrderBook {
 public:
  enum class Decision : uint8_t { kRun, kHold, kFail };
  // What starts released requests (the layer above core that made the book).
  explicit OrderBook(void* starter) noexcept : starter_(starter) {}
  void* starter() const noexcept { return starter_; }

  // Owner thread.  Adds a request following `after` (an id, TSU_REQ_NONE or
  // TSU_REQ_ALL), which must be TSU_REQ_NONE, TSU_REQ_ALL or an id this
  // thread was given (else TSU_ERR_INVALID_ARG).  On TSU_OK `out` is the new
  // request and `decision` says what to do with it now: run it, leave it held
  // (it runs when released), or fail it with TSU_ERR_DEPENDENCY (what it
  // follows failed).  `id` is its handle.  `out` stays valid until the
  // request is finished; a held one may be released, run and finished by
  // another thread at any moment after add() returns, so the caller must not
  // touch `out` for a held request.
  tsu_status_t add(const Command& cmd, uint64_t after, OrderedRequest*& out, uint64_t& id,
                   Decision& decision) noexcept;
  // Owner thread, right after add() decided kRun: the request could not be
  // started (the command ring was full); it is forgotten, its id reused.
  void withdraw(OrderedRequest* req) noexcept;
  // Any thread: `req` completed with `status` (its callback has run).
  // Appends the held requests this releases to `released`.
  void finish(OrderedRequest* req, tsu_status_t status, std::vector<OrderedRelease>& released);

  // Every request with a smaller id has completed (acquire: their effects and
  // callbacks are visible).
  uint64_t done_below() const noexcept { return done_below_.load(std::memory_order_acquire); }
  // What a parked tsu_req_wait waits on: the watermark's address (the key
  // finish() notifies) and a seq_cst read of it (wait_table.hpp).
  const void* wait_key() const noexcept { return &done_below_; }
  uint64_t done_below_seq_cst() const noexcept {
    return done_below_.load(std::memory_order_seq_cst);
  }
  // Owner thread: the last id given out (0: none yet).
  uint64_t last_id() const noexcept { return last_id_.load(std::memory_order_relaxed); }
  // Owner thread: the first failure among requests with id <= upto, if any
  // (then every failure up to `upto` is forgotten: reported once).
  bool take_failure(uint64_t upto, uint64_t& id, tsu_status_t& status);
  // Requests held right now (diagnostics, tests of the engine's idle rule).
  std::size_t held() const;

 private:
  OrderedRequest& at(uint64_t id) noexcept { return live_[id - base_]; }
  void finish_locked(OrderedRequest* req, tsu_status_t status,
                     std::vector<OrderedRelease>& released);
  void advance(std::vector<OrderedRelease>& released);

  void* const starter_;
  mutable std::mutex mu_;
  // Requests from the oldest not yet completed (id base_) to the newest.
  // std::deque: references stay valid as requests are added at the back and
  // completed ones leave at the front.
  std::deque<OrderedRequest> live_;
  uint64_t base_ = 1;
  std::atomic<uint64_t> done_below_{1};  // == base_, readable without the lock
  std::atomic<uint64_t> last_id_{0};
  std::deque<uint64_t> all_waiters_;       // held after_all requests, ascending
  std::map<uint64_t, tsu_status_t> failed_;  // failures not yet reported by a wait
  std::size_t held_ = 0;
};

}  // namespace tsu::core
