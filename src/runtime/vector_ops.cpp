// Vector and strided put/get on memory this process reaches (the rank itself
// or a node peer): in the issuing thread (bypass) or by the executor.  Every
// piece is resolved (the remote side against its owner's segment table, the
// local side against ours) before any byte moves, so one bad piece fails the
// whole request and nothing is written.
#include <vector>

#include "core/vector_request.hpp"
#include "runtime/runtime.hpp"

namespace tsu::core {

using transport::Access;

tsu_status_t Runtime::execute_vector(const VectorRequest& req) noexcept {
  transport::Transport* t = routes_[req.rank];
  if (!t || !(t->capabilities() & transport::kCapMemoryAccess)) return TSU_ERR_UNREACHABLE;
  // Resolved pairs, kept per thread so a request never allocates after the
  // first of its size.
  thread_local std::vector<Access> remote, local;
  const std::size_t n = req.pieces.size();
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

}  // namespace tsu::core
