// tsu-bench: tsunagi's benchmarks (seed 000's latency, overhead and message
// rate; bandwidth; the physical limits they are judged against; messaging:
// pingpong, active messages, collectives).  rma, bw and the messaging ones run
// under tsurun (`tsurun -n 2 tsu-bench rma`); TSU_BYPASS=1/0 picks the
// intra-node bypass or the progress engine.  bench/run-all.sh runs everything.
#include <CLI/CLI.hpp>

#include <iostream>

#include "../common/options.hpp"
#include "subcommands.hpp"

using namespace bench;

namespace {

constexpr int kQuickReps = 1;
constexpr double kQuickDurationMs = 2;
const char* const kBandwidthSizes = "8-64M:4";   // 8 B, 32 B, ..., 32 MiB, 64 MiB
const char* const kQuickBandwidthSizes = "8,64K,1M";
const char* const kCopySizes = "4-4M";                // seed 001: 4 B .. 4 MiB, powers of 2
const char* const kQuickCopySizes = "4,4K,1M";

// Options every measuring subcommand has; `quick` defaults are applied after
// parsing to whatever the user did not set.
struct CommonFlags {
  CLI::Option* reps = nullptr;
  CLI::Option* duration = nullptr;
};

CommonFlags add_common(CLI::App& cmd, CommonOptions& o) {
  CommonFlags f;
  f.reps = cmd.add_option("--reps", o.reps, "Repetitions per point (median/min/max)")
               ->check(CLI::Range(1, 1000))
               ->capture_default_str();
  f.duration = cmd.add_option("--duration-ms", o.duration_ms, "Measuring time of one repetition")
                   ->check(CLI::Range(0.1, 60000.0))
                   ->capture_default_str();
  cmd.add_flag("--quick", o.quick, "Smoke test: 1 repetition of 2 ms, few sizes");
  cmd.add_flag("--pin", o.pin, "Pin worker threads to CPUs round-robin");
  cmd.add_flag("--pin-ranks", o.pin_ranks,
               "Pin rank r (main and progress thread) to CPU r mod #CPUs (TSU_RANK)");
  cmd.add_option("--json", o.json_path, "Append one JSON line per result to FILE");
  return f;
}

void apply_quick(const CommonFlags& f, CommonOptions& o) {
  if (!o.quick) return;
  if (!f.reps->count()) o.reps = kQuickReps;
  if (!f.duration->count()) o.duration_ms = kQuickDurationMs;
}

// Parses a list option with `parse`, failing with CLI11's usual message.
template <typename T, typename Parse>
void parse_list(const std::string& text, const char* name, T& out, Parse parse) {
  auto v = parse(text);
  if (!v) throw CLI::ValidationError(name, "cannot parse '" + text + "'");
  out = *v;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tsu-bench: tsunagi benchmarks (run rma and bw under tsurun -n 2)"};
  app.require_subcommand(1);

  RmaOptions rma;
  std::string rma_ops = "get,put,fadd", rma_threads = "1,2,4", rma_sizes = "8";
  CLI::App* rma_cmd = app.add_subcommand(
      "rma", "Latency, overhead and message rate of get/put/fetch-add (rank 0 -> rank 1)");
  const CommonFlags rma_flags = add_common(*rma_cmd, rma.common);
  rma_cmd->add_option("--ops", rma_ops, "Operations: get, put, fadd")->capture_default_str();
  rma_cmd->add_option("--threads", rma_threads, "Thread counts")->capture_default_str();
  rma_cmd->add_flag("--quiet-rate", rma.quiet_rate,
                    "Also measure the rate without callbacks, tsu_quiet() per window (metric "
                    "rate_quiet)");
  rma_cmd->add_flag("--nbi-rate", rma.nbi_rate,
                    "Also measure the rate of the implicit-completion calls (tsu_try_put_nbi, "
                    "..., tsu_quiet() per window; metric rate_nbi): compare with MPI-3 RMA's "
                    "window + MPI_Win_flush");
  int rma_max_threads = 0;
  rma_cmd->add_option("--max-threads", rma_max_threads,
                      "Thread counts 1,2,4,..,N (replaces --threads)")
      ->check(CLI::Range(1, 1024));
  rma_cmd->add_option("--sizes", rma_sizes, "Sizes: 8 | 1-4M | 8,64,1K (fadd: 8 only)")
      ->capture_default_str();
  rma_cmd->add_option("--window", rma.window, "Outstanding requests per thread (rate)")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  rma_cmd->add_option("--overhead-window", rma.overhead_window,
                      "Outstanding requests per thread (overhead)")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();

  BwOptions bw;
  std::string bw_ops = "put,get", bw_threads = "1", bw_sizes;
  CLI::App* bw_cmd = app.add_subcommand("bw", "Put and get bandwidth by size");
  const CommonFlags bw_flags = add_common(*bw_cmd, bw.common);
  bw_cmd->add_option("--ops", bw_ops, "Operations: put, get")->capture_default_str();
  bw_cmd->add_option("--threads", bw_threads, "Thread counts")->capture_default_str();
  bw_cmd->add_option("--sizes", bw_sizes, std::string("Sizes (default ") + kBandwidthSizes + ")");
  bw_cmd->add_option("--window", bw.window, "Outstanding requests per thread")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();

  LimitsOptions limits;
  std::string limits_sizes;
  CLI::App* limits_cmd = app.add_subcommand(
      "limits", "Physical limits: memcpy, cache-line round trip, CPU atomics (no tsunagi)");
  const CommonFlags limits_flags = add_common(*limits_cmd, limits.common);
  limits_cmd->add_option("--sizes", limits_sizes,
                         std::string("memcpy sizes (default ") + kBandwidthSizes + ")");

  CopyOptions copy;
  std::string copy_cases = "r2r,r2l,l2r,l2l", copy_threads = "1", copy_sizes;
  CLI::App* copy_cmd = app.add_subcommand(
      "copy", "Copy latency/bandwidth, rank 0 issuing: remote-to-remote (third party), "
              "remote-to-local, local-to-remote, local-to-local (run under tsurun -n 3)");
  const CommonFlags copy_flags = add_common(*copy_cmd, copy.common);
  copy_cmd->add_option("--cases", copy_cases,
                       "Cases: r2r|remote-to-remote, r2l, l2r, l2l")->capture_default_str();
  copy_cmd->add_option("--threads", copy_threads, "Thread counts")->capture_default_str();
  copy_cmd->add_option("--sizes", copy_sizes, std::string("Sizes (default ") + kCopySizes + ")");

  ChainOptions chain;
  std::string chain_sizes = "8,4K,64K";
  CLI::App* chain_cmd = app.add_subcommand(
      "chain", "Ordered requests (seed 001): a chain of third-party copies issued at once with "
               "tsu_try_copy_ordered vs the issuer waiting per link (tsurun -n 3)");
  const CommonFlags chain_flags = add_common(*chain_cmd, chain.common);
  chain_cmd->add_option("--links", chain.links, "Copies per chain")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  chain_cmd->add_option("--chains", chain.iters, "Chains measured per size")
      ->check(CLI::Range(10, 10000000))
      ->capture_default_str();
  chain_cmd->add_option("--sizes", chain_sizes, "Block sizes")->capture_default_str();

  VectorOptions vec;
  std::string vec_ops = "put,get", vec_sizes = "8,64,512,4K";
  CLI::App* vec_cmd = app.add_subcommand(
      "vector", "Vector put/get (one request) vs one contiguous request per piece, rank 0 -> 1");
  const CommonFlags vec_flags = add_common(*vec_cmd, vec.common);
  vec_cmd->add_option("--ops", vec_ops, "Operations: put, get")->capture_default_str();
  vec_cmd->add_option("--sizes", vec_sizes, "Piece sizes")->capture_default_str();
  vec_cmd->add_option("--pieces", vec.pieces, "Pieces per transfer")
      ->check(CLI::Range(1, 1 << 16))
      ->capture_default_str();
  vec_cmd->add_option("--stride", vec.stride, "Distance between piece starts (B)")
      ->capture_default_str();
  vec_cmd->add_option("--transfers", vec.iters, "Transfers measured per point")
      ->check(CLI::Range(10, 10000000))
      ->capture_default_str();

  AtomicOptions atomic;
  std::string atomic_ops = "fadd,cas", atomic_interference = "none,put,get,atomic",
              atomic_targets = "own,peer", atomic_threads = "1";
  CLI::App* atomic_cmd = app.add_subcommand(
      "atomic", "8-byte fetch-add/CAS latency and rate, alone and with a concurrent stream of "
                "puts/gets/atomics, on own and on a node peer's memory");
  const CommonFlags atomic_flags = add_common(*atomic_cmd, atomic.common);
  atomic_cmd->add_option("--ops", atomic_ops, "Operations: fadd, cas")->capture_default_str();
  atomic_cmd->add_option("--interference", atomic_interference,
                         "Interfering streams: none, put, get, atomic")->capture_default_str();
  atomic_cmd->add_option("--targets", atomic_targets, "Targets: own, peer")->capture_default_str();
  atomic_cmd->add_option("--threads", atomic_threads, "Measuring thread counts")
      ->capture_default_str();
  atomic_cmd->add_option("--window", atomic.window,
                         "Outstanding requests per thread (rate, interfering stream)")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();

  // Messaging (msg.cpp): one option set, each subcommand takes what it uses.
  MsgOptions msg;
  auto add_msg = [&](const char* name, const char* help, bool sizes, bool threads) {
    CLI::App* cmd = app.add_subcommand(name, help);
    if (sizes) {
      cmd->add_option("--min", msg.min, "Smallest size in bytes")->capture_default_str();
      cmd->add_option("--max", msg.max, "Largest size in bytes")->capture_default_str();
    }
    if (threads)
      cmd->add_option("--threads", msg.threads, "Threads (am: 1,2,..,T senders; ring: producers)")
          ->check(CLI::Range(1, 1024))
          ->capture_default_str();
    cmd->add_option("--cpus", msg.cpus, "CPUs of the ranks, e.g. 0,1 or 0,0 (one core)")
        ->delimiter(',');
    cmd->add_option("--iters", msg.iters, "Iterations per point (default: by size)");
    cmd->add_flag("--yield", msg.yield,
                  "TSU_YIELD=1: tsu_progress yields when idle (ranks sharing a CPU)");
    return cmd;
  };
  CLI::App* pingpong_cmd =
      add_msg("pingpong", "Tagged pingpong, ranks 0 and 1, half round trip by size", true, false);
  pingpong_cmd->add_flag("--prepost", msg.prepost,
                         "Post the next receive before sending (seed 004 fig. 7)");
  CLI::App* stream_cmd = add_msg(
      "stream", "Tagged message rate by size: a window of pre-posted receives, rank 0 -> 1", true,
      false);
  stream_cmd->add_option("--window", msg.window, "Receives posted per round")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  CLI::App* am_cmd =
      add_msg("am", "Active-message round trip and message rate, rank 0 -> rank 1", false, true);
  CLI::App* coll_cmd = add_msg(
      "coll", "Barrier, broadcast, allreduce and allgather latency by size", true, false);
  UltOptions ult;
  CLI::App* ult_cmd = app.add_subcommand(
      "ult", "User-level threads: switch, create+join, mutex (beside Boost.Fiber, pthreads, raw "
             "fcontext); remote create+join and spawn rate with 2 ranks (docs/benchmarks-ult.md)");
  ult_cmd->add_option("--reps", ult.reps, "Repetitions")->check(CLI::Range(1, 1000))->capture_default_str();
  ult_cmd->add_option("--iters", ult.iters, "Operations per repetition")
      ->check(CLI::Range(100L, 100000000L))
      ->capture_default_str();
  ult_cmd->add_option("--workers", ult.workers, "ULT workers per rank")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  ult_cmd->add_flag("--quick", ult.quick, "Smoke test: few operations");
  ult_cmd->add_flag("--remote-only", ult.remote_only,
                    "Only the rows across ranks (remote create+join, spawn rate; 2 ranks)");
  CLI::App* ring_cmd = add_msg(
      "ring", "Component: per-receiver vs per-pair message rings, in one process (no tsurun)",
      false, true);

  SummaryOptions summary;
  CLI::App* summary_cmd = app.add_subcommand(
      "summary", "tsunagi figures as ratios to the limits, from the JSON of one run");
  summary_cmd->add_option("input,--input", summary.input, "JSON lines file")->required();

  CLI11_PARSE(app, argc, argv);

  try {
    if (*rma_cmd) {
      apply_quick(rma_flags, rma.common);
      parse_list(rma_ops, "--ops", rma.ops,
                 [](const std::string& t) { return parse_word_list(t, {"get", "put", "fadd"}); });
      parse_list(rma_threads, "--threads", rma.threads, parse_int_list);
      if (rma_max_threads > 0) {
        rma.threads.clear();
        for (int t = 1; t < rma_max_threads; t *= 2) rma.threads.push_back(t);
        rma.threads.push_back(rma_max_threads);
      }
      parse_list(rma_sizes, "--sizes", rma.sizes, parse_size_list);
      return run_rma(rma);
    }
    if (*bw_cmd) {
      apply_quick(bw_flags, bw.common);
      if (bw_sizes.empty()) bw_sizes = bw.common.quick ? kQuickBandwidthSizes : kBandwidthSizes;
      parse_list(bw_ops, "--ops", bw.ops,
                 [](const std::string& t) { return parse_word_list(t, {"get", "put"}); });
      parse_list(bw_threads, "--threads", bw.threads, parse_int_list);
      parse_list(bw_sizes, "--sizes", bw.sizes, parse_size_list);
      return run_bw(bw);
    }
    if (*limits_cmd) {
      apply_quick(limits_flags, limits.common);
      if (limits_sizes.empty())
        limits_sizes = limits.common.quick ? kQuickBandwidthSizes : kBandwidthSizes;
      parse_list(limits_sizes, "--sizes", limits.sizes, parse_size_list);
      return run_limits(limits);
    }
    if (*copy_cmd) {
      apply_quick(copy_flags, copy.common);
      if (copy_sizes.empty()) copy_sizes = copy.common.quick ? kQuickCopySizes : kCopySizes;
      parse_list(copy_cases, "--cases", copy.cases, [](const std::string& t) {
        return parse_word_list(t, {"r2r", "r2l", "l2r", "l2l", "remote-to-remote",
                                   "remote-to-local", "local-to-remote", "local-to-local"});
      });
      parse_list(copy_threads, "--threads", copy.threads, parse_int_list);
      parse_list(copy_sizes, "--sizes", copy.sizes, parse_size_list);
      return run_copy(copy);
    }
    if (*vec_cmd) {
      apply_quick(vec_flags, vec.common);
      if (vec.common.quick) vec.iters = std::min(vec.iters, 100);
      parse_list(vec_ops, "--ops", vec.ops,
                 [](const std::string& t) { return parse_word_list(t, {"put", "get"}); });
      parse_list(vec_sizes, "--sizes", vec.sizes, parse_size_list);
      return run_vector(vec);
    }
    if (*chain_cmd) {
      apply_quick(chain_flags, chain.common);
      if (chain.common.quick) chain.iters = std::min(chain.iters, 100);
      parse_list(chain_sizes, "--sizes", chain.sizes, parse_size_list);
      return run_chain(chain);
    }
    if (*atomic_cmd) {
      apply_quick(atomic_flags, atomic.common);
      parse_list(atomic_ops, "--ops", atomic.ops,
                 [](const std::string& t) { return parse_word_list(t, {"fadd", "cas"}); });
      parse_list(atomic_interference, "--interference", atomic.interference,
                 [](const std::string& t) {
                   return parse_word_list(t, {"none", "put", "get", "atomic"});
                 });
      parse_list(atomic_targets, "--targets", atomic.targets,
                 [](const std::string& t) { return parse_word_list(t, {"own", "peer"}); });
      parse_list(atomic_threads, "--threads", atomic.threads, parse_int_list);
      return run_atomic(atomic);
    }
    if (*ult_cmd) return run_ult(ult);
    if (*pingpong_cmd || *stream_cmd || *am_cmd || *coll_cmd || *ring_cmd) {
      if (*pingpong_cmd) return run_pingpong(msg);
      if (*stream_cmd) return run_stream(msg);
      if (*am_cmd) return run_am(msg);
      if (*coll_cmd) return run_coll(msg);
      return run_ring(msg);
    }
    return run_summary(summary);
  } catch (const CLI::Error& e) {
    return app.exit(e);
  }
}
