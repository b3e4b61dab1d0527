// tsu_try_{put,get,copy,atomic}_ordered, tsu_req_wait, tsu_req_test: seed
// 001's ordered requests (docs/requests.md).  The requests are checked at
// the call exactly as their plain forms (request_checks.hpp), recorded in the
// thread's OrderBook, and run now, held, or failed at once with
// TSU_ERR_DEPENDENCY; ordered_requests.cpp starts the held ones later.
#include "api/layers.hpp"
#include "api/ordered_requests.hpp"
#include "api/request_checks.hpp"
#include "core/blocking_wait.hpp"

using namespace tsu;
using namespace tsu::api;

namespace {

OrderedRequests& ordered(Runtime& rt) noexcept { return layers(rt).ordered; }

// Records a checked request and runs, holds or fails it.  `fn` names the
// entry point in messages.
tsu_status_t issue_ordered(Runtime& rt, ThreadContext& tc, const char* fn, core::Command cmd,
                           tsu_req_t after, tsu_req_t* req_out) noexcept {
  OrderedRequests& o = ordered(rt);
  core::OrderBook* book = o.book_of(tc);
  if (!book) [[unlikely]]
    return rejected(tc, core::fail(TSU_ERR_NO_MEMORY, "%s: cannot allocate the thread's "
                                                      "ordered-request book", fn));
  if (!fence_allows(rt, tc)) {
    tc.stats.add(Counter::kEagain);
    return TSU_EAGAIN;
  }
  cmd.issuer = &tc;
  // Counted as issued before the book can release it (a predecessor may
  // complete on another thread the moment add() returns); taken back below
  // unless it is held.
  const uint64_t issued = tc.issued.load(std::memory_order_relaxed);
  tc.issued.store(issued + 1, std::memory_order_relaxed);
  core::OrderedRequest* req = nullptr;
  core::OrderBook::Decision decision{};
  uint64_t id = 0;
  const tsu_status_t st = book->add(cmd, after, req, id, decision);
  if (decision != core::OrderBook::Decision::kHold || st != TSU_OK)
    tc.issued.store(issued, std::memory_order_relaxed);
  if (st == TSU_ERR_INVALID_ARG)
    return rejected(tc, core::fail(st, "%s: after = %llu is not TSU_REQ_NONE, TSU_REQ_ALL or "
                                       "a handle this thread was given (the last is %llu)",
                                   fn, static_cast<unsigned long long>(after),
                                   static_cast<unsigned long long>(book->last_id())));
  if (st != TSU_OK)
    return rejected(tc, core::fail(st, "%s: cannot record the request: %s", fn, tsu_strerror(st)));
  switch (decision) {
    case core::OrderBook::Decision::kHold:
      // Not `req` from here on: its predecessor may complete on another
      // thread, which then runs and finishes (and frees) it.
      tc.stats.add(Counter::kQueued);
      break;
    case core::OrderBook::Decision::kFail:
      // What it follows failed before this call: it completes at once.
      tc.stats.add(Counter::kFailedAtTarget);
      runtime::run_callback(cmd.cb, TSU_ERR_DEPENDENCY);
      o.finish(req, TSU_ERR_DEPENDENCY);
      break;
    case core::OrderBook::Decision::kRun: {
      core::Command run = cmd;
      run.cb = OrderedRequests::done_cb(req);
      if (o.runs_inline(run)) {
        tc.stats.add(Counter::kBypassed);
        const tsu_status_t done = rt.execute(run, UINT32_MAX);
        if (done != TSU_OK) tc.stats.add(Counter::kFailedAtTarget);
        runtime::run_callback(run.cb, done);
      } else if (const tsu_status_t sub = submit(rt, tc, run); sub != TSU_OK) {
        book->withdraw(req);  // ring full: nothing issued, no handle given out
        return sub;
      }
      break;
    }
  }
  if (req_out) *req_out = id;
  return TSU_OK;
}

// A put (local side `local`, remote `remote`) or a get (the other way).
tsu_status_t rma_ordered(Runtime& rt, const char* fn, bool is_put, tsu_gaddr_t remote,
                         tsu_laddr_t local, size_t len, tsu_req_t after, tsu_cb_t cb,
                         tsu_req_t* req) noexcept {
  ThreadContext& tc = *rt.threads().current();
  std::byte* unused = nullptr;
  const tsu_gaddr_t local_g = tsu_gaddr(rt.rank(), local.seg, local.offset);
  tsu_status_t st = check_rank(rt, tc, fn, is_put ? "destination" : "source", remote.rank);
  if (st == TSU_OK)
    st = check_local(rt, tc, fn, is_put ? "source" : "destination", local, len, unused);
  if (st == TSU_OK) st = check_routes(rt, tc, fn, remote, local_g);
  if (st != TSU_OK) return st;
  core::Command cmd{};
  cmd.dst = is_put ? remote : local_g;
  cmd.src = is_put ? local_g : remote;
  cmd.len = len;
  cmd.cb = cb;
  cmd.kind = core::CommandKind::kCopy;
  st = issue_ordered(rt, tc, fn, cmd, after, req);
  if (st == TSU_OK) {
    tc.stats.add(is_put ? Counter::kPut : Counter::kGet);
    tc.stats.add(is_put ? Counter::kBytesPut : Counter::kBytesGet, len);
  }
  return st;
}

}  // namespace

extern "C" {

tsu_status_t tsu_try_put_ordered(tsu_gaddr_t dst, tsu_laddr_t src, size_t len, tsu_req_t after,
                                 tsu_cb_t cb, tsu_req_t* req) {
  Runtime* rt = live_runtime();
  if (!rt) [[unlikely]] return not_initialized("tsu_try_put_ordered");
  return rma_ordered(*rt, "tsu_try_put_ordered", true, dst, src, len, after, cb, req);
}

tsu_status_t tsu_try_get_ordered(tsu_laddr_t dst, tsu_gaddr_t src, size_t len, tsu_req_t after,
                                 tsu_cb_t cb, tsu_req_t* req) {
  Runtime* rt = live_runtime();
  if (!rt) [[unlikely]] return not_initialized("tsu_try_get_ordered");
  return rma_ordered(*rt, "tsu_try_get_ordered", false, src, dst, len, after, cb, req);
}

tsu_status_t tsu_try_copy_ordered(tsu_gaddr_t dst, tsu_gaddr_t src, size_t len, tsu_req_t after,
                                  tsu_cb_t cb, tsu_req_t* req) {
  constexpr const char* fn = "tsu_try_copy_ordered";
  Runtime* rt = live_runtime();
  if (!rt) [[unlikely]] return not_initialized(fn);
  ThreadContext& tc = *rt->threads().current();
  tsu_status_t st = check_copy(*rt, tc, fn, dst, src, len);
  if (st == TSU_OK) st = check_routes(*rt, tc, fn, dst, src);
  if (st != TSU_OK) return st;
  core::Command cmd{};
  cmd.dst = dst;
  cmd.src = src;
  cmd.len = len;
  cmd.cb = cb;
  cmd.kind = core::CommandKind::kCopy;
  st = issue_ordered(*rt, tc, fn, cmd, after, req);
  if (st == TSU_OK) {
    tc.stats.add(Counter::kCopy);
    tc.stats.add(Counter::kBytesCopy, len);
  }
  return st;
}

tsu_status_t tsu_try_atomic_ordered(tsu_gaddr_t target, tsu_aop_t op, tsu_atype_t type,
                                    const void* operand, const void* compare, void* result,
                                    tsu_req_t after, tsu_cb_t cb, tsu_req_t* req) {
  constexpr const char* fn = "tsu_try_atomic_ordered";
  Runtime* rt = live_runtime();
  if (!rt) [[unlikely]] return not_initialized(fn);
  ThreadContext& tc = *rt->threads().current();
  tsu_status_t st = check_atomic(*rt, tc, fn, target, op, type, operand, compare, result);
  if (st != TSU_OK) return st;
  core::Command cmd{};
  cmd.dst = target;
  cmd.operand = operand ? core::atomic_load_operand(operand, type) : 0;
  cmd.compare = compare ? core::atomic_load_operand(compare, type) : 0;
  cmd.result = result;
  cmd.cb = cb;
  cmd.kind = core::CommandKind::kAtomic;
  cmd.aop = static_cast<uint8_t>(op);
  cmd.atype = static_cast<uint8_t>(type);
  st = issue_ordered(*rt, tc, fn, cmd, after, req);
  if (st == TSU_OK) tc.stats.add(Counter::kAtomic);
  return st;
}

namespace {

// The id a wait covers up to, or an error (message set).
tsu_status_t wait_target(const char* fn, core::OrderBook* book, tsu_req_t req,
                         uint64_t& upto) noexcept {
  const uint64_t last = book ? book->last_id() : 0;
  if (req == TSU_REQ_ALL) {
    upto = last;
    return TSU_OK;
  }
  if (req > last)
    return core::fail(TSU_ERR_INVALID_ARG,
                      "%s: %llu is not a handle this thread was given (the last is %llu)", fn,
                      static_cast<unsigned long long>(req), static_cast<unsigned long long>(last));
  upto = req;
  return TSU_OK;
}

// Everything up to `upto` has completed: its first failure, reported once.
tsu_status_t report(const char* fn, core::OrderBook* book, uint64_t upto) noexcept {
  uint64_t failed_id = 0;
  tsu_status_t failed = TSU_OK;
  if (!book || !book->take_failure(upto, failed_id, failed)) return TSU_OK;
  return core::fail(failed, "%s: ordered request %llu failed: %s", fn,
                    static_cast<unsigned long long>(failed_id), tsu_strerror(failed));
}

}  // namespace

namespace {

// tsu_req_wait (block) and tsu_req_test (one look).
tsu_status_t req_wait_or_test(const char* fn, tsu_req_t req, bool block) noexcept {
  Runtime* rt = live_runtime();
  if (!rt) return not_initialized(fn);
  ThreadContext& tc = *rt->threads().current();
  core::OrderBook* book = tc.orders.get();
  uint64_t upto = 0;
  if (const tsu_status_t st = wait_target(fn, book, req, upto); st != TSU_OK) return st;
  if (!book || upto == 0) return TSU_OK;
  if (!block) {
    if (book->done_below() <= upto && !runtime::in_progress_context()) rt->engine().progress();
    if (book->done_below() <= upto) return TSU_EAGAIN;
    return report(fn, book, upto);
  }
  if (book->done_below() <= upto && runtime::in_progress_context())
    return core::fail(TSU_ERR_UNSUPPORTED,
                      "%s: cannot block inside a completion callback or the progress thread", fn);
  // Inside a user-level thread: parked until a completion moves the
  // watermark (OrderBook::finish notifies its address).
  struct Below {
    const core::OrderBook* book;
    uint64_t upto;
  } const below{book, upto};
  auto short_of = [](const void* a) {
    const auto* b = static_cast<const Below*>(a);
    return b->book->done_below_seq_cst() <= b->upto;
  };
  if (book->done_below() > upto) return report(fn, book, upto);
  core::BlockingWait wait(book->wait_key(), rt->manual_progress(), short_of, &below,
                          &rt->engine().waiters_polling());
  while (book->done_below() <= upto) {
    if (rt->engine().progress()) wait.worked();
    else wait.idle();
  }
  return report(fn, book, upto);
}

}  // namespace

tsu_status_t tsu_req_wait(tsu_req_t req) { return req_wait_or_test("tsu_req_wait", req, true); }

tsu_status_t tsu_req_test(tsu_req_t req) { return req_wait_or_test("tsu_req_test", req, false); }

}  // extern "C"
