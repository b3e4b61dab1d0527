// tsu-bench copy: seed 001 section 4 -- latency and bandwidth of tsu_try_copy
// between two global addresses, rank 0 issuing, for the four cases of the
// paper (3 ranks on one node):
//   remote-to-remote  rank 1 -> rank 2 (third-party copy: neither is the caller)
//   remote-to-local   rank 1 -> rank 0
//   local-to-remote   rank 0 -> rank 1
//   local-to-local    rank 0 -> rank 0
// One request is completed before the next is issued (as in the paper), so
// bandwidth = size / latency of that request.
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "../common/host.hpp"
#include "../common/report.hpp"
#include "../common/table.hpp"
#include "../common/timer.hpp"
#include "op_loops.hpp"
#include "repeat.hpp"
#include "session.hpp"
#include "subcommands.hpp"

namespace bench {

namespace {

struct CopyCase {
  const char* name;
  const char* short_name;
  int src_rank;  // -1: unused
  int dst_rank;
  uint32_t ranks_needed;
};

constexpr CopyCase kCases[] = {
    {"remote-to-remote", "r2r", 1, 2, 3},
    {"remote-to-local", "r2l", 1, 0, 2},
    {"local-to-remote", "l2r", 0, 1, 2},
    {"local-to-local", "l2l", 0, 0, 1},
};

const CopyCase* find_case(const std::string& name) {
  for (const CopyCase& c : kCases)
    if (name == c.name || name == c.short_name) return &c;
  return nullptr;
}

struct CopyIssue {
  std::size_t size;
  tsu_status_t operator()(OpState& s, uint64_t, tsu_cb_t cb) const {
    return tsu_try_copy(s.dst, s.src, size, cb);
  }
};

int measure_all(const TsuSession& session, const CopyOptions& opts) {
  const std::size_t max_size = *std::max_element(opts.sizes.begin(), opts.sizes.end());
  const int max_threads = *std::max_element(opts.threads.begin(), opts.threads.end());
  // Each thread: a source half and a destination half, in every rank's segment.
  const std::size_t half = region_bytes_for(max_size);
  const std::size_t region = 2 * half;
  std::string error;
  if (!session.fits(max_threads, region, error)) {
    std::cerr << "tsu-bench copy: " << error << "\n";
    return 1;
  }
  std::printf("\n## copy: mode=%s transport=%s ranks=%u issuer=rank 0 pinned=%s reps=%d "
              "duration=%.0f ms timer-cost=%.1f ns (subtracted) load(1m)=%s "
              "(one request completed before the next; GB/s = size / latency)\n\n",
              session.mode().c_str(), session.transport().c_str(), session.size(),
              opts.common.pin ? "yes" : "no", opts.common.reps, opts.common.duration_ms,
              TickClock::get().read_cost_ns(), load_average().c_str());
  const TablePrinter table({{"case", 16, false},
                            {"size", 8},
                            {"thr", 3},
                            {"latency ns", 24},
                            {"bandwidth GB/s", 24}});
  table.header();
  const Reporter reporter(opts.common);
  WorkerPool pool(max_threads, opts.common.pin);
  for (const std::string& case_name : opts.cases) {
    const CopyCase& c = *find_case(case_name);
    if (session.size() < c.ranks_needed) {
      std::fprintf(stderr,
                   "tsu-bench copy: skipping %s: it needs %u ranks (tsurun -n %u), the job has "
                   "%u\n",
                   c.name, c.ranks_needed, c.ranks_needed, session.size());
      continue;
    }
    for (const std::size_t size : opts.sizes) {
      for (const int threads : opts.threads) {
        const bool engine_thread = session.mode() == "engine" && !session.manual_progress();
        const Waiter waiter(threads + (engine_thread ? 1 : 0) > host_facts().online_cpus,
                            session.manual_progress());
        CopyIssue issue{size};
        std::vector<std::unique_ptr<OpState>> owned;
        std::vector<OpState*> states;
        auto lat = repeat_measurement(opts.common, [&](double ms) -> std::optional<double> {
          owned.clear();
          states.clear();
          for (int t = 0; t < threads; ++t) {
            auto s = std::make_unique<OpState>();
            const uint64_t base = static_cast<uint64_t>(t) * region;
            s->src = tsu_gaddr(static_cast<uint32_t>(c.src_rank), TSU_SEG_MAIN, base);
            s->dst = tsu_gaddr(static_cast<uint32_t>(c.dst_rank), TSU_SEG_MAIN, base + half);
            states.push_back(s.get());
            owned.push_back(std::move(s));
          }
          pool.run(threads, [&](int t) {
            op_latency_loop(*states[static_cast<std::size_t>(t)], issue, waiter, ms);
          });
          error = op_first_failure(states);
          if (!error.empty()) return std::nullopt;
          return op_mean_latency_ns(states);
        });
        if (!lat) {
          std::cerr << "tsu-bench copy: " << c.name << " " << size << " B: " << error << "\n";
          return 1;
        }
        std::vector<double> gbps;
        for (double ns : *lat) gbps.push_back(ns > 0 ? static_cast<double>(size) / ns : 0);
        const Summary ls = summarize(*lat), bs = summarize(gbps);
        table.row({c.name, format_size(size), std::to_string(threads), format_summary(ls),
                   format_summary(bs)});
        Record rec;
        rec.benchmark = "copy";
        rec.op = "copy";
        rec.size = size;
        rec.threads = threads;
        rec.mode = session.mode();
        rec.transport = c.ranks_needed == 1 ? "self" : session.transport();
        rec.labels = {{"case", c.name}};
        rec.metric = "latency";
        rec.unit = "ns";
        rec.summary = ls;
        rec.extra = {{"ranks", static_cast<double>(session.size())},
                     {"timer_cost_ns", TickClock::get().read_cost_ns()}};
        bool ok = reporter.record(rec);
        rec.metric = "bandwidth";
        rec.unit = "GB/s";
        rec.summary = bs;
        ok = reporter.record(rec) && ok;
        if (!ok) return 1;
      }
    }
  }
  return 0;
}

}  // namespace

bool valid_copy_case(const std::string& name) { return find_case(name) != nullptr; }

int run_copy(const CopyOptions& opts) {
  std::string error;
  auto session = TsuSession::start(error, opts.common.pin_ranks);
  if (!session) {
    std::cerr << "tsu-bench copy: " << error << "\n";
    return 1;
  }
  const int status = session->measures() ? measure_all(*session, opts) : 0;
  tsu_barrier();
  return status;
}

}  // namespace bench
