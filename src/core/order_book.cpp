#include "core/order_book.hpp"

#include "core/wait_table.hpp"

namespace tsu::core {

tsu_status_t OrderBook::add(const Command& cmd, uint64_t after, OrderedRequest*& out,
                            uint64_t& id, Decision& decision) noexcept {
  std::lock_guard lock(mu_);
  const uint64_t last = last_id_.load(std::memory_order_relaxed);
  decision = Decision::kRun;
  if (after != TSU_REQ_NONE && after != TSU_REQ_ALL && after > last) return TSU_ERR_INVALID_ARG;
  id = last + 1;
  bool after_all = false;
  decision = Decision::kRun;
  if (after == TSU_REQ_ALL) {
    // Every earlier request: a failure not yet reported by a wait fails it;
    // any earlier one still in the book holds it.
    after_all = true;
    if (!failed_.empty()) decision = Decision::kFail;
    else if (!live_.empty()) decision = Decision::kHold;
  } else if (after != TSU_REQ_NONE) {
    if (failed_.count(after)) decision = Decision::kFail;
    else if (after >= base_ && at(after).state != OrderedRequest::State::kDone)
      decision = Decision::kHold;
  }
  try {
    if (decision == Decision::kHold) {
      if (after_all) all_waiters_.push_back(id);
      else at(after).followers.push_back(id);
    }
    OrderedRequest& r = live_.emplace_back();
    r.id = id;
    r.state = decision == Decision::kHold ? OrderedRequest::State::kHeld
                                          : OrderedRequest::State::kRunning;
    r.after_all = after_all && decision == Decision::kHold;
    r.cmd = cmd;
    r.book = this;
    out = &r;
  } catch (const std::bad_alloc&) {
    if (decision == Decision::kHold) {
      if (after_all) all_waiters_.pop_back();
      else if (!at(after).followers.empty() && at(after).followers.back() == id)
        at(after).followers.pop_back();
    }
    return TSU_ERR_NO_MEMORY;
  }
  if (decision == Decision::kHold) ++held_;
  last_id_.store(id, std::memory_order_relaxed);
  return TSU_OK;
}

void OrderBook::withdraw(OrderedRequest* req) noexcept {
  std::lock_guard lock(mu_);
  // Only a request just added to run (no follower could name it yet: its id
  // was not returned) is withdrawn, and only by the owner, which alone adds.
  if (live_.empty() || &live_.back() != req) return;
  live_.pop_back();
  last_id_.store(last_id_.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
}

void OrderBook::finish(OrderedRequest* req, tsu_status_t status,
                       std::vector<OrderedRelease>& released) {
  finish_locked(req, status, released);
  // After the watermark's seq_cst store (wait_table.hpp), outside the lock: a
  // tsu_req_wait parked on it re-checks the watermark itself.
  wait_table::notify(wait_key());
}

void OrderBook::finish_locked(OrderedRequest* req, tsu_status_t status,
                              std::vector<OrderedRelease>& released) {
  std::lock_guard lock(mu_);
  req->state = OrderedRequest::State::kDone;
  const bool failed = status != TSU_OK;
  if (failed) {
    failed_[req->id] = status;
    // Requests held behind "all earlier" that were added while this one was
    // pending followed it too.
    for (uint64_t w : all_waiters_)
      if (w > req->id) at(w).predecessor_failed = true;
  }
  for (uint64_t f : req->followers) {
    OrderedRequest& fr = at(f);
    fr.state = OrderedRequest::State::kRunning;
    --held_;
    released.push_back({&fr, failed});
  }
  req->followers.clear();
  advance(released);  // may drop `req`
}

void OrderBook::advance(std::vector<OrderedRelease>& released) {
  while (!live_.empty() && live_.front().state == OrderedRequest::State::kDone) {
    live_.pop_front();
    ++base_;
  }
  // Seq_cst: before finish()'s read of the wait table (wait_table.hpp).
  done_below_.store(base_, std::memory_order_seq_cst);
  // An "all earlier" request runs once it is the oldest one not completed.
  while (!all_waiters_.empty() && all_waiters_.front() == base_) {
    OrderedRequest& w = at(base_);
    w.state = OrderedRequest::State::kRunning;
    --held_;
    released.push_back({&w, w.predecessor_failed});
    all_waiters_.pop_front();
  }
}

bool OrderBook::take_failure(uint64_t upto, uint64_t& id, tsu_status_t& status) {
  std::lock_guard lock(mu_);
  auto it = failed_.begin();
  if (it == failed_.end() || it->first > upto) return false;
  id = it->first;
  status = it->second;
  failed_.erase(it, failed_.upper_bound(upto));
  return true;
}

std::size_t OrderBook::held() const {
  std::lock_guard lock(mu_);
  return held_;
}

}  // namespace tsu::core
