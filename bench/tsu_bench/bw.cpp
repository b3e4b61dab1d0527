// tsu-bench bw: put and get bandwidth by size, a window of requests in flight.
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "../common/host.hpp"
#include "../common/report.hpp"
#include "../common/table.hpp"
#include "repeat.hpp"
#include "rma_kernels.hpp"
#include "session.hpp"
#include "subcommands.hpp"

namespace bench {

namespace {

int measure_all(const TsuSession& session, const BwOptions& opts) {
  const std::size_t max_size = *std::max_element(opts.sizes.begin(), opts.sizes.end());
  const int max_threads = *std::max_element(opts.threads.begin(), opts.threads.end());
  RmaPoint base;
  base.region_bytes = region_bytes_for(max_size);
  base.target_rank = session.target_rank();
  base.window = opts.window;
  std::string error;
  if (!session.fits(max_threads, base.region_bytes, error)) {
    std::cerr << "tsu-bench bw: " << error << "\n";
    return 1;
  }
  std::printf("\n## bw: mode=%s transport=%s target=rank %u pinned=%s reps=%d duration=%.0f ms "
              "window=%d load(1m)=%s (GB/s = 1e9 B/s; every request reuses the same buffers)\n\n",
              session.mode().c_str(), session.transport().c_str(), session.target_rank(),
              opts.common.pin ? "yes" : "no", opts.common.reps, opts.common.duration_ms,
              opts.window, load_average().c_str());
  const TablePrinter table({{"op", 4, false},
                            {"size", 8},
                            {"thr", 3},
                            {"bandwidth GB/s", 24},
                            {"ops/s", 10}});
  table.header();
  const Reporter reporter(opts.common);
  WorkerPool pool(max_threads, opts.common.pin);
  for (const std::string& op_name : opts.ops) {
    for (const std::size_t size : opts.sizes) {
      for (const int threads : opts.threads) {
        RmaPoint p = base;
        p.op = *rma_op_from_name(op_name);
        p.size = size;
        p.threads = threads;
        const bool engine_thread = session.mode() == "engine" && !session.manual_progress();
        const Waiter waiter(threads + (engine_thread ? 1 : 0) > host_facts().online_cpus,
                            session.manual_progress());
        RmaKernels kernels(pool, waiter);
        auto gbps = repeat_measurement(opts.common, [&](double ms) -> std::optional<double> {
          p.duration_ms = ms;
          const auto f = kernels.rate(p);
          if (!f) return std::nullopt;
          return f->per_second * static_cast<double>(size) / 1e9;
        });
        if (!gbps) {
          std::cerr << "tsu-bench bw: " << op_name << " " << size << " B: " << kernels.error()
                    << "\n";
          return 1;
        }
        Record rec;
        rec.benchmark = "bw";
        rec.metric = "bandwidth";
        rec.op = op_name;
        rec.size = size;
        rec.threads = threads;
        rec.mode = session.mode();
        rec.transport = session.transport();
        rec.unit = "GB/s";
        rec.summary = summarize(*gbps);
        rec.extra = {{"window", static_cast<double>(opts.window)}};
        const double rate = rec.summary.median * 1e9 / static_cast<double>(size);
        table.row({op_name, format_size(size), std::to_string(threads),
                   format_summary(rec.summary), format_value(rate)});
        if (!reporter.record(rec)) return 1;
      }
    }
  }
  return 0;
}

}  // namespace

int run_bw(const BwOptions& opts) {
  std::string error;
  auto session = TsuSession::start(error, opts.common.pin_ranks);
  if (!session) {
    std::cerr << "tsu-bench bw: " << error << "\n";
    return 1;
  }
  const int status = session->measures() ? measure_all(*session, opts) : 0;
  tsu_barrier();
  return status;
}

}  // namespace bench
