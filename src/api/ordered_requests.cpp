#include "api/ordered_requests.hpp"

#include <new>

#include "core/log.hpp"
#include "runtime/progress_engine.hpp"

namespace tsu::api {

namespace {

// The releases being drained on this thread (null outside a drain): a
// release found while draining joins that queue instead of recursing.
thread_local std::vector<core::OrderedRelease>* t_draining = nullptr;

void ordered_done(tsu_status_t status, void* arg) noexcept {
  auto* req = static_cast<core::OrderedRequest*>(arg);
  const tsu_cb_t user = req->cmd.cb;
  if (user.fn) user.fn(status, user.arg);  // in progress context already (run_callback)
  static_cast<OrderedRequests*>(req->book->starter())->finish(req, status);
}

}  // namespace

core::OrderBook* OrderedRequests::book_of(core::ThreadContext& tc) noexcept {
  if (!tc.orders) [[unlikely]] {
    tc.orders.reset(new (std::nothrow) core::OrderBook(this));
  }
  return tc.orders.get();
}

tsu_cb_t OrderedRequests::done_cb(core::OrderedRequest* req) noexcept {
  return tsu_cb(&ordered_done, req);
}

bool OrderedRequests::runs_inline(const core::Command& cmd) const noexcept {
  if (!rt_.bypass()) return false;
  if (cmd.kind == core::CommandKind::kCopy)
    return rt_.memory_route(cmd.dst.rank) && rt_.memory_route(cmd.src.rank);
  // A NIC segment's atomics go through the engine to the network transport.
  if (cmd.kind == core::CommandKind::kAtomic)
    return rt_.memory_route(cmd.dst.rank) && !rt_.atomics_on_nic(cmd.dst);
  return rt_.memory_route(cmd.dst.rank);
}

void OrderedRequests::finish(core::OrderedRequest* req, tsu_status_t status) noexcept {
  std::vector<core::OrderedRelease> released;
  try {
    req->book->finish(req, status, released);  // may drop req
  } catch (const std::bad_alloc&) {
    TSU_LOG_ERROR("ordered requests: out of memory releasing the followers of a request");
  }
  release(released);
}

void OrderedRequests::release(std::vector<core::OrderedRelease>& released) noexcept {
  if (released.empty()) return;
  if (t_draining) {
    t_draining->insert(t_draining->end(), released.begin(), released.end());
    released.clear();
    return;
  }
  std::vector<core::OrderedRelease> queue;
  queue.swap(released);
  t_draining = &queue;
  // Index, not iterator: start() may append to the queue.
  for (std::size_t i = 0; i < queue.size(); ++i) start(queue[i]);
  t_draining = nullptr;
}

void OrderedRequests::start(const core::OrderedRelease& r) noexcept {
  core::OrderedRequest* req = r.req;
  core::ThreadContext* owner = req->cmd.issuer;
  // A released request was counted in its owner's issued count when it was
  // held: whoever completes it here counts it completed (after the book knows,
  // so a waiter that sees the count sees the watermark too).
  if (r.fail) {
    TSU_LOG_DEBUG("ordered request %llu not run: a request it followed failed",
                  static_cast<unsigned long long>(req->id));
    runtime::run_callback(req->cmd.cb, TSU_ERR_DEPENDENCY);
    finish(req, TSU_ERR_DEPENDENCY);
    owner->count_completed(1);
    return;
  }
  core::Command cmd = req->cmd;
  cmd.cb = done_cb(req);
  if (runs_inline(cmd)) {
    const tsu_status_t st = rt_.execute(cmd, UINT32_MAX);  // memory route: no record used
    runtime::run_callback(cmd.cb, st);
    owner->count_completed(1);
    return;
  }
  // The engine's completer counts it completed (cmd.issuer is the owner).
  if (rt_.engine().submit(cmd)) return;
  std::lock_guard lock(retry_mu_);
  try {
    retry_.push_back(cmd);
  } catch (const std::bad_alloc&) {
    TSU_LOG_ERROR("ordered requests: out of memory queueing a released request");
    runtime::run_callback(cmd.cb, TSU_ERR_NO_MEMORY);
    owner->count_completed(1);
    return;
  }
  retry_pending_.store(true, std::memory_order_release);
}

std::size_t OrderedRequests::retry_refused() noexcept {
  std::lock_guard lock(retry_mu_);
  std::size_t started = 0;
  while (started < retry_.size() && rt_.engine().submit(retry_[started])) ++started;
  retry_.erase(retry_.begin(), retry_.begin() + static_cast<std::ptrdiff_t>(started));
  retry_pending_.store(!retry_.empty(), std::memory_order_release);
  return started;
}

}  // namespace tsu::api
