// Large allreduce: reduce-scatter by recursive halving, then allgather by
// recursive doubling (Rabenseifner).  Each rank sends and combines about
// 2(p-1)/p of the vector in log2(p) steps, where recursive doubling sends the
// whole vector log2(p) times.  Teams that are not a power of two fold their
// extra ranks in first (as recursive doubling does).  Every element is
// combined by one rank and then copied, so results are bit-identical.
#include <vector>

#include "coll/coll_layer.hpp"
#include "coll/reduce_ops.hpp"

namespace tsu::coll {

void CollLayer::build_allreduce_halving(Op& op, std::byte* acc, std::byte* in, std::size_t count,
                                        tsu_dtype_t type, tsu_op_t rop) noexcept {
  const std::size_t es = dtype_size(type);
  const uint32_t n = static_cast<uint32_t>(op.team->members.size());
  uint32_t p2 = 1;
  const int64_t newr = add_fold_in(op, acc, in, count, type, rop, p2);
  if (newr >= 0) {
    const auto me = static_cast<uint32_t>(newr);
    // Element ranges: what this rank keeps and what it hands over per level.
    struct Level {
      uint32_t partner, mask;
      std::size_t keep_lo, keep_n, give_lo, give_n;
    };
    std::vector<Level> levels;
    std::size_t lo = 0, hi = count;
    for (uint32_t mask = 1; mask < p2; mask <<= 1) {
      const uint32_t pn = me ^ mask;
      const std::size_t mid = lo + (hi - lo) / 2;
      Level l{survivor_rank(pn, n, p2), mask, lo, mid - lo, mid, hi - mid};
      if (me > pn) l = Level{l.partner, mask, mid, hi - mid, lo, mid - lo};
      Step s;
      s.sends.push_back(Send{l.partner, acc + l.give_lo * es, l.give_n * es, kRoundHalvingReduce | mask});
      s.recvs.push_back(Recv{l.partner, in + l.keep_lo * es, l.keep_n * es, kRoundHalvingReduce | mask});
      s.post = [=] { combine(type, rop, acc + l.keep_lo * es, in + l.keep_lo * es, l.keep_n); };
      op.steps.push_back(std::move(s));
      levels.push_back(l);
      lo = l.keep_lo;
      hi = l.keep_lo + l.keep_n;
    }
    // Now acc[lo, hi) is reduced here; undo the levels, gathering the rest.
    for (auto it = levels.rbegin(); it != levels.rend(); ++it) {
      Step s;
      s.sends.push_back(Send{it->partner, acc + it->keep_lo * es, it->keep_n * es,
                             kRoundHalvingGather | it->mask});
      s.recvs.push_back(Recv{it->partner, acc + it->give_lo * es, it->give_n * es,
                             kRoundHalvingGather | it->mask});
      op.steps.push_back(std::move(s));
    }
  }
  add_fold_out(op, acc, count * es, p2);
}

}  // namespace tsu::coll
