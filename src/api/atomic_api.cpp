// tsu_try_atomic.  Its call checks are the same as check_atomic's
// (request_checks.hpp, used by the ordered form); kept inline here because
// the shared function measured slower on this hot path.
#include "api/api_common.hpp"
#include "core/atomic_exec.hpp"

using namespace tsu;
using namespace tsu::api;

namespace {

template <bool kImplicit>
tsu_status_t atomic_impl(Runtime* rt, tsu_gaddr_t target, tsu_aop_t op, tsu_atype_t type,
                         const void* operand, const void* compare, void* result, tsu_cb_t cb) {
  ThreadContext& tc = *rt->threads().current();
  if constexpr (kImplicit) cb = implicit_cb(tc);
  if (!core::atomic_op_valid(op, type)) [[unlikely]]
    return rejected(tc, core::fail(TSU_ERR_INVALID_ARG,
                                   "tsu_try_atomic: op %d is not valid for type %d",
                                   static_cast<int>(op), static_cast<int>(type)));
  if ((core::atomic_op_needs_operand(op) && !operand) ||
      (core::atomic_op_needs_compare(op) && !compare) ||
      (core::atomic_op_fetches(op) && !result)) [[unlikely]]
    return rejected(tc, core::fail(TSU_ERR_NULL_POINTER,
                                   "tsu_try_atomic: op %d needs %s, which is NULL",
                                   static_cast<int>(op),
                                   core::atomic_op_needs_operand(op) && !operand ? "an operand"
                                   : core::atomic_op_needs_compare(op) && !compare
                                       ? "a compare value"
                                       : "a result pointer"));
  if (target.rank >= rt->size()) [[unlikely]]
    return rejected(tc, core::fail(TSU_ERR_BAD_RANK, "tsu_try_atomic: rank %u >= job size %u",
                                   target.rank, rt->size()));
  const std::size_t width = core::atomic_type_size(type);
  if (target.offset % width) [[unlikely]]
    return rejected(tc, core::fail(TSU_ERR_MISALIGNED,
                                   "tsu_try_atomic: offset %llu is not a multiple of %zu",
                                   static_cast<unsigned long long>(target.offset), width));
  const bool mem = memory_route(*rt, target.rank);
  if (!rt->route(target.rank)) [[unlikely]]
    return rejected(tc, core::fail(TSU_ERR_UNREACHABLE,
                                   "tsu_try_atomic: no transport reaches rank %u", target.rank));
  if (!fence_allows(*rt, tc)) {
    tc.stats.add(Counter::kEagain);
    return TSU_EAGAIN;
  }
  const uint64_t opnd = operand ? core::atomic_load_operand(operand, type) : 0;
  const uint64_t cmp = compare ? core::atomic_load_operand(compare, type) : 0;
  tc.stats.add(Counter::kAtomic);
  if (rt->bypass() && mem) {
    bool nic = false;
    const tsu_status_t st = rt->execute_atomic(target, op, type, opnd, cmp, result, &nic);
    if (!nic) return finish_inline<kImplicit>(tc, cb, st);
    // A NIC segment: through the engine to the network transport, as from
    // any other rank (one executor per word).
  }
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
  Runtime* rt = live_runtime();
  if (!rt) [[unlikely]] return not_initialized("tsu_try_atomic");
  return atomic_impl<false>(rt, target, op, type, operand, compare, result, cb);
}

extern "C" tsu_status_t tsu_try_atomic_nbi(tsu_gaddr_t target, tsu_aop_t op, tsu_atype_t type,
                                           const void* operand, const void* compare,
                                           void* result) {
  Runtime* rt = live_runtime();
  if (!rt) [[unlikely]] return not_initialized("tsu_try_atomic_nbi");
  return atomic_impl<true>(rt, target, op, type, operand, compare, result, tsu_cb_t{});
}
