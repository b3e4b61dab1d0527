// tsu-bench limits: the physical limits the tsunagi figures are compared with,
// measured without tsunagi: memcpy bandwidth, one cache line bounced between
// two cores (threads, then processes sharing a memfd mapping) and CPU atomic
// fetch-add alone and contended.
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <new>
#include <thread>

#include "../common/host.hpp"
#include "../common/report.hpp"
#include "../common/table.hpp"
#include "../common/threads.hpp"
#include "../common/timer.hpp"
#include "repeat.hpp"
#include "subcommands.hpp"

namespace bench {

namespace {

constexpr uint64_t kStop = ~uint64_t{0};

// Keeps the compiler from dropping or merging copies whose result is unused.
inline void clobber(const void* p) { asm volatile("" : : "r"(p) : "memory"); }

double seconds_between(uint64_t t0, uint64_t t1) {
  return TickClock::get().to_ns(static_cast<double>(t1 - t0)) * 1e-9;
}

// ---- memcpy ---------------------------------------------------------------

// Warm copies: the same source and destination every time, faulted in first,
// exactly as `tsu-bench bw` reuses its buffers; sizes beyond the caches are
// memory-bound either way.  Private anonymous pages, 4 KiB like the library's
// memfd segments (THP is not requested).
std::optional<double> memcpy_gbps(std::byte* dst, const std::byte* src, std::size_t size,
                                  double ms) {
  // Check the clock about every 64 KiB copied, at least every copy.
  const std::size_t batch = std::max<std::size_t>(1, (64u << 10) / size);
  uint64_t copies = 0;
  const uint64_t t0 = ticks();
  const Deadline deadline(ms);
  do {
    for (std::size_t i = 0; i < batch; ++i) {
      std::memcpy(dst, src, size);
      clobber(dst);
    }
    copies += batch;
  } while (!deadline.passed());
  const uint64_t t1 = ticks();
  return static_cast<double>(copies) * static_cast<double>(size) / seconds_between(t0, t1) / 1e9;
}

// ---- one cache line between two cores ---------------------------------------

// The two sides of a ping-pong on `line`: ping writes odd values and waits for
// the next even one; pong answers.  Ping ends it by writing kStop.
double ping(std::atomic<uint64_t>& line, double ms) {
  uint64_t rounds = 0;
  const uint64_t t0 = ticks();
  const Deadline deadline(ms);
  do {
    for (int i = 0; i < 64; ++i, ++rounds) {
      line.store(2 * rounds + 1, std::memory_order_release);
      while (line.load(std::memory_order_acquire) != 2 * rounds + 2) cpu_relax();
    }
  } while (!deadline.passed());
  const uint64_t t1 = ticks();
  line.store(kStop, std::memory_order_release);
  return TickClock::get().to_ns(static_cast<double>(t1 - t0)) / static_cast<double>(rounds);
}

void pong(std::atomic<uint64_t>& line) {
  for (uint64_t round = 0;; ++round) {
    uint64_t v;
    while ((v = line.load(std::memory_order_acquire)) != 2 * round + 1) {
      if (v == kStop) return;
      cpu_relax();
    }
    line.store(2 * round + 2, std::memory_order_release);
  }
}

struct alignas(64) SharedLine {
  std::atomic<uint64_t> value{0};
  alignas(64) std::atomic<uint64_t> ready{0};  // own line: the handshake must not warm `value`
};

double ping_pong_threads(double ms) {
  SharedLine line;
  double rtt = 0;
  std::thread ponger([&] {
    pin_current_thread(1);
    line.ready.store(1, std::memory_order_release);
    pong(line.value);
  });
  std::thread pinger([&] {
    pin_current_thread(0);
    while (!line.ready.load(std::memory_order_acquire)) cpu_relax();
    rtt = ping(line.value, ms);
  });
  pinger.join();
  ponger.join();
  return rtt;
}

// The same between two processes: a memfd mapping shared across fork().
std::optional<double> ping_pong_processes(double ms) {
  const int fd = memfd_create("tsu-bench-line", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, 4096) != 0) return std::nullopt;
  void* mem = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (mem == MAP_FAILED) return std::nullopt;
  auto* line = new (mem) SharedLine();
  const pid_t child = fork();
  if (child == 0) {
    pin_current_thread(1);
    line->ready.store(1, std::memory_order_release);
    pong(line->value);
    _exit(0);
  }
  std::optional<double> rtt;
  if (child > 0) {
    // Pin a helper thread, not the main thread, so the caller's affinity is kept.
    std::thread pinger([&] {
      pin_current_thread(0);
      while (!line->ready.load(std::memory_order_acquire)) cpu_relax();
      rtt = ping(line->value, ms);
    });
    pinger.join();
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) rtt.reset();
  }
  munmap(mem, 4096);
  return rtt;
}

// ---- CPU atomic fetch-add ---------------------------------------------------

struct AtomicFigure {
  double ns_per_op = 0;  // mean over threads of (time / own operations)
  double total_mops = 0;
};

AtomicFigure fetch_add_on_one_line(int threads, double ms) {
  alignas(64) std::atomic<uint64_t> word{0};
  std::atomic<int> ready{0};
  std::vector<double> ns_per_op(static_cast<std::size_t>(threads));
  std::vector<uint64_t> ops(static_cast<std::size_t>(threads));
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      pin_current_thread(t);
      ready.fetch_add(1);
      while (ready.load() < threads) cpu_relax();
      uint64_t n = 0;
      const uint64_t t0 = ticks();
      const Deadline deadline(ms);
      do {
        for (int i = 0; i < 64; ++i) word.fetch_add(1, std::memory_order_relaxed);
        n += 64;
      } while (!deadline.passed());
      const uint64_t t1 = ticks();
      ops[static_cast<std::size_t>(t)] = n;
      ns_per_op[static_cast<std::size_t>(t)] =
          TickClock::get().to_ns(static_cast<double>(t1 - t0)) / static_cast<double>(n);
    });
  }
  for (auto& w : workers) w.join();
  AtomicFigure f;
  for (int t = 0; t < threads; ++t) {
    f.ns_per_op += ns_per_op[static_cast<std::size_t>(t)] / threads;
    f.total_mops += 1e3 / ns_per_op[static_cast<std::size_t>(t)];
  }
  return f;
}

Record limits_record(const std::string& metric, const std::string& op, std::size_t size,
                     int threads, const std::string& transport, const std::string& unit,
                     const std::vector<double>& values) {
  Record r;
  r.benchmark = "limits";
  r.metric = metric;
  r.op = op;
  r.size = size;
  r.threads = threads;
  r.mode = "none";
  r.transport = transport;
  r.unit = unit;
  r.summary = summarize(values);
  return r;
}

}  // namespace

int run_limits(const LimitsOptions& opts) {
  // Under tsurun only rank 0 measures: two copies would disturb each other.
  if (const char* rank = std::getenv("TSU_RANK"); rank && std::strcmp(rank, "0") != 0) return 0;

  const Reporter reporter(opts.common);
  bool ok = true;
  const auto& host = host_facts();
  std::printf("\n## limits: cpu=\"%s\" cpus=%d kernel=%s reps=%d duration=%.0f ms load(1m)=%s\n",
              host.cpu_model.c_str(), host.online_cpus, host.kernel.c_str(), opts.common.reps,
              opts.common.duration_ms, load_average().c_str());

  // memcpy bandwidth
  std::printf("\n### memcpy, warm (same buffers every copy), private 4 KiB pages\n\n");
  const std::size_t max_size = *std::max_element(opts.sizes.begin(), opts.sizes.end());
  void* mem = mmap(nullptr, 2 * max_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
  if (mem == MAP_FAILED) {
    std::cerr << "tsu-bench limits: cannot map " << 2 * max_size << " bytes\n";
    return 1;
  }
  auto* src = static_cast<std::byte*>(mem);
  std::byte* dst = src + max_size;
  std::memset(mem, 1, 2 * max_size);  // fault every page in before timing
  const TablePrinter copy_table({{"size", 8}, {"memcpy GB/s", 24}, {"copies M/s", 10}});
  copy_table.header();
  for (const std::size_t size : opts.sizes) {
    auto values = repeat_measurement(
        opts.common, [&](double ms) { return memcpy_gbps(dst, src, size, ms); });
    const Record r = limits_record("memcpy_bandwidth", "memcpy", size, 1, "private-memory",
                                   "GB/s", *values);
    copy_table.row({format_size(size), format_summary(r.summary),
                    format_value(r.summary.median * 1e3 / static_cast<double>(size))});
    ok = reporter.record(r) && ok;
  }
  munmap(mem, 2 * max_size);

  const std::vector<int> cpus = allowed_cpu_list();
  if (cpus.size() < 2) {
    std::printf("\nonly one CPU: the two-core measurements are skipped\n");
    return ok ? 0 : 1;
  }

  std::printf("\n### one 64-byte cache line, cores %d and %d\n\n", cpus[0], cpus[1]);
  const TablePrinter line_table({{"measurement", 34, false}, {"value", 24}, {"unit", 6, false}});
  line_table.header();
  {
    auto values = repeat_measurement(
        opts.common, [](double ms) -> std::optional<double> { return ping_pong_threads(ms); });
    const Record r = limits_record("line_round_trip", "ping-pong", 64, 2, "threads", "ns", *values);
    line_table.row({"round trip, 2 threads", format_summary(r.summary), "ns"});
    ok = reporter.record(r) && ok;
  }
  {
    auto values = repeat_measurement(opts.common, ping_pong_processes);
    if (!values) {
      std::cerr << "tsu-bench limits: the two-process ping-pong failed\n";
      return 1;
    }
    const Record r =
        limits_record("line_round_trip", "ping-pong", 64, 2, "processes", "ns", *values);
    line_table.row({"round trip, 2 processes (memfd)", format_summary(r.summary), "ns"});
    ok = reporter.record(r) && ok;
  }
  for (const int threads : {1, 2}) {
    std::vector<double> totals;
    auto values = repeat_measurement(opts.common, [&](double ms) -> std::optional<double> {
      const AtomicFigure f = fetch_add_on_one_line(threads, ms);
      totals.push_back(f.total_mops);
      return f.ns_per_op;
    });
    totals.erase(totals.begin());  // the warm-up's
    Record r = limits_record("atomic_fadd", "fadd", 8, threads, "threads", "ns", *values);
    const Summary total = summarize(totals);
    r.extra = {{"total_mops", total.median}};
    line_table.row({threads == 1 ? "fetch-add, 1 thread" : "fetch-add, 2 threads same line",
                    format_summary(r.summary), "ns/op"});
    line_table.row({threads == 1 ? "  = ops/s" : "  = ops/s, both threads",
                    format_value(total.median), "M/s"});
    ok = reporter.record(r) && ok;
  }
  return ok ? 0 : 1;
}

}  // namespace bench
