// tsu_try_put / get / copy, tsu_fence, tsu_quiet.
#include "api/api_common.hpp"
#include "api/request_checks.hpp"
#include "core/wait_hook.hpp"
#include "core/wait_table.hpp"
#include "util/backoff.hpp"

using namespace tsu;
using namespace tsu::api;

namespace {

// Common path once the local side is validated: bypass or engine.
template <bool kImplicit = false>
tsu_status_t issue_copy(Runtime& rt, ThreadContext& tc, const char* fn, const tsu_gaddr_t& dst,
                        const tsu_gaddr_t& src, std::size_t len, const tsu_cb_t& cb,
                        Counter op, Counter bytes) noexcept {
  const bool dst_mem = memory_route(rt, dst.rank), src_mem = memory_route(rt, src.rank);
  if (const tsu_status_t st = check_routes(rt, tc, fn, dst, src); st != TSU_OK) return st;
  if (!fence_allows(rt, tc)) {
    tc.stats.add(Counter::kEagain);
    return TSU_EAGAIN;
  }
  tc.stats.add(op);
  tc.stats.add(bytes, len);
  // Bypass only when this process reaches both sides' memory; requests to
  // ranks reached by messages always go through the engine.
  if (rt.bypass() && dst_mem && src_mem)
    return finish_inline<kImplicit>(tc, cb, rt.execute_copy(dst, src, len));
  core::Command cmd{};
  cmd.dst = dst;
  cmd.src = src;
  cmd.len = len;
  cmd.cb = cb;
  cmd.issuer = &tc;
  cmd.kind = core::CommandKind::kCopy;
  return submit(rt, tc, cmd);
}

template <bool kImplicit>
tsu_status_t put_impl(Runtime* rt, tsu_gaddr_t dst, tsu_laddr_t src, size_t len, tsu_cb_t cb) {
  ThreadContext& tc = *rt->threads().current();
  if constexpr (kImplicit) cb = implicit_cb(tc);
  std::byte* local = nullptr;
  tsu_status_t st = check_rank(*rt, tc, "tsu_try_put", "destination", dst.rank);
  if (st == TSU_OK) st = check_local(*rt, tc, "tsu_try_put", "source", src, len, local);
  if (st != TSU_OK) return st;
  // Fast path: the local side is already translated; only the target is
  // resolved (against its owner's segment table) and copied to.
  if (rt->bypass() && rt->memory_route(dst.rank) && !tc.fence_pending) [[likely]] {
    tc.stats.add(Counter::kPut);
    tc.stats.add(Counter::kBytesPut, len);
    return finish_inline<kImplicit>(tc, cb, rt->write_direct(dst, local, len));
  }
  return issue_copy<kImplicit>(*rt, tc, "tsu_try_put", dst, tsu_gaddr(rt->rank(), src.seg, src.offset), len,
                    cb, Counter::kPut, Counter::kBytesPut);
}

template <bool kImplicit>
tsu_status_t get_impl(Runtime* rt, tsu_laddr_t dst, tsu_gaddr_t src, size_t len, tsu_cb_t cb) {
  ThreadContext& tc = *rt->threads().current();
  if constexpr (kImplicit) cb = implicit_cb(tc);
  std::byte* local = nullptr;
  tsu_status_t st = check_rank(*rt, tc, "tsu_try_get", "source", src.rank);
  if (st == TSU_OK) st = check_local(*rt, tc, "tsu_try_get", "destination", dst, len, local);
  if (st != TSU_OK) return st;
  if (rt->bypass() && rt->memory_route(src.rank) && !tc.fence_pending) [[likely]] {
    tc.stats.add(Counter::kGet);
    tc.stats.add(Counter::kBytesGet, len);
    return finish_inline<kImplicit>(tc, cb, rt->read_direct(src, local, len));
  }
  return issue_copy<kImplicit>(*rt, tc, "tsu_try_get", tsu_gaddr(rt->rank(), dst.seg, dst.offset), src, len,
                    cb, Counter::kGet, Counter::kBytesGet);
}

template <bool kImplicit>
tsu_status_t copy_impl(Runtime* rt, tsu_gaddr_t dst, tsu_gaddr_t src, size_t len, tsu_cb_t cb) {
  ThreadContext& tc = *rt->threads().current();
  if constexpr (kImplicit) cb = implicit_cb(tc);
  if (const tsu_status_t st = check_copy(*rt, tc, "tsu_try_copy", dst, src, len); st != TSU_OK)
    return st;
  return issue_copy<kImplicit>(*rt, tc, "tsu_try_copy", dst, src, len, cb, Counter::kCopy,
                               Counter::kBytesCopy);
}

}  // namespace

extern "C" {

tsu_status_t tsu_try_put(tsu_gaddr_t dst, tsu_laddr_t src, size_t len, tsu_cb_t cb) {
  Runtime* rt = live_runtime();
  if (!rt) [[unlikely]] return not_initialized("tsu_try_put");
  return put_impl<false>(rt, dst, src, len, cb);
}

tsu_status_t tsu_try_get(tsu_laddr_t dst, tsu_gaddr_t src, size_t len, tsu_cb_t cb) {
  Runtime* rt = live_runtime();
  if (!rt) [[unlikely]] return not_initialized("tsu_try_get");
  return get_impl<false>(rt, dst, src, len, cb);
}

tsu_status_t tsu_try_copy(tsu_gaddr_t dst, tsu_gaddr_t src, size_t len, tsu_cb_t cb) {
  Runtime* rt = live_runtime();
  if (!rt) [[unlikely]] return not_initialized("tsu_try_copy");
  return copy_impl<false>(rt, dst, src, len, cb);
}

tsu_status_t tsu_try_put_nbi(tsu_gaddr_t dst, tsu_laddr_t src, size_t len) {
  Runtime* rt = live_runtime();
  if (!rt) [[unlikely]] return not_initialized("tsu_try_put_nbi");
  return put_impl<true>(rt, dst, src, len, tsu_cb_t{});
}

tsu_status_t tsu_try_get_nbi(tsu_laddr_t dst, tsu_gaddr_t src, size_t len) {
  Runtime* rt = live_runtime();
  if (!rt) [[unlikely]] return not_initialized("tsu_try_get_nbi");
  return get_impl<true>(rt, dst, src, len, tsu_cb_t{});
}

tsu_status_t tsu_try_copy_nbi(tsu_gaddr_t dst, tsu_gaddr_t src, size_t len) {
  Runtime* rt = live_runtime();
  if (!rt) [[unlikely]] return not_initialized("tsu_try_copy_nbi");
  return copy_impl<true>(rt, dst, src, len, tsu_cb_t{});
}

tsu_status_t tsu_fence(void) {
  Runtime* rt = live_runtime();
  if (!rt) return not_initialized("tsu_fence");
  ThreadContext& tc = *rt->threads().current();
  if (tc.outstanding()) tc.fence_pending = true;
  return TSU_OK;
}

tsu_status_t tsu_quiet(void) {
  Runtime* rt = live_runtime();
  if (!rt) return not_initialized("tsu_quiet");
  if (runtime::in_progress_context())
    return core::fail(TSU_ERR_UNSUPPORTED,
                      "tsu_quiet: cannot block inside a completion callback or the progress "
                      "thread");
  ThreadContext& tc = *rt->threads().current();
  tsu_status_t st = TSU_OK;
  if (core::wait_hook_set()) {
    // Inside a user-level thread: parked until the completion that drains
    // this pthread's requests wakes it (ThreadContext::count_completed), or
    // with no park hook polling, letting the scheduler run others.
    const uint32_t flags = rt->manual_progress() ? TSU_PARK_DRIVE_PROGRESS : 0;
    auto pending = [](const void* t) {
      const auto* c = static_cast<const ThreadContext*>(t);
      return c->issued.load(std::memory_order_relaxed) !=
             c->completed.load(std::memory_order_seq_cst);
    };
    util::Backoff backoff;
    while (tc.outstanding() != 0) {
      if (rt->engine().progress()) {
        backoff.reset();
        continue;
      }
      tc.parked_quiet.fetch_add(1, std::memory_order_seq_cst);  // before the table's re-check
      const bool parked = core::wait_table::park_while(&tc, flags, pending, &tc);
      tc.parked_quiet.fetch_sub(1, std::memory_order_relaxed);
      if (!parked && !core::wait_hook_yield()) backoff.pause();
    }
  } else {
    st = rt->quiet(tc);
  }
  tc.fence_pending = false;
  if (st != TSU_OK) return st;
  // Implicit requests report their first failure here (and only here).
  const tsu_status_t implicit = tc.implicit_error.exchange(TSU_OK, std::memory_order_acquire);
  if (implicit != TSU_OK) [[unlikely]]
    return core::fail(implicit,
                      "tsu_quiet: a request issued without a callback (tsu_try_*_nbi) since the "
                      "last tsu_quiet failed: %s",
                      tsu_strerror(implicit));
  return TSU_OK;
}

}  // extern "C"
