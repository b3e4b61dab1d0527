// The checks a put, get, copy or atomic passes at the call, shared by the
// plain (rma_api, atomic_api) and ordered (ordered_api) entry points so the
// same request is refused the same way whichever form issues it.  Each
// returns TSU_OK or the rejection, with its message set and counted.
#pragma once

#include <cstddef>
#include <cstdint>

#include "api/api_common.hpp"
#include "core/atomic_exec.hpp"

namespace tsu::api {

// No segment can be larger than a process's address space (57-bit virtual
// addresses with 5-level paging): a longer transfer is refused at the call.
inline constexpr uint64_t kMaxSegmentBytes = uint64_t{1} << 57;

// Local addresses are the caller's own memory: checked before anything starts.
inline tsu_status_t check_local(Runtime& rt, ThreadContext& tc, const char* fn, const char* what,
                                const tsu_laddr_t& l, std::size_t len, std::byte*& p) noexcept {
  if (l.reserved)
    return rejected(tc, core::fail(TSU_ERR_INVALID_ARG, "%s: %s.reserved must be 0", fn, what));
  const tsu_status_t st = rt.segments().translate(l.seg, l.offset, len, p);
  if (st != TSU_OK)
    return rejected(tc, core::fail(st, "%s: %s (segment %u, offset %llu, length %zu): %s", fn,
                                   what, l.seg, static_cast<unsigned long long>(l.offset), len,
                                   tsu_strerror(st)));
  return TSU_OK;
}

inline tsu_status_t check_rank(Runtime& rt, ThreadContext& tc, const char* fn, const char* what,
                               uint32_t rank) noexcept {
  if (rank < rt.size()) [[likely]] return TSU_OK;
  return rejected(tc, core::fail(TSU_ERR_BAD_RANK, "%s: %s rank %u >= job size %u", fn, what,
                                 rank, rt.size()));
}

inline tsu_status_t check_routes(Runtime& rt, ThreadContext& tc, const char* fn,
                                 const tsu_gaddr_t& dst, const tsu_gaddr_t& src) noexcept {
  if (rt.route(dst.rank) && rt.route(src.rank)) [[likely]] return TSU_OK;
  return rejected(tc, core::fail(TSU_ERR_UNREACHABLE, "%s: no transport reaches rank %u from rank %u",
                                 fn, rt.route(dst.rank) ? src.rank : dst.rank, rt.rank()));
}

// A third-party copy: ranks, a length no segment can have, and the sides in
// the caller's own memory (other sides are checked whole where it is applied).
inline tsu_status_t check_copy(Runtime& rt, ThreadContext& tc, const char* fn,
                               const tsu_gaddr_t& dst, const tsu_gaddr_t& src,
                               std::size_t len) noexcept {
  tsu_status_t st = check_rank(rt, tc, fn, "destination", dst.rank);
  if (st == TSU_OK) st = check_rank(rt, tc, fn, "source", src.rank);
  std::byte* unused = nullptr;
  if (st == TSU_OK && len > kMaxSegmentBytes)
    return rejected(tc, core::fail(TSU_ERR_OUT_OF_BOUNDS,
                                   "%s: length %zu exceeds the largest possible segment (%llu B)",
                                   fn, len, static_cast<unsigned long long>(kMaxSegmentBytes)));
  if (st == TSU_OK && src.rank == rt.rank())
    st = check_local(rt, tc, fn, "source", tsu_laddr(src.seg, src.offset), len, unused);
  if (st == TSU_OK && dst.rank == rt.rank())
    st = check_local(rt, tc, fn, "destination", tsu_laddr(dst.seg, dst.offset), len, unused);
  return st;
}

// An atomic's arguments, rank, alignment and route (the ordered form; the
// plain tsu_try_atomic keeps its own copy of these checks in atomic_api.cpp:
// routed through this function it measured slower on the engine path for
// identical-looking code; the figure is in docs/requests.md).
inline tsu_status_t check_atomic(Runtime& rt, ThreadContext& tc, const char* fn,
                                 const tsu_gaddr_t& target, tsu_aop_t op, tsu_atype_t type,
                                 const void* operand, const void* compare,
                                 const void* result) noexcept {
  if (!core::atomic_op_valid(op, type)) [[unlikely]]
    return rejected(tc, core::fail(TSU_ERR_INVALID_ARG, "%s: op %d is not valid for type %d", fn,
                                   static_cast<int>(op), static_cast<int>(type)));
  if ((core::atomic_op_needs_operand(op) && !operand) ||
      (core::atomic_op_needs_compare(op) && !compare) ||
      (core::atomic_op_fetches(op) && !result)) [[unlikely]]
    return rejected(tc, core::fail(TSU_ERR_NULL_POINTER, "%s: op %d needs %s, which is NULL", fn,
                                   static_cast<int>(op),
                                   core::atomic_op_needs_operand(op) && !operand ? "an operand"
                                   : core::atomic_op_needs_compare(op) && !compare
                                       ? "a compare value"
                                       : "a result pointer"));
  if (target.rank >= rt.size()) [[unlikely]]
    return rejected(tc, core::fail(TSU_ERR_BAD_RANK, "%s: rank %u >= job size %u", fn,
                                   target.rank, rt.size()));
  const std::size_t width = core::atomic_type_size(type);
  if (target.offset % width) [[unlikely]]
    return rejected(tc, core::fail(TSU_ERR_MISALIGNED, "%s: offset %llu is not a multiple of %zu",
                                   fn, static_cast<unsigned long long>(target.offset), width));
  if (!rt.route(target.rank)) [[unlikely]]
    return rejected(tc, core::fail(TSU_ERR_UNREACHABLE, "%s: no transport reaches rank %u", fn,
                                   target.rank));
  return TSU_OK;
}

}  // namespace tsu::api
