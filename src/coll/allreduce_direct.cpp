// Allreduce inside one node by Cross Memory Attach: every member owns a slice
// of the vector, reads that slice straight out of each peer's src, combines,
// and writes the result straight into each peer's dst.  One copy per byte in
// each direction and no message fragments; messages carry only the buffer
// addresses (which also say "my buffers are ready") and a closing
// dissemination barrier (which says "nobody touches your buffers any more",
// and carries a failure, e.g. CMA refused, to every member's callback).
//
// In place (src == dst) is safe: slice j of a member's buffer is read and then
// written by member j only; the other members touch other slices.
#include <cstring>

#include "coll/coll_layer.hpp"
#include "coll/reduce_ops.hpp"
#include "core/log.hpp"
#include "runtime/runtime.hpp"
#include "transport/transport.hpp"

namespace tsu::coll {

namespace {
// Peer data is combined a chunk at a time: the chunk stays in cache between
// the cross-memory read and the combine.
constexpr std::size_t kChunkBytes = 64u << 10;

struct Addresses {  // what a member publishes about its buffers
  uint64_t src, dst;
};

// Member j's slice of `count` elements: [lo, lo + len).
void slice_of(uint32_t j, uint32_t n, std::size_t count, std::size_t& lo, std::size_t& len) {
  const std::size_t base = count / n, extra = count % n;
  lo = j * base + std::min<std::size_t>(j, extra);
  len = base + (j < extra ? 1 : 0);
}
}  // namespace

void CollLayer::build_allreduce_direct(Op& op, const std::byte* src, std::byte* dst,
                                       std::size_t count, tsu_dtype_t type,
                                       tsu_op_t rop) noexcept {
  const uint32_t n = static_cast<uint32_t>(op.team->members.size()), me = op.team->me;
  op.tmp.resize(std::size_t{n} * sizeof(Addresses));
  const Addresses mine{reinterpret_cast<uint64_t>(src), reinterpret_cast<uint64_t>(dst)};
  std::memcpy(op.tmp.data() + std::size_t{me} * sizeof mine, &mine, sizeof mine);
  Step exchange;
  for (uint32_t k = 1; k < n; ++k) {
    const uint32_t to = (me + k) % n, from = (me + n - k) % n;
    exchange.sends.push_back(
        Send{to, op.tmp.data() + std::size_t{me} * sizeof mine, sizeof mine, kRoundAddresses});
    exchange.recvs.push_back(
        Recv{from, op.tmp.data() + std::size_t{from} * sizeof mine, sizeof mine, kRoundAddresses});
  }
  Op* o = &op;
  exchange.post = [=, this] { reduce_direct(*o, src, dst, count, type, rop); };
  op.steps.push_back(std::move(exchange));
  add_barrier_steps(op, kRoundDirectDone, /*carry_status=*/true);
}

void CollLayer::reduce_direct(Op& op, const std::byte* src, std::byte* dst, std::size_t count,
                              tsu_dtype_t type, tsu_op_t rop) noexcept {
  using transport::Access;
  const uint32_t n = static_cast<uint32_t>(op.team->members.size()), me = op.team->me;
  const std::size_t es = dtype_size(type);
  std::size_t lo = 0, len = 0;
  slice_of(me, n, count, lo, len);
  const std::size_t bytes = len * es;
  if (!bytes) return;
  std::byte* acc = dst + lo * es;
  if (src != dst) std::memcpy(acc, src + lo * es, bytes);
  auto peer = [&](uint32_t j) {
    Addresses a;
    std::memcpy(&a, op.tmp.data() + std::size_t{j} * sizeof a, sizeof a);
    return a;
  };
  // Access to member j's memory at address `addr` (its pid, for CMA).
  auto reach = [&](uint32_t j, uint64_t addr, std::size_t n_bytes, Access& out) {
    const uint32_t rank = op.team->members[j];
    transport::MemoryAccess* t = rt_.memory_access(rank);
    return t ? t->resolve_process_memory(rank, addr, n_bytes, out) : TSU_ERR_UNREACHABLE;
  };
  auto failed = [&](const char* what, uint32_t j, tsu_status_t st) {
    TSU_LOG_ERROR("allreduce: %s rank %u's buffer failed: %s", what, op.team->members[j],
                  tsu_strerror(st));
    if (op.status == TSU_OK) op.status = st;
  };
  op.tmp2.resize(std::min(bytes, kChunkBytes));
  const Access chunk{Access::kDirect, op.tmp2.data(), 0, 0};
  for (std::size_t off = 0; off < bytes; off += kChunkBytes) {
    const std::size_t m = std::min(kChunkBytes, bytes - off);
    for (uint32_t j = 0; j < n; ++j) {
      if (j == me) continue;
      Access from;
      tsu_status_t st = reach(j, peer(j).src + lo * es + off, m, from);
      if (st == TSU_OK) st = rt_.copy_access(chunk, from, m);
      if (st != TSU_OK) return failed("reading", j, st);
      combine(type, rop, acc + off, op.tmp2.data(), m / es);
    }
  }
  const Access result{Access::kDirect, acc, 0, 0};
  for (uint32_t j = 0; j < n; ++j) {
    if (j == me) continue;
    Access to;
    tsu_status_t st = reach(j, peer(j).dst + lo * es, bytes, to);
    if (st == TSU_OK) st = rt_.copy_access(to, result, bytes);
    if (st != TSU_OK) return failed("writing", j, st);
  }
}

}  // namespace tsu::coll
