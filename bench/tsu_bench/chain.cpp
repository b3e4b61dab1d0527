// tsu-bench chain: seed 001's ordered requests.  Rank 0 moves a block along a
// chain of third-party copies between the other ranks (rank 1 -> 2 -> 1 ...
// with 3 ranks; 1 -> 0 -> 1 ... with 2), two ways, interleaved chain by
// chain:
//   waits    each link is issued after the previous one's callback (what a
//            program does without ordered requests: the issuer waits);
//   ordered  every link issued at once, each naming the previous one
//            (tsu_try_copy_ordered), then one tsu_req_wait.
// Beside them, one copy alone (the per-link limit).  Reports the time per
// chain: median, mean, p99 over all chains.
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

void flag_cb(tsu_status_t st, void* arg) {
  static_cast<std::atomic<int32_t>*>(arg)->store(st == TSU_OK ? 1 : -1, std::memory_order_release);
}

bool wait_flag(std::atomic<int32_t>& f) {
  while (f.load(std::memory_order_acquire) == 0) tsu_progress();
  return f.load() == 1;
}

template <typename F>
tsu_status_t retry(F&& f) {
  for (;;) {
    const tsu_status_t st = f();
    if (st != TSU_EAGAIN) return st;
    tsu_progress();
  }
}

}  // namespace

int run_chain(const ChainOptions& opts) {
  std::string error;
  auto session = TsuSession::start(error, opts.common.pin_ranks);
  if (!session) {
    std::cerr << "tsu-bench chain: " << error << "\n";
    return 1;
  }
  int status = 0;
  const uint32_t n = session->size();
  if (session->measures() && n < 2) {
    std::cerr << "tsu-bench chain: run under tsurun -n 2 or more\n";
    status = 1;
  } else if (session->measures()) {
    // The ranks the block visits: all but the issuer with 3+ ranks.
    std::vector<uint32_t> hop;
    for (int i = 0; i <= opts.links; ++i)
      hop.push_back(n >= 3 ? 1 + static_cast<uint32_t>(i) % (n - 1) : static_cast<uint32_t>(i + 1) % 2);
    std::printf("\n## chain: mode=%s transport=%s ranks=%u links=%d chains=%d load(1m)=%s\n"
                "   time per chain of third-party copies, us: median / mean / p99\n\n",
                session->mode().c_str(), session->transport().c_str(), n, opts.links, opts.iters,
                load_average().c_str());
    std::printf("| %8s | %26s | %26s | %26s | %7s |\n", "size", "issuer waits per link",
                "ordered, one wait", "one copy (x links)", "gain");
    for (const std::size_t size : opts.sizes) {
      if ((static_cast<std::size_t>(opts.links) + 1) * size > session->main_segment_size()) {
        std::cerr << "tsu-bench chain: " << size << " B x " << opts.links + 1
                  << " does not fit the segment (TSU_SEGMENT_SIZE)\n";
        status = 1;
        break;
      }
      auto link_dst = [&](int i) {
        return tsu_gaddr(hop[static_cast<std::size_t>(i) + 1], TSU_SEG_MAIN,
                         static_cast<uint64_t>(i + 1) * size);
      };
      auto link_src = [&](int i) {
        return tsu_gaddr(hop[static_cast<std::size_t>(i)], TSU_SEG_MAIN,
                         static_cast<uint64_t>(i) * size);
      };
      std::vector<double> waits, ordered, single;
      bool ok = true;
      for (int it = 0; it < opts.iters + opts.iters / 10 && ok; ++it) {
        const bool record = it >= opts.iters / 10;  // the first tenth warms up
        // Issuer waits between links.
        uint64_t t0 = now_ns();
        for (int i = 0; i < opts.links && ok; ++i) {
          std::atomic<int32_t> done{0};
          ok = retry([&] {
                 return tsu_try_copy(link_dst(i), link_src(i), size, tsu_cb(flag_cb, &done));
               }) == TSU_OK &&
               wait_flag(done);
        }
        uint64_t t1 = now_ns();
        if (record) waits.push_back(static_cast<double>(t1 - t0) / 1000.0);
        // Ordered: all links at once, one wait.
        t0 = now_ns();
        tsu_req_t prev = TSU_REQ_NONE;
        for (int i = 0; i < opts.links && ok; ++i)
          ok = retry([&] {
                 return tsu_try_copy_ordered(link_dst(i), link_src(i), size, prev, tsu_cb_none(),
                                             &prev);
               }) == TSU_OK;
        ok = ok && tsu_req_wait(prev) == TSU_OK;
        t1 = now_ns();
        if (record) ordered.push_back(static_cast<double>(t1 - t0) / 1000.0);
        // One copy alone.
        std::atomic<int32_t> done{0};
        t0 = now_ns();
        ok = ok &&
             retry([&] { return tsu_try_copy(link_dst(0), link_src(0), size, tsu_cb(flag_cb, &done)); }) ==
                 TSU_OK &&
             wait_flag(done);
        t1 = now_ns();
        if (record) single.push_back(static_cast<double>(t1 - t0) / 1000.0 * opts.links);
      }
      if (!ok) {
        std::cerr << "tsu-bench chain: a copy failed: " << tsu_last_error() << "\n";
        status = 1;
        break;
      }
      const Tail w = tail_of(waits), o = tail_of(ordered), s = tail_of(single);
      std::printf("| %8zu | %8.2f / %6.2f / %6.2f | %8.2f / %6.2f / %6.2f | %8.2f / %6.2f / %6.2f | %6.2fx |\n",
                  size, w.median, w.mean, w.p99, o.median, o.mean, o.p99, s.median, s.mean, s.p99,
                  o.median > 0 ? w.median / o.median : 0.0);
    }
  }
  tsu_barrier();
  return status;
}

}  // namespace bench
