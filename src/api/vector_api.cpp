// tsu_try_putv / getv / put_strided / get_strided: one request, one
// completion, for a list of pieces (strided shapes become pieces here).
#include <algorithm>
#include <memory>
#include <new>

#include "api/api_common.hpp"
#include "core/vector_request.hpp"

using namespace tsu;
using namespace tsu::api;

namespace {

constexpr std::size_t kMaxPieces = std::size_t{1} << 24;

// Checks the local side of every piece (the caller's memory: refused at the
// call) and the rank; builds the request.
tsu_status_t make_request(Runtime& rt, ThreadContext& tc, const char* fn, bool is_put,
                          uint32_t rank, tsu_seg_t remote_seg, tsu_seg_t local_seg,
                          std::unique_ptr<core::VectorRequest>& out) {
  if (rank >= rt.size())
    return rejected(tc, core::fail(TSU_ERR_BAD_RANK, "%s: rank %u >= job size %u", fn, rank,
                                   rt.size()));
  if (!rt.route(rank))
    return rejected(tc, core::fail(TSU_ERR_UNREACHABLE, "%s: no transport reaches rank %u", fn,
                                   rank));
  out.reset(new (std::nothrow) core::VectorRequest);
  if (!out) return rejected(tc, core::fail(TSU_ERR_NO_MEMORY, "%s: out of memory", fn));
  out->is_put = is_put;
  out->rank = rank;
  out->remote_seg = remote_seg;
  out->local_seg = local_seg;
  return TSU_OK;
}

tsu_status_t check_pieces(Runtime& rt, ThreadContext& tc, const char* fn,
                          core::VectorRequest& req) {
  for (std::size_t i = 0; i < req.pieces.size(); ++i) {
    const core::VectorPiece& p = req.pieces[i];
    std::byte* unused = nullptr;
    const tsu_status_t st = rt.segments().translate(req.local_seg, p.local, p.len, unused);
    if (st != TSU_OK)
      return rejected(tc, core::fail(st, "%s: local piece %zu (segment %u, offset %llu, length "
                                         "%llu): %s",
                                     fn, i, req.local_seg, static_cast<unsigned long long>(p.local),
                                     static_cast<unsigned long long>(p.len), tsu_strerror(st)));
    if (p.remote > UINT64_MAX - p.len)
      return rejected(tc, core::fail(TSU_ERR_OUT_OF_BOUNDS,
                                     "%s: remote piece %zu (offset %llu, length %llu) overflows",
                                     fn, i, static_cast<unsigned long long>(p.remote),
                                     static_cast<unsigned long long>(p.len)));
    req.total += p.len;
  }
  return TSU_OK;
}

// Bypass or engine, as tsu_try_put does.
tsu_status_t issue_vector(Runtime& rt, ThreadContext& tc, const tsu_cb_t& cb,
                          std::unique_ptr<core::VectorRequest> req) {
  if (!fence_allows(rt, tc)) {
    tc.stats.add(Counter::kEagain);
    return TSU_EAGAIN;
  }
  tc.stats.add(req->is_put ? Counter::kPut : Counter::kGet);
  tc.stats.add(req->is_put ? Counter::kBytesPut : Counter::kBytesGet, req->total);
  if (req->pieces.empty()) return complete_inline(tc, cb, TSU_OK);
  if (rt.bypass() && rt.memory_route(req->rank))
    return complete_inline(tc, cb, rt.execute_vector(req->view()));
  core::Command cmd{};
  cmd.kind = core::CommandKind::kVector;
  cmd.dst = tsu_gaddr(req->rank, req->remote_seg, 0);
  cmd.src = tsu_gaddr(rt.rank(), req->local_seg, 0);
  cmd.len = req->total;
  cmd.result = req.get();
  cmd.cb = cb;
  cmd.issuer = &tc;
  const tsu_status_t st = submit(rt, tc, cmd);
  if (st == TSU_OK) req.release();  // the executor owns it now
  return st;
}

tsu_status_t vector_call(const char* fn, bool is_put, uint32_t rank, tsu_seg_t remote_seg,
                         tsu_seg_t local_seg, const tsu_piece_t* pieces, size_t count,
                         tsu_cb_t cb) {
  Runtime* rt = live_runtime();
  if (!rt) [[unlikely]] return not_initialized(fn);
  ThreadContext& tc = *rt->threads().current();
  if (!pieces && count)
    return rejected(tc, core::fail(TSU_ERR_NULL_POINTER, "%s: pieces is NULL", fn));
  if (count > kMaxPieces)
    return rejected(tc, core::fail(TSU_ERR_INVALID_ARG, "%s: %zu pieces (at most %zu)", fn,
                                   count, kMaxPieces));
  // In the call (bypass to memory this process reaches): the caller's array
  // is read in place, nothing is allocated.  The local side is checked as one
  // range when it can be (else piece by piece, which names the bad one).
  if (rt->bypass() && rank < rt->size() && rt->memory_route(rank) && !tc.fence_pending && count) {
    const core::VectorView view{is_put, rank, remote_seg, local_seg,
                                reinterpret_cast<const core::VectorPiece*>(pieces), count};
    uint64_t lo = UINT64_MAX, hi = 0, total = 0;
    bool wraps = false;
    for (size_t i = 0; i < count; ++i) {
      uint64_t end = 0;
      wraps |= __builtin_add_overflow(pieces[i].local, pieces[i].len, &end);
      wraps |= pieces[i].remote > UINT64_MAX - pieces[i].len;
      lo = std::min(lo, pieces[i].local);
      hi = std::max(hi, end);
      total += pieces[i].len;
    }
    std::byte* unused = nullptr;
    if (!wraps && lo < hi && rt->segments().translate(local_seg, lo, hi - lo, unused) == TSU_OK) {
      tc.stats.add(is_put ? Counter::kPut : Counter::kGet);
      tc.stats.add(is_put ? Counter::kBytesPut : Counter::kBytesGet, total);
      return complete_inline(tc, cb, rt->execute_vector(view));
    }
  }
  std::unique_ptr<core::VectorRequest> req;
  tsu_status_t st = make_request(*rt, tc, fn, is_put, rank, remote_seg, local_seg, req);
  if (st != TSU_OK) return st;
  try {
    req->pieces.reserve(count);
    for (size_t i = 0; i < count; ++i)
      req->pieces.push_back({pieces[i].remote, pieces[i].local, pieces[i].len});
  } catch (const std::bad_alloc&) {
    return rejected(tc, core::fail(TSU_ERR_NO_MEMORY, "%s: out of memory", fn));
  }
  st = check_pieces(*rt, tc, fn, *req);
  if (st != TSU_OK) return st;
  return issue_vector(*rt, tc, cb, std::move(req));
}

tsu_status_t strided_call(const char* fn, bool is_put, tsu_gaddr_t remote, tsu_laddr_t local,
                          const tsu_strided_t* shape, tsu_cb_t cb) {
  Runtime* rt = live_runtime();
  if (!rt) [[unlikely]] return not_initialized(fn);
  ThreadContext& tc = *rt->threads().current();
  if (!shape) return rejected(tc, core::fail(TSU_ERR_NULL_POINTER, "%s: shape is NULL", fn));
  if (local.reserved)
    return rejected(tc, core::fail(TSU_ERR_INVALID_ARG, "%s: local.reserved must be 0", fn));
  const uint64_t n0 = shape->count[0], n1 = shape->count[1];
  if (n0 && n1 && (n0 > kMaxPieces || n1 > kMaxPieces / n0))
    return rejected(tc, core::fail(TSU_ERR_INVALID_ARG,
                                   "%s: %llu x %llu blocks (at most %zu)", fn,
                                   static_cast<unsigned long long>(n0),
                                   static_cast<unsigned long long>(n1), kMaxPieces));
  std::unique_ptr<core::VectorRequest> req;
  tsu_status_t st = make_request(*rt, tc, fn, is_put, remote.rank, remote.seg, local.seg, req);
  if (st != TSU_OK) return st;
  if (shape->block && n0 && n1) {
    // Offsets computed with overflow checks: an overflowing shape is out of bounds.
    const auto at = [](uint64_t base, uint64_t i, uint64_t s, uint64_t j, uint64_t t,
                       uint64_t& out) {
      uint64_t a = 0, b = 0;
      if (__builtin_mul_overflow(i, s, &a) || __builtin_mul_overflow(j, t, &b) ||
          __builtin_add_overflow(a, b, &a) || __builtin_add_overflow(a, base, &out))
        return false;
      return true;
    };
    try {
      req->pieces.reserve(static_cast<std::size_t>(n0 * n1));
      for (uint64_t j = 0; j < n1; ++j)
        for (uint64_t i = 0; i < n0; ++i) {
          core::VectorPiece p{0, 0, shape->block};
          if (!at(remote.offset, i, shape->remote_stride[0], j, shape->remote_stride[1], p.remote) ||
              !at(local.offset, i, shape->local_stride[0], j, shape->local_stride[1], p.local))
            return rejected(tc, core::fail(TSU_ERR_OUT_OF_BOUNDS,
                                           "%s: block (%llu, %llu) lies past 2^64", fn,
                                           static_cast<unsigned long long>(i),
                                           static_cast<unsigned long long>(j)));
          req->pieces.push_back(p);
        }
    } catch (const std::bad_alloc&) {
      return rejected(tc, core::fail(TSU_ERR_NO_MEMORY, "%s: out of memory", fn));
    }
  }
  st = check_pieces(*rt, tc, fn, *req);
  if (st != TSU_OK) return st;
  return issue_vector(*rt, tc, cb, std::move(req));
}

}  // namespace

extern "C" {

tsu_status_t tsu_try_putv(uint32_t rank, tsu_seg_t remote_seg, tsu_seg_t local_seg,
                          const tsu_piece_t* pieces, size_t count, tsu_cb_t cb) {
  return vector_call("tsu_try_putv", true, rank, remote_seg, local_seg, pieces, count, cb);
}

tsu_status_t tsu_try_getv(uint32_t rank, tsu_seg_t remote_seg, tsu_seg_t local_seg,
                          const tsu_piece_t* pieces, size_t count, tsu_cb_t cb) {
  return vector_call("tsu_try_getv", false, rank, remote_seg, local_seg, pieces, count, cb);
}

tsu_status_t tsu_try_put_strided(tsu_gaddr_t dst, tsu_laddr_t src, const tsu_strided_t* shape,
                                 tsu_cb_t cb) {
  return strided_call("tsu_try_put_strided", true, dst, src, shape, cb);
}

tsu_status_t tsu_try_get_strided(tsu_laddr_t dst, tsu_gaddr_t src, const tsu_strided_t* shape,
                                 tsu_cb_t cb) {
  return strided_call("tsu_try_get_strided", false, src, dst, shape, cb);
}

}  // extern "C"
