// The collectives themselves: barrier, broadcast, reductions, gathers,
// alltoall and scatter, each on the shared-memory or hierarchy path when it
// can take one, else as message steps for the engine.
#include "coll/coll_layer.hpp"

#include <algorithm>
#include <cstring>

#include "core/error.hpp"
#include "core/trace.hpp"
#include "runtime/runtime.hpp"
#include "coll/hierarchy.hpp"
#include "coll/reduce_ops.hpp"

namespace tsu::coll {

namespace {

// A collective taking the shared-memory node path or the hierarchy: an
// instant at issue, named by its C entry point (its phases are not traced).
constexpr core::trace::EventType kTraceCollShared{"collective", "coll", 'i',
                                                  {"team_size", "hierarchy", nullptr}};
void trace_shared_path(const char* fn, uint32_t team_size, bool hier) noexcept {
  TSU_TRACE_NAMED(kTraceCollShared, fn, 0, team_size, hier, 0);
}

}  // namespace

// ---- Collectives ------------------------------------------------------------------

#define TSU_COLL_TEAM(fn)                                                                \
  Team* tm;                                                                              \
  auto op = std::make_unique<Op>();                                                      \
  {                                                                                      \
    std::lock_guard lock(mu_);                                                           \
    tm = team(team_id);                                                                  \
    op->tmp = pool_.take();                                                              \
    op->tmp2 = pool_.take();                                                             \
  }                                                                                      \
  if (!tm) return core::fail(TSU_ERR_INVALID_ARG, "%s: team %u is not valid", fn, team_id); \
  const uint32_t n = static_cast<uint32_t>(tm->members.size()), me = tm->me;             \
  op->team = tm;                                                                         \
  op->name = fn;                                                                         \
  op->cb = cb

namespace {

// When a rooted or all-to-all reduction/gather may take a shared route: a
// root inside the team, and the buffers it needs (else the message
// algorithm reports the error with its message).
auto rooted_usable(int64_t root, std::size_t n, const void* src, const void* dst) {
  return [=](uint32_t nn, uint32_t nme) {
    const bool valid_root = root < 0 || root < nn;
    const bool has_dst = dst || (root >= 0 && static_cast<uint32_t>(root) != nme);
    return valid_root && (!n || (src && has_dst));
  };
}

}  // namespace

template <typename Usable>
bool CollLayer::shared_path(const char* fn, tsu_team_t team, HierKind hier_kind,
                            const NodeColl::Request& req, Usable&& usable,
                            tsu_status_t& st) noexcept {
  uint32_t nn = 0, nme = 0;
  bool hier = false;
  const int32_t h = node_handle(team, nn, nme, &hier);
  if (h < 0 && !hier) return false;
  trace_shared_path(fn, nn, hier);
  if (!usable(nn, nme)) return false;
  if (hier) {
    auto* ho = new (std::nothrow) HierOp{};
    if (!ho) {
      st = core::fail(TSU_ERR_NO_MEMORY, "%s: out of memory", fn);
      return true;
    }
    *ho = hier_op(this, team, hier_kind, req.cb);
    ho->src = req.src;
    ho->dst = req.dst;
    ho->count = req.count;
    ho->bytes = req.bytes;
    ho->type = req.type;
    ho->rop = req.rop;
    ho->root = req.root;
    st = start_hier(ho);
    return true;
  }
  node_.start(h, req);
  st = TSU_OK;
  return true;
}

tsu_status_t CollLayer::barrier(tsu_team_t team_id, const tsu_cb_t& cb) noexcept {
  NodeColl::Request req;
  req.kind = NodeColl::Kind::kBarrier;
  req.cb = cb;
  if (tsu_status_t st; shared_path("tsu_try_barrier", team_id, HierKind::kBarrier, req,
                                   [](uint32_t, uint32_t) { return true; }, st))
    return st;
  TSU_COLL_TEAM("tsu_try_barrier");
  (void)n;
  (void)me;
  add_barrier_steps(*op, 0);
  return start(std::move(op));
}

void CollLayer::add_barrier_steps(Op& op, uint32_t first_round, bool carry_status) noexcept {
  const uint32_t n = static_cast<uint32_t>(op.team->members.size()), me = op.team->me;
  uint32_t rounds = 0;
  for (uint32_t dist = 1; dist < n; dist <<= 1) ++rounds;
  if (carry_status) op.heard.assign(rounds, TSU_OK);
  const std::size_t len = carry_status ? sizeof(tsu_status_t) : 0;
  // Dissemination: round k talks to +-2^k.  After the last round every
  // member has heard from every other one (directly or through others).
  Op* o = &op;
  for (uint32_t dist = 1, k = 0; dist < n; dist <<= 1, ++k) {
    Step s;
    const auto* status = carry_status ? reinterpret_cast<const std::byte*>(&op.status) : nullptr;
    auto* heard = carry_status ? reinterpret_cast<std::byte*>(&op.heard[k]) : nullptr;
    s.sends.push_back(Send{(me + dist) % n, status, len, first_round + k});
    s.recvs.push_back(Recv{(me + n - dist) % n, heard, len, first_round + k});
    if (carry_status)
      s.post = [o, k] {
        if (o->status == TSU_OK) o->status = o->heard[k];
      };
    op.steps.push_back(std::move(s));
  }
}

tsu_status_t CollLayer::broadcast(tsu_team_t team_id, void* buf, std::size_t bytes, uint32_t root,
                                  const tsu_cb_t& cb) noexcept {
  if (bytes && !buf) return core::fail(TSU_ERR_NULL_POINTER, "tsu_try_broadcast: buf is NULL");
  NodeColl::Request req;
  req.kind = NodeColl::Kind::kBroadcast;
  req.dst = static_cast<std::byte*>(buf);
  req.bytes = bytes;
  req.root = root;
  req.cb = cb;
  if (tsu_status_t st; shared_path("tsu_try_broadcast", team_id, HierKind::kBroadcast, req,
                                   [&](uint32_t nn, uint32_t) { return root < nn; }, st))
    return st;
  TSU_COLL_TEAM("tsu_try_broadcast");
  if (root >= n) return core::fail(TSU_ERR_BAD_RANK, "tsu_try_broadcast: root %u >= team size %u", root, n);
  auto* p = static_cast<std::byte*>(buf);
  const uint32_t vr = (me + n - root) % n;
  auto abs = [&](uint32_t v) { return (v + root) % n; };
  uint32_t mask = 1;
  while (mask < n) {  // binomial tree: receive from the parent
    if (vr & mask) {
      Step s;
      s.recvs.push_back(Recv{abs(vr - mask), p, bytes, 0});
      op->steps.push_back(std::move(s));
      break;
    }
    mask <<= 1;
  }
  Step fwd;
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (vr + mask < n) fwd.sends.push_back(Send{abs(vr + mask), p, bytes, 0});
  op->steps.push_back(std::move(fwd));
  return start(std::move(op));
}

tsu_status_t CollLayer::reduce(const char* fn, tsu_team_t team_id, const void* src, void* dst,
                               std::size_t count, tsu_dtype_t type, tsu_op_t rop, int64_t root,
                               const tsu_cb_t& cb) noexcept {
  const std::size_t es = dtype_size(type);
  if (!es) return core::fail(TSU_ERR_INVALID_ARG, "%s: unknown type %d", fn, static_cast<int>(type));
  if (rop < TSU_OP_SUM || rop > TSU_OP_BOR)
    return core::fail(TSU_ERR_INVALID_ARG, "%s: unknown op %d", fn, static_cast<int>(rop));
  if ((rop == TSU_OP_BAND || rop == TSU_OP_BOR) && (type == TSU_DT_FLOAT || type == TSU_DT_DOUBLE))
    return core::fail(TSU_ERR_INVALID_ARG, "%s: bitwise ops need an integer type", fn);
  {
    NodeColl::Request req;
    req.kind = root < 0 ? NodeColl::Kind::kAllreduce : NodeColl::Kind::kReduce;
    req.src = static_cast<const std::byte*>(src);
    req.dst = static_cast<std::byte*>(dst);
    req.count = count;
    req.bytes = count * es;
    req.type = type;
    req.rop = rop;
    req.root = root < 0 ? 0 : static_cast<uint32_t>(root);
    req.cb = cb;
    if (tsu_status_t st; shared_path(fn, team_id, root < 0 ? HierKind::kAllreduce : HierKind::kReduce,
                                     req, rooted_usable(root, count, src, dst), st))
      return st;
  }
  TSU_COLL_TEAM(fn);
  const bool all = root < 0;
  if (!all && root >= n) return core::fail(TSU_ERR_BAD_RANK, "%s: root %lld >= team size %u", fn, static_cast<long long>(root), n);
  const bool is_root = all || static_cast<uint32_t>(root) == me;
  if (count && (!src || (is_root && !dst)))
    return core::fail(TSU_ERR_NULL_POINTER, "%s: src or dst is NULL", fn);
  const std::size_t bytes = count * es;
  Op* o = op.get();
  // The accumulator: dst where this rank gets the result, else op-owned.
  o->tmp.resize(is_root ? 0 : bytes);
  o->tmp2.resize(bytes);
  std::byte* acc = is_root ? static_cast<std::byte*>(dst) : o->tmp.data();
  std::byte* in = o->tmp2.data();
  if (bytes && acc != src) std::memmove(acc, src, bytes);
  if (all) {
    if (n > 1 && bytes >= rt_.config().coll_large_min)
      build_allreduce_halving(*o, acc, in, count, type, rop);
    else
      build_allreduce_doubling(*o, acc, in, count, type, rop);
    return start(std::move(op));
  }
  // Binomial tree towards the root.
  auto fold = [=] { combine(type, rop, acc, in, count); };
  const auto r = static_cast<uint32_t>(root);
  const uint32_t vr = (me + n - r) % n;
  auto abs = [&](uint32_t v) { return (v + r) % n; };
  for (uint32_t mask = 1; mask < n; mask <<= 1) {
    Step s;
    if (vr & mask) {
      s.sends.push_back(Send{abs(vr - mask), acc, bytes, mask});
      op->steps.push_back(std::move(s));
      break;
    }
    if (vr + mask < n) {
      s.recvs.push_back(Recv{abs(vr + mask), in, bytes, mask});
      s.post = fold;
      op->steps.push_back(std::move(s));
    }
  }
  return start(std::move(op));
}

void CollLayer::build_allreduce_doubling(Op& op, std::byte* acc, std::byte* in, std::size_t count,
                                         tsu_dtype_t type, tsu_op_t rop) noexcept {
  const std::size_t bytes = count * dtype_size(type);
  uint32_t p2 = 1;
  const int64_t newr = add_fold_in(op, acc, in, count, type, rop, p2);
  if (newr >= 0) {
    const uint32_t n = static_cast<uint32_t>(op.team->members.size());
    for (uint32_t mask = 1; mask < p2; mask <<= 1) {
      const uint32_t partner = survivor_rank(static_cast<uint32_t>(newr) ^ mask, n, p2);
      Step s;
      s.sends.push_back(Send{partner, acc, bytes, mask});
      s.recvs.push_back(Recv{partner, in, bytes, mask});
      s.post = [=] { combine(type, rop, acc, in, count); };
      op.steps.push_back(std::move(s));
    }
  }
  add_fold_out(op, acc, bytes, p2);
}

int64_t CollLayer::add_fold_in(Op& op, std::byte* acc, std::byte* in, std::size_t count,
                               tsu_dtype_t type, tsu_op_t rop, uint32_t& p2) noexcept {
  const uint32_t n = static_cast<uint32_t>(op.team->members.size()), me = op.team->me;
  const std::size_t bytes = count * dtype_size(type);
  p2 = 1;
  while (p2 * 2 <= n) p2 *= 2;
  const uint32_t rem = n - p2;
  if (me >= 2 * rem) return me - rem;
  Step s;
  if (me % 2 == 0) {
    s.sends.push_back(Send{me + 1, acc, bytes, kRoundFoldIn});
    op.steps.push_back(std::move(s));
    return -1;
  }
  s.recvs.push_back(Recv{me - 1, in, bytes, kRoundFoldIn});
  s.post = [=] { combine(type, rop, acc, in, count); };
  op.steps.push_back(std::move(s));
  return me / 2;
}

void CollLayer::add_fold_out(Op& op, std::byte* acc, std::size_t bytes, uint32_t p2) noexcept {
  const uint32_t n = static_cast<uint32_t>(op.team->members.size()), me = op.team->me;
  if (me >= 2 * (n - p2)) return;
  Step s;
  if (me % 2 == 1) s.sends.push_back(Send{me - 1, acc, bytes, kRoundFoldOut});
  else s.recvs.push_back(Recv{me + 1, acc, bytes, kRoundFoldOut});
  op.steps.push_back(std::move(s));
}

tsu_status_t CollLayer::gather(const char* fn, tsu_team_t team_id, const void* src, void* dst,
                               std::size_t bytes, int64_t root, const tsu_cb_t& cb) noexcept {
  {
    NodeColl::Request req;
    req.kind = root < 0 ? NodeColl::Kind::kAllgather : NodeColl::Kind::kGather;
    req.src = static_cast<const std::byte*>(src);
    req.dst = static_cast<std::byte*>(dst);
    req.bytes = bytes;
    req.root = root < 0 ? 0 : static_cast<uint32_t>(root);
    req.cb = cb;
    if (tsu_status_t st; shared_path(fn, team_id, root < 0 ? HierKind::kAllgather : HierKind::kGather,
                                     req, rooted_usable(root, bytes, src, dst), st))
      return st;
  }
  TSU_COLL_TEAM(fn);
  const bool all = root < 0;
  if (!all && root >= n) return core::fail(TSU_ERR_BAD_RANK, "%s: root %lld >= team size %u", fn, static_cast<long long>(root), n);
  const bool is_root = all || static_cast<uint32_t>(root) == me;
  if (bytes && (!src || (is_root && !dst)))
    return core::fail(TSU_ERR_NULL_POINTER, "%s: src or dst is NULL", fn);
  Op* o = op.get();
  o->tmp.resize(std::size_t{n} * bytes);
  std::byte* tmp = o->tmp.data();
  if (bytes) std::memcpy(tmp, src, bytes);
  auto* out = static_cast<std::byte*>(dst);
  if (all) {
    // Bruck: after the round with distance d, tmp holds blocks me .. me+2d-1.
    for (uint32_t dist = 1; dist < n; dist <<= 1) {
      const uint32_t cnt = std::min(dist, n - dist);
      Step s;
      s.sends.push_back(Send{(me + n - dist) % n, tmp, cnt * bytes, dist});
      s.recvs.push_back(Recv{(me + dist) % n, tmp + std::size_t{dist} * bytes, cnt * bytes, dist});
      op->steps.push_back(std::move(s));
    }
    o->finish = [=] {
      for (uint32_t i = 0; i < n; ++i)
        if (bytes) std::memcpy(out + std::size_t{(me + i) % n} * bytes, tmp + std::size_t{i} * bytes, bytes);
    };
    return start(std::move(op));
  }
  // Binomial gather: a subtree's blocks travel together, in relative order.
  const auto r = static_cast<uint32_t>(root);
  const uint32_t vr = (me + n - r) % n;
  auto abs = [&](uint32_t v) { return (v + r) % n; };
  std::size_t have = 1;
  for (uint32_t mask = 1; mask < n; mask <<= 1) {
    Step s;
    if (vr & mask) {
      s.sends.push_back(Send{abs(vr - mask), tmp, have * bytes, mask});
      op->steps.push_back(std::move(s));
      break;
    }
    if (vr + mask < n) {
      const uint32_t cnt = std::min(mask, n - vr - mask);
      s.recvs.push_back(Recv{abs(vr + mask), tmp + std::size_t{mask} * bytes, cnt * bytes, mask});
      have += cnt;
      op->steps.push_back(std::move(s));
    }
  }
  if (is_root)
    o->finish = [=] {
      for (uint32_t i = 0; i < n; ++i)
        if (bytes) std::memcpy(out + std::size_t{(i + r) % n} * bytes, tmp + std::size_t{i} * bytes, bytes);
    };
  return start(std::move(op));
}

tsu_status_t CollLayer::alltoall(tsu_team_t team_id, const void* src, void* dst, std::size_t bytes,
                                 const tsu_cb_t& cb) noexcept {
  if (bytes && (!src || !dst))
    return core::fail(TSU_ERR_NULL_POINTER, "tsu_try_alltoall: src or dst is NULL");
  NodeColl::Request req;
  req.kind = NodeColl::Kind::kAlltoall;
  req.src = static_cast<const std::byte*>(src);
  req.dst = static_cast<std::byte*>(dst);
  req.bytes = bytes;
  req.cb = cb;
  if (tsu_status_t st; shared_path("tsu_try_alltoall", team_id, HierKind::kAlltoall, req,
                                   [](uint32_t, uint32_t) { return true; }, st))
    return st;
  TSU_COLL_TEAM("tsu_try_alltoall");
  const auto* in = static_cast<const std::byte*>(src);
  auto* out = static_cast<std::byte*>(dst);
  Step s;
  for (uint32_t k = 1; k < n; ++k) {  // staggered so not everyone hits rank 0 first
    const uint32_t to = (me + k) % n, from = (me + n - k) % n;
    s.sends.push_back(Send{to, in + std::size_t{to} * bytes, bytes, 0});
    s.recvs.push_back(Recv{from, out + std::size_t{from} * bytes, bytes, 0});
  }
  if (bytes) std::memmove(out + std::size_t{me} * bytes, in + std::size_t{me} * bytes, bytes);
  op->steps.push_back(std::move(s));
  return start(std::move(op));
}

tsu_status_t CollLayer::scatter(tsu_team_t team_id, const void* src, void* dst, std::size_t bytes,
                                uint32_t root, const tsu_cb_t& cb) noexcept {
  uint32_t nn = 0, nme = 0;
  const int32_t h = node_handle(team_id, nn, nme);
  if (h >= 0 && root < nn) {
    NodeColl::Request req;
    req.kind = NodeColl::Kind::kScatter;
    req.src = static_cast<const std::byte*>(src);
    req.dst = static_cast<std::byte*>(dst);
    req.bytes = bytes;
    req.root = root;
    req.cb = cb;
    node_.start(h, req);
    return TSU_OK;
  }
  TSU_COLL_TEAM("scatter");
  if (root >= n) return core::fail(TSU_ERR_BAD_RANK, "scatter: root %u >= team size %u", root, n);
  const auto* in = static_cast<const std::byte*>(src);
  auto* out = static_cast<std::byte*>(dst);
  Step s;
  if (me == root) {
    for (uint32_t k = 1; k < n; ++k) {
      const uint32_t to = (me + k) % n;
      s.sends.push_back(Send{to, in + std::size_t{to} * bytes, bytes, 0});
    }
    if (bytes) std::memmove(out, in + std::size_t{me} * bytes, bytes);
  } else {
    s.recvs.push_back(Recv{root, out, bytes, 0});
  }
  op->steps.push_back(std::move(s));
  return start(std::move(op));
}

#undef TSU_COLL_TEAM

}  // namespace tsu::coll
