// Vector and strided put/get on memory this process reaches (the rank itself
// or a node peer): in the issuing thread (bypass) or by the executor.  Every
// piece is resolved (the remote side against its owner's segment table, the
// local side against ours) before any byte moves, so one bad piece fails the
// whole request and nothing is written.
#include <algorithm>
#include <vector>

#include "core/vector_request.hpp"
#include "runtime/runtime.hpp"

namespace tsu::runtime {

using core::VectorPiece;

using transport::Access;

namespace {

// The smallest range holding every piece of one side (false: empty, or it
// would pass 2^64, which the per-piece path reports).
bool covering(const VectorView& req, bool remote_side, uint64_t& lo, uint64_t& len) noexcept {
  uint64_t hi = 0;
  lo = UINT64_MAX;
  for (std::size_t i = 0; i < req.count; ++i) {
    const VectorPiece& p = req.pieces[i];
    const uint64_t at = remote_side ? p.remote : p.local;
    uint64_t end = 0;
    if (__builtin_add_overflow(at, p.len, &end)) return false;
    lo = std::min(lo, at);
    hi = std::max(hi, end);
  }
  if (lo >= hi) return false;
  len = hi - lo;
  return true;
}

Access shifted(const Access& base, uint64_t delta) noexcept {
  Access a = base;
  if (a.kind == Access::kDirect) a.ptr += delta;
  else a.remote_addr += delta;
  return a;
}

}  // namespace

tsu_status_t Runtime::execute_vector(const VectorView& req) noexcept {
  transport::MemoryAccess* t = mem_routes_[req.rank];
  if (!t) return TSU_ERR_UNREACHABLE;
  const std::size_t n = req.count;
  // Fast path: each side's pieces all lie in one range of one segment, so
  // one resolution per side checks every piece (a piece is in bounds iff
  // the range ending at the largest end is).
  uint64_t rlo = 0, rlen = 0, llo = 0, llen = 0;
  Access rbase, lbase;
  if (covering(req, true, rlo, rlen) && covering(req, false, llo, llen) &&
      t->resolve(tsu_gaddr(req.rank, req.remote_seg, rlo), rlen, rbase) == TSU_OK &&
      resolve(tsu_gaddr(rank_, req.local_seg, llo), llen, lbase) == TSU_OK) {
    for (std::size_t i = 0; i < n; ++i) {
      const VectorPiece& p = req.pieces[i];
      const Access r = shifted(rbase, p.remote - rlo), l = shifted(lbase, p.local - llo);
      const tsu_status_t st = req.is_put ? copy_access(r, l, p.len) : copy_access(l, r, p.len);
      if (st != TSU_OK) return st;
    }
    return TSU_OK;
  }
  // Some piece is bad (or the range is empty): resolve piece by piece, which
  // names the status of the first bad one, before any byte moves.  Resolved
  // pairs are kept per thread so a request never allocates after the first
  // of its size.
  thread_local std::vector<Access> remote, local;
  remote.resize(n);
  local.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const VectorPiece& p = req.pieces[i];
    tsu_status_t st = t->resolve(tsu_gaddr(req.rank, req.remote_seg, p.remote), p.len, remote[i]);
    if (st == TSU_OK) st = resolve(tsu_gaddr(rank_, req.local_seg, p.local), p.len, local[i]);
    if (st != TSU_OK) return st;
  }
  for (std::size_t i = 0; i < n; ++i) {
    const tsu_status_t st = req.is_put ? copy_access(remote[i], local[i], req.pieces[i].len)
                                       : copy_access(local[i], remote[i], req.pieces[i].len);
    if (st != TSU_OK) return st;
  }
  return TSU_OK;
}

}  // namespace tsu::runtime
