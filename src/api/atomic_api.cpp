// tsu_try_atomic.
#include "api/api_common.hpp"
#include "api/request_checks.hpp"
#include "core/atomic_exec.hpp"

using namespace tsu;
using namespace tsu::api;

namespace {

template <bool kImplicit>
tsu_status_t atomic_impl(Runtime* rt, tsu_gaddr_t target, tsu_aop_t op, tsu_atype_t type,
                         const void* operand, const void* compare, void* result, tsu_cb_t cb) {
  ThreadContext& tc = *rt->threads().current();
  if constexpr (kImplicit) cb = implicit_cb(tc);
  if (const tsu_status_t st =
          check_atomic(*rt, tc, "tsu_try_atomic", target, op, type, operand, compare, result);
      st != TSU_OK) [[unlikely]]
    return st;
  const bool mem = memory_route(*rt, target.rank);
  if (!fence_allows(*rt, tc)) {
    tc.stats.add(Counter::kEagain);
    return TSU_EAGAIN;
  }
  const uint64_t opnd = operand ? core::atomic_load_operand(operand, type) : 0;
  const uint64_t cmp = compare ? core::atomic_load_operand(compare, type) : 0;
  tc.stats.add(Counter::kAtomic);
  if (rt->bypass() && mem)
    return finish_inline<kImplicit>(tc, cb,
                                    rt->execute_atomic(target, op, type, opnd, cmp, result));
  core::Command cmd{};
  cmd.dst = target;
  cmd.operand = opnd;
  cmd.compare = cmp;
  cmd.result = result;
  cmd.cb = cb;
  cmd.issuer = &tc;
  cmd.kind = core::CommandKind::kAtomic;
  cmd.aop = static_cast<uint8_t>(op);
  cmd.atype = static_cast<uint8_t>(type);
  return submit(*rt, tc, cmd);
}

}  // namespace

extern "C" tsu_status_t tsu_try_atomic(tsu_gaddr_t target, tsu_aop_t op, tsu_atype_t type,
                                       const void* operand, const void* compare, void* result,
                                       tsu_cb_t cb) {
  Runtime* rt = runtime();
  if (!rt) [[unlikely]] return not_initialized("tsu_try_atomic");
  return atomic_impl<false>(rt, target, op, type, operand, compare, result, cb);
}

extern "C" tsu_status_t tsu_try_atomic_nbi(tsu_gaddr_t target, tsu_aop_t op, tsu_atype_t type,
                                           const void* operand, const void* compare,
                                           void* result) {
  Runtime* rt = runtime();
  if (!rt) [[unlikely]] return not_initialized("tsu_try_atomic_nbi");
  return atomic_impl<true>(rt, target, op, type, operand, compare, result, tsu_cb_t{});
}
