// tsu-bench atomic: seed 002 section 5 -- 8-byte fetch-add and compare-and-swap,
// latency (one in flight) and rate (a window in flight), alone and with
// interference: a concurrent stream of 8-byte puts, gets or fetch-adds to the
// same target rank, issued by one more thread of the measuring rank with its own
// window (its rate is recorded too).  Target: the caller's own memory ("own",
// through tsunagi like any address) or a node peer's ("peer", rank 1).
// Tables in the layout of the paper's tables 2 (rate) and 3 (latency).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>

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

constexpr std::size_t kRegion = 4096;  // one page per thread: no shared lines

// The measured operation: fetch-add 1, or CAS(seq -> seq + 1) on the thread's
// own word (it succeeds while nothing else touches the word; success or not,
// the CPU does the same locked cmpxchg).
struct AtomicIssue {
  bool cas;
  tsu_status_t operator()(OpState& s, uint64_t seq, tsu_cb_t cb) const {
    if (cas) return tsu_try_cas_u64(s.dst, seq, seq + 1, s.result_slot(seq), cb);
    return tsu_try_fetch_add_u64(s.dst, 1, s.result_slot(seq), cb);
  }
};

// The interfering stream: 8-byte put, get or fetch-add on its own page of the
// same target rank.
struct InterferenceIssue {
  std::string kind;
  tsu_status_t operator()(OpState& s, uint64_t seq, tsu_cb_t cb) const {
    if (kind == "put") return tsu_try_put(s.dst, s.local, 8, cb);
    if (kind == "get") return tsu_try_get(s.local, s.dst, 8, cb);
    return tsu_try_fetch_add_u64(s.dst, 1, s.result_slot(seq), cb);
  }
};

struct Figures {
  double value = 0;              // latency ns or rate Mops/s
  double interference_mops = 0;  // the stream's rate during the repetition
};

class AtomicPoint {
 public:
  AtomicPoint(WorkerPool& pool, const Waiter& waiter, uint32_t target, bool cas,
              std::string interference, int threads, int window)
      : pool_(pool), waiter_(waiter), target_(target), issue_{cas},
        background_{std::move(interference)}, threads_(threads), window_(window) {}

  // One repetition; `latency` picks the figure.  nullopt on a failed request.
  std::optional<Figures> measure(bool latency, double ms) {
    std::vector<std::unique_ptr<OpState>> owned;
    std::vector<OpState*> states;
    const bool with_stream = background_.kind != "none";
    const int workers = threads_ + (with_stream ? 1 : 0);
    for (int t = 0; t < workers; ++t) {
      auto s = std::make_unique<OpState>();
      const uint64_t off = static_cast<uint64_t>(t) * kRegion;
      s->dst = tsu_gaddr(target_, TSU_SEG_MAIN, off);
      s->local = tsu_laddr(TSU_SEG_MAIN, off + 64);  // never the same bytes as dst
      states.push_back(s.get());
      owned.push_back(std::move(s));
    }
    std::atomic<bool> stop{false};
    std::atomic<int> running{threads_};
    pool_.run(workers, [&](int t) {
      OpState& s = *states[static_cast<std::size_t>(t)];
      if (t == threads_) {  // the interfering stream, until the measured threads end
        op_window_loop(s, background_, waiter_, static_cast<uint64_t>(window_), -1, &stop);
        return;
      }
      if (latency) op_latency_loop(s, issue_, waiter_, ms);
      else op_window_loop(s, issue_, waiter_, static_cast<uint64_t>(window_), ms, nullptr);
      if (running.fetch_sub(1) == 1) stop.store(true);
    });
    error_ = op_first_failure(states);
    if (!error_.empty()) return std::nullopt;
    Figures f;
    std::vector<OpState*> measured(states.begin(), states.begin() + threads_);
    f.value = latency ? op_mean_latency_ns(measured) : op_rate_per_second(measured) / 1e6;
    if (with_stream) f.interference_mops = op_rate_per_second({states.back()}) / 1e6;
    return f;
  }

  const std::string& error() const { return error_; }

 private:
  WorkerPool& pool_;
  const Waiter& waiter_;
  uint32_t target_;
  AtomicIssue issue_;
  InterferenceIssue background_;
  int threads_;
  int window_;
  std::string error_;
};

int measure_all(const TsuSession& session, const AtomicOptions& opts) {
  const int max_threads = *std::max_element(opts.threads.begin(), opts.threads.end());
  std::string error;
  if (!session.fits(max_threads + 1, kRegion, error)) {
    std::cerr << "tsu-bench atomic: " << error << "\n";
    return 1;
  }
  const TickClock& clock = TickClock::get();
  std::printf("\n## atomic: mode=%s ranks=%u pinned=%s reps=%d duration=%.0f ms window=%d "
              "timer-cost=%.1f ns (subtracted) load(1m)=%s (8-byte words; interference = one "
              "more thread of rank 0 streaming 8-byte ops, window %d, to the same target rank)\n",
              session.mode().c_str(), session.size(), opts.common.pin ? "yes" : "no",
              opts.common.reps, opts.common.duration_ms, opts.window, clock.read_cost_ns(),
              load_average().c_str(), opts.window);
  const Reporter reporter(opts.common);
  WorkerPool pool(max_threads + 1, opts.common.pin);
  for (const std::string& target_name : opts.targets) {
    const bool own = target_name == "own";
    if (!own && session.size() < 2) {
      std::fprintf(stderr, "tsu-bench atomic: skipping target 'peer': the job has 1 rank\n");
      continue;
    }
    const uint32_t target = own ? session.rank() : session.target_rank();
    const std::string transport = own ? "self" : session.transport();
    for (const int threads : opts.threads) {
      // key: op, interference -> [latency, rate] summaries
      std::map<std::pair<std::string, std::string>, std::pair<Summary, Summary>> cells;
      for (const std::string& op : opts.ops) {
        for (const std::string& interference : opts.interference) {
          const bool engine_thread = session.mode() == "engine" && !session.manual_progress();
          const int runnable =
              threads + (interference != "none" ? 1 : 0) + (engine_thread ? 1 : 0);
          const Waiter waiter(runnable > host_facts().online_cpus, session.manual_progress());
          AtomicPoint point(pool, waiter, target, op == "cas", interference, threads,
                            opts.window);
          Summary sums[2];
          for (const bool latency : {true, false}) {
            std::vector<double> stream;
            auto values = repeat_measurement(opts.common, [&](double ms) -> std::optional<double> {
              const auto f = point.measure(latency, ms);
              if (!f) return std::nullopt;
              stream.push_back(f->interference_mops);
              return f->value;
            });
            if (!values) {
              std::cerr << "tsu-bench atomic: " << op << " on " << target_name << " with "
                        << interference << ": " << point.error() << "\n";
              return 1;
            }
            stream.erase(stream.begin());  // the warm-up's
            Record rec;
            rec.benchmark = "atomic";
            rec.op = op;
            rec.size = 8;
            rec.threads = threads;
            rec.mode = session.mode();
            rec.transport = transport;
            rec.labels = {{"target", target_name}, {"interference", interference}};
            rec.metric = latency ? "latency" : "rate";
            rec.unit = latency ? "ns" : "Mops/s";
            rec.summary = summarize(*values);
            rec.extra = {{"window", static_cast<double>(latency ? 1 : opts.window)},
                         {"wait_yields", waiter.yields() ? 1.0 : 0.0}};
            if (interference != "none")
              rec.extra.emplace_back("interference_mops", summarize(stream).median);
            if (latency) rec.extra.emplace_back("timer_cost_ns", clock.read_cost_ns());
            else rec.extra.emplace_back("mb_per_s", rec.summary.median * 8);
            if (!reporter.record(rec)) return 1;
            sums[latency ? 0 : 1] = rec.summary;
          }
          cells[{op, interference}] = {sums[0], sums[1]};
        }
      }
      // Tables 2 and 3 of seed 002: one row per operation, one column per interference.
      for (const bool latency : {false, true}) {
        std::printf("\n### atomic %s, target=%s (%s), threads=%d\n\n",
                    latency ? "latency ns (table 3 layout)" : "rate Mops/s (table 2 layout)",
                    target_name.c_str(), transport.c_str(), threads);
        std::vector<TablePrinter::Column> cols{{"op", 4, false}};
        for (const std::string& i : opts.interference)
          cols.push_back({i == "none" ? "alone" : "with " + i, 24});
        const TablePrinter table(cols);
        table.header();
        for (const std::string& op : opts.ops) {
          std::vector<std::string> row{op};
          for (const std::string& i : opts.interference) {
            const auto& c = cells[{op, i}];
            row.push_back(format_summary(latency ? c.first : c.second));
          }
          table.row(row);
        }
      }
    }
  }
  return 0;
}

}  // namespace

int run_atomic(const AtomicOptions& opts) {
  std::string error;
  auto session = TsuSession::start(error, opts.common.pin_ranks);
  if (!session) {
    std::cerr << "tsu-bench atomic: " << error << "\n";
    return 1;
  }
  const int status = session->measures() ? measure_all(*session, opts) : 0;
  tsu_barrier();
  return status;
}

}  // namespace bench
