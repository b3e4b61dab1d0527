// tsu-bench rma: latency, overhead and message rate of get, put and fetch-add
// (seed 000, listings 6/7) from rank 0 to rank 1, for each thread count.
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "../common/host.hpp"
#include "../common/report.hpp"
#include "../common/table.hpp"
#include "../common/timer.hpp"
#include "repeat.hpp"
#include "rma_kernels.hpp"
#include "session.hpp"
#include "subcommands.hpp"

namespace bench {

namespace {

// More runnable threads than CPUs (workers + the progress thread in engine
// mode): waiting threads must yield so the progress thread gets a core.
Waiter make_waiter(const TsuSession& session, int threads) {
  const bool engine_thread = session.mode() == "engine" && !session.manual_progress();
  const bool oversubscribed = threads + (engine_thread ? 1 : 0) > host_facts().online_cpus;
  return Waiter(oversubscribed, session.manual_progress());
}

struct PointResult {
  Summary latency, overhead, eagain, rate, rate_quiet, rate_nbi;
  bool yields = false;
};

std::optional<PointResult> measure_point(RmaKernels& kernels, const RmaPoint& base,
                                         const RmaOptions& opts, std::string& error) {
  PointResult out;
  RmaPoint p = base;
  auto lat = repeat_measurement(opts.common, [&](double ms) {
    p.duration_ms = ms;
    return kernels.latency_ns(p);
  });
  if (!lat) return error = kernels.error(), std::nullopt;
  out.latency = summarize(*lat);

  std::vector<double> eagain;
  p.window = opts.overhead_window;
  auto ovh = repeat_measurement(opts.common, [&](double ms) -> std::optional<double> {
    p.duration_ms = ms;
    const auto f = kernels.overhead(p);
    if (!f) return std::nullopt;
    eagain.push_back(f->eagain_fraction);
    return f->mean_ns;
  });
  if (!ovh) return error = kernels.error(), std::nullopt;
  out.overhead = summarize(*ovh);
  eagain.erase(eagain.begin());  // the warm-up's
  out.eagain = summarize(eagain);

  p.window = opts.window;
  auto rate = repeat_measurement(opts.common, [&](double ms) -> std::optional<double> {
    p.duration_ms = ms;
    const auto f = kernels.rate(p);
    if (!f) return std::nullopt;
    return f->per_second / 1e6;
  });
  if (!rate) return error = kernels.error(), std::nullopt;
  out.rate = summarize(*rate);
  if (opts.quiet_rate) {
    p.quiet_completion = true;
    auto quiet = repeat_measurement(opts.common, [&](double ms) -> std::optional<double> {
      p.duration_ms = ms;
      const auto f = kernels.rate(p);
      if (!f) return std::nullopt;
      return f->per_second / 1e6;
    });
    if (!quiet) return error = kernels.error(), std::nullopt;
    out.rate_quiet = summarize(*quiet);
  }
  if (opts.nbi_rate) {
    p.quiet_completion = true;
    p.implicit = true;
    auto nbi = repeat_measurement(opts.common, [&](double ms) -> std::optional<double> {
      p.duration_ms = ms;
      const auto f = kernels.rate(p);
      if (!f) return std::nullopt;
      return f->per_second / 1e6;
    });
    if (!nbi) return error = kernels.error(), std::nullopt;
    out.rate_nbi = summarize(*nbi);
  }
  return out;
}

int measure_all(const TsuSession& session, const RmaOptions& opts) {
  const std::size_t max_size = *std::max_element(opts.sizes.begin(), opts.sizes.end());
  const int max_threads = *std::max_element(opts.threads.begin(), opts.threads.end());
  RmaPoint base;
  base.region_bytes = region_bytes_for(max_size);
  base.target_rank = session.target_rank();
  std::string error;
  if (!session.fits(max_threads, base.region_bytes, error)) {
    std::cerr << "tsu-bench rma: " << error << "\n";
    return 1;
  }
  const TickClock& clock = TickClock::get();
  std::printf("\n## rma: mode=%s transport=%s ranks=%u target=rank %u pinned=%s reps=%d "
              "duration=%.0f ms window=%d overhead-window=%d timer-cost=%.1f ns (subtracted) "
              "load(1m)=%s\n\n",
              session.mode().c_str(), session.transport().c_str(), session.size(),
              session.target_rank(), opts.common.pin ? "yes" : "no", opts.common.reps,
              opts.common.duration_ms, opts.window, opts.overhead_window, clock.read_cost_ns(),
              load_average().c_str());
  std::vector<TablePrinter::Column> columns{{"op", 4, false},
                                            {"size", 8},
                                            {"thr", 3},
                                            {"wait", 5, false},
                                            {"latency ns", 24},
                                            {"overhead ns", 24},
                                            {"EAGAIN %", 8},
                                            {"rate Mmsg/s", 24}};
  if (opts.quiet_rate) columns.push_back({"rate, no cb + quiet", 24});
  if (opts.nbi_rate) columns.push_back({"rate, _nbi + quiet", 24});
  const TablePrinter table(columns);
  table.header();

  const Reporter reporter(opts.common);
  WorkerPool pool(max_threads, opts.common.pin);
  for (const std::string& op_name : opts.ops) {
    const RmaOp op = *rma_op_from_name(op_name);
    for (const std::size_t size : opts.sizes) {
      // A fetch-add is one 8-byte word: only the 8-byte point exists.
      if (op == RmaOp::kFetchAdd && size != 8) continue;
      for (const int threads : opts.threads) {
        RmaPoint p = base;
        p.op = op;
        p.size = size;
        p.threads = threads;
        const Waiter waiter = make_waiter(session, threads);
        RmaKernels kernels(pool, waiter);
        const auto r = measure_point(kernels, p, opts, error);
        if (!r) {
          std::cerr << "tsu-bench rma: " << op_name << " " << size << " B, " << threads
                    << " thread(s): " << error << "\n";
          return 1;
        }
        std::vector<std::string> cells{op_name, format_size(size), std::to_string(threads),
                                       waiter.yields() ? "yield" : "spin",
                                       format_summary(r->latency), format_summary(r->overhead),
                                       format_value(r->eagain.median * 100),
                                       format_summary(r->rate)};
        if (opts.quiet_rate) cells.push_back(format_summary(r->rate_quiet));
        if (opts.nbi_rate) cells.push_back(format_summary(r->rate_nbi));
        table.row(cells);
        Record rec;
        rec.benchmark = "rma";
        rec.op = op_name;
        rec.size = size;
        rec.threads = threads;
        rec.mode = session.mode();
        rec.transport = session.transport();
        const double yields = waiter.yields() ? 1 : 0;
        rec.metric = "latency";
        rec.unit = "ns";
        rec.summary = r->latency;
        rec.extra = {{"timer_cost_ns", clock.read_cost_ns()}, {"wait_yields", yields}};
        bool ok = reporter.record(rec);
        rec.metric = "overhead";
        rec.summary = r->overhead;
        rec.extra = {{"eagain_fraction", r->eagain.median},
                     {"eagain_fraction_max", r->eagain.max},
                     {"window", static_cast<double>(opts.overhead_window)},
                     {"timer_cost_ns", clock.read_cost_ns()},
                     {"wait_yields", yields}};
        ok = reporter.record(rec) && ok;
        rec.metric = "rate";
        rec.unit = "Mmsg/s";
        rec.summary = r->rate;
        rec.extra = {{"window", static_cast<double>(opts.window)}, {"wait_yields", yields}};
        ok = reporter.record(rec) && ok;
        if (opts.quiet_rate) {
          rec.metric = "rate_quiet";
          rec.summary = r->rate_quiet;
          ok = reporter.record(rec) && ok;
        }
        if (opts.nbi_rate) {
          rec.metric = "rate_nbi";
          rec.summary = r->rate_nbi;
          ok = reporter.record(rec) && ok;
        }
        if (!ok) return 1;
      }
    }
  }
  return 0;
}

}  // namespace

int run_rma(const RmaOptions& opts) {
  std::string error;
  auto session = TsuSession::start(error, opts.common.pin_ranks);
  if (!session) {
    std::cerr << "tsu-bench rma: " << error << "\n";
    return 1;
  }
  // Rank 0 measures; the others wait in the barrier (asleep in the bootstrap
  // call) so they take no CPU time from the measurement.
  const int status = session->measures() ? measure_all(*session, opts) : 0;
  tsu_barrier();
  return status;
}

}  // namespace bench
