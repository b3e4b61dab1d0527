// tsu-bench vector: a vector put/get (tsu_try_putv / tsu_try_getv: one
// request, one completion) against the same pieces moved by as many
// contiguous requests (tsu_try_put / tsu_try_get, one callback each),
// interleaved transfer by transfer, rank 0 -> rank 1.  Pieces of `size`
// bytes, `stride` apart on both sides (a strided column; stride = size would
// be contiguous and needs no vector).  Beside them one contiguous request of
// all the bytes (the limit: the same data with no piece overhead).  Reports
// the time per transfer, median / mean / p99.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <iostream>
#include <vector>

#include "../common/host.hpp"
#include "../common/stats.hpp"
#include "../common/timer.hpp"
#include "session.hpp"
#include "subcommands.hpp"

namespace bench {

namespace {

struct Count {
  std::atomic<uint64_t> done{0};
  std::atomic<bool> failed{false};
};

void count_cb(tsu_status_t st, void* arg) {
  auto* c = static_cast<Count*>(arg);
  if (st != TSU_OK) c->failed.store(true, std::memory_order_relaxed);
  c->done.fetch_add(1, std::memory_order_release);
}

template <typename F>
bool issue(F&& f) {
  for (;;) {
    const tsu_status_t st = f();
    if (st == TSU_OK) return true;
    if (st != TSU_EAGAIN) return false;
    tsu_progress();
  }
}

bool wait_for(Count& c, uint64_t n) {
  while (c.done.load(std::memory_order_acquire) < n) tsu_progress();
  return !c.failed.load();
}

}  // namespace

int run_vector(const VectorOptions& opts) {
  std::string error;
  auto session = TsuSession::start(error, opts.common.pin_ranks);
  if (!session) {
    std::cerr << "tsu-bench vector: " << error << "\n";
    return 1;
  }
  int status = 0;
  if (session->measures()) {
    const uint32_t target = session->target_rank();
    std::printf("\n## vector: mode=%s transport=%s ranks=%u pieces=%d stride=%zu B "
                "transfers=%d load(1m)=%s\n   time per transfer, us: median / mean / p99\n\n",
                session->mode().c_str(), session->transport().c_str(), session->size(),
                opts.pieces, opts.stride, opts.iters, load_average().c_str());
    std::printf("| %-4s | %8s | %26s | %26s | %26s | %7s |\n", "op", "piece", "one vector request",
                "one request per piece", "contiguous, all bytes", "gain");
    for (const std::string& op : opts.ops) {
      for (const std::size_t size : opts.sizes) {
        const std::size_t stride = std::max(opts.stride, size);
        const std::size_t span = stride * static_cast<std::size_t>(opts.pieces);
        // Local side at 0, remote side at the same offsets of the target.
        if (span * 2 > session->main_segment_size()) {
          std::cerr << "tsu-bench vector: " << opts.pieces << " x " << stride
                    << " B does not fit the segment (TSU_SEGMENT_SIZE)\n";
          status = 1;
          break;
        }
        std::vector<tsu_piece_t> pieces(static_cast<std::size_t>(opts.pieces));
        for (std::size_t i = 0; i < pieces.size(); ++i)
          pieces[i] = tsu_piece_t{span + i * stride, i * stride, size};
        const bool put = op == "put";
        std::vector<double> vec, many, whole;
        bool ok = true;
        for (int it = 0; it < opts.iters + opts.iters / 10 && ok; ++it) {
          const bool record = it >= opts.iters / 10;
          Count c;
          uint64_t t0 = now_ns();
          ok = issue([&] {
                 return put ? tsu_try_putv(target, TSU_SEG_MAIN, TSU_SEG_MAIN, pieces.data(),
                                           pieces.size(), tsu_cb(count_cb, &c))
                            : tsu_try_getv(target, TSU_SEG_MAIN, TSU_SEG_MAIN, pieces.data(),
                                           pieces.size(), tsu_cb(count_cb, &c));
               }) &&
               wait_for(c, 1);
          uint64_t t1 = now_ns();
          if (record) vec.push_back(static_cast<double>(t1 - t0) / 1000.0);
          Count m;
          t0 = now_ns();
          for (const tsu_piece_t& p : pieces)
            ok = ok && issue([&] {
                   return put ? tsu_try_put(tsu_gaddr(target, TSU_SEG_MAIN, p.remote),
                                            tsu_laddr(TSU_SEG_MAIN, p.local), p.len,
                                            tsu_cb(count_cb, &m))
                              : tsu_try_get(tsu_laddr(TSU_SEG_MAIN, p.local),
                                            tsu_gaddr(target, TSU_SEG_MAIN, p.remote), p.len,
                                            tsu_cb(count_cb, &m));
                 });
          ok = ok && wait_for(m, pieces.size());
          t1 = now_ns();
          if (record) many.push_back(static_cast<double>(t1 - t0) / 1000.0);
          Count w;
          const std::size_t bytes = size * pieces.size();
          t0 = now_ns();
          ok = ok && issue([&] {
                 return put ? tsu_try_put(tsu_gaddr(target, TSU_SEG_MAIN, span),
                                          tsu_laddr(TSU_SEG_MAIN, 0), bytes, tsu_cb(count_cb, &w))
                            : tsu_try_get(tsu_laddr(TSU_SEG_MAIN, 0),
                                          tsu_gaddr(target, TSU_SEG_MAIN, span), bytes,
                                          tsu_cb(count_cb, &w));
               }) && wait_for(w, 1);
          t1 = now_ns();
          if (record) whole.push_back(static_cast<double>(t1 - t0) / 1000.0);
        }
        if (!ok) {
          std::cerr << "tsu-bench vector: a request failed: " << tsu_last_error() << "\n";
          status = 1;
          break;
        }
        const Tail v = tail_of(vec), m = tail_of(many), w = tail_of(whole);
        std::printf("| %-4s | %8zu | %8.2f / %6.2f / %6.2f | %8.2f / %6.2f / %6.2f | %8.2f / %6.2f / %6.2f | %6.2fx |\n",
                    op.c_str(), size, v.median, v.mean, v.p99, m.median, m.mean, m.p99, w.median,
                    w.mean, w.p99, v.median > 0 ? m.median / v.median : 0.0);
      }
    }
  }
  tsu_barrier();
  return status;
}

}  // namespace bench
