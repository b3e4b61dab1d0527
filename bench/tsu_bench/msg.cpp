// tsu-bench pingpong | am | coll | ring: messaging benchmarks.  Run on 2+
// ranks with tsurun; thresholds come from the TSU_* environment (see
// docs/benchmarks-messaging.md for the exact commands).
//
//   pingpong [--prepost] [--min B] [--max B] [--cpus a,b] [--yield]
//       tagged pingpong between ranks 0 and 1, half round trip in us.
//       --prepost: every rank posts its next receive before it sends (seed
//       004's modified osu_latency), so single-copy eager can hit.
//   stream [--window W] [--min B] [--max B] [--cpus a,b]
//       tagged message rate by size: rank 1 posts W receives (shared
//       segment), says so, rank 0 sends W messages back to back; repeated.
//       Shows what a full window costs each protocol (single-copy eager
//       closes the receiver's queue until its progress takes the record).
//   am [--threads T] [--cpus a,b]
//       AM round trip (short request -> reply) and message rate (short AMs
//       from T threads of rank 0 to rank 1) .
//   ring [--threads P]
//       component: one per-receiver ring with P producer threads vs P
//       per-pair rings polled round-robin (throughput, and the cost of a
//       poll pass over empty rings), in one process.
//   coll [--max B]
//       barrier, broadcast, allreduce (doubles, sum) and allgather latency vs size
//       (8 B, x8, up to --max; median of 5 repetitions of the slowest rank).
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "subcommands.hpp"
#include "transport/msg_ring.hpp"
#include "tsunagi/tsunagi.h"

using bench::MsgOptions;

namespace {

double now_us() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

const char* env_or(const char* var) {
  const char* v = std::getenv(var);
  return v ? v : "default";
}

void pin(const MsgOptions& o, uint32_t rank) {
  if (o.cpus.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(o.cpus[rank % o.cpus.size()], &set);
  sched_setaffinity(0, sizeof set, &set);
}

// Timed runs per size of the stream (after a warm-up); the median is reported.
constexpr int kStreamReps = 5;

int iters_for(const MsgOptions& o, size_t size) {
  if (o.iters) return o.iters;
  return size <= 4096 ? 4000 : size <= 65536 ? 1000 : 200;
}

// tsu_progress() yields the CPU when it finds nothing to do and TSU_YIELD is
// on (--yield sets it): yielding after a pass that did deliver would hand the
// CPU away once more per message when both ranks share a core.
void spin_until(const std::atomic<int>& flag, int value) {
  while (flag.load(std::memory_order_acquire) < value) tsu_progress();
}

void count_cb(tsu_status_t st, void* a) {
  if (st != TSU_OK && st != TSU_ERR_TRUNCATED) {
    std::fprintf(stderr, "request failed: %s\n", tsu_strerror(st));
    std::exit(1);
  }
  static_cast<std::atomic<int>*>(a)->fetch_add(1, std::memory_order_release);
}

void send_retry(uint32_t dst, uint64_t tag, const void* buf, size_t len, std::atomic<int>* done) {
  while (tsu_try_send(dst, tag, buf, len, tsu_cb(count_cb, done)) == TSU_EAGAIN) tsu_progress();
}

int pingpong(const MsgOptions& o) {
  uint32_t me, n;
  tsu_rank(&me);
  tsu_size(&n);
  if (n < 2) return std::fprintf(stderr, "pingpong needs 2 ranks\n"), 2;
  void* base;
  size_t seg;
  tsu_segment_info(TSU_SEG_MAIN, &base, &seg);
  // Both buffers in the main (shared) segment: single-copy eager can reach them.
  auto* sbuf = static_cast<unsigned char*>(base);
  auto* rbuf = static_cast<unsigned char*>(base) + (8u << 20);
  std::memset(sbuf, 1, o.max);
  if (me == 0) {
    std::printf("# pingpong %s (half round trip, us); TSU_EAGER_MAX=%s TSU_SCEAGER=%s "
                "TSU_SCEAGER_MIN=%s cpus=%s\n",
                o.prepost ? "pre-posted" : "plain", env_or("TSU_EAGER_MAX"), env_or("TSU_SCEAGER"),
                env_or("TSU_SCEAGER_MIN"),
                o.cpus.empty() ? "any" : (std::to_string(o.cpus[0]) + "," + std::to_string(o.cpus[o.cpus.size() > 1])).c_str());
    // mean and p99: of single round trips (halved), rank 0's clock, timed
    // in repetitions of their own after the median's (two clock reads per
    // round trip would be part of the median, which Open MPI's pingpong,
    // its peer, does not pay).
    std::printf("%10s %10s %10s %8s %8s %8s %8s %10s %10s\n", "bytes", "median", "best", "eager",
                "sceager", "rndv", "busy", "mean", "p99");
  }
  for (size_t size = o.min; size <= o.max; size = size ? size * 2 : 1) {
    if (me > 1) {
      tsu_barrier();
      continue;
    }
    // 5 repetitions of iters/5 round trips after a warm-up; the median
    // repetition is reported (the machine is shared: medians resist
    // another job's time slices), with the best one beside it.
    const int reps = 5, iters = std::max(iters_for(o, size) / reps, 20), warm = iters / 5 + 10;
    const uint32_t peer = me ^ 1u;
    tsu_msg_counters_t c0;
    tsu_msg_counters(&c0);
    tsu_barrier();
    std::atomic<int> rdone{0}, sdone{0};
    int posted = 0, sends = 0;
    auto post = [&] {
      while (tsu_try_recv(peer, 1, TSU_TAG_EXACT, rbuf, size, nullptr, tsu_cb(count_cb, &rdone),
                          nullptr) == TSU_EAGAIN)
        tsu_progress();
      ++posted;
    };
    std::vector<double> rep_lat, one_lat;
    // warm-up, the timed repetitions, then as many single round trips.
    const int timed_end = warm + reps * iters, total = timed_end + reps * iters;
    if (me == 0) one_lat.reserve(static_cast<size_t>(reps * iters));
    if (o.prepost) post();
    double t0 = now_us();
    for (int i = 0; i < total; ++i) {
      if (i >= warm && i < timed_end && (i - warm) % iters == 0) t0 = now_us();
      if (me == 0) {
        const bool single = i >= timed_end;
        const double ti = single ? now_us() : 0;
        send_retry(peer, 1, sbuf, size, &sdone);
        ++sends;
        if (!o.prepost) post();
        spin_until(rdone, posted);
        if (single) one_lat.push_back((now_us() - ti) / 2);
        if (o.prepost && i + 1 < total) post();
      } else {
        if (!o.prepost) post();
        spin_until(rdone, posted);
        if (o.prepost && i + 1 < total) post();
        send_retry(peer, 1, sbuf, size, &sdone);
        ++sends;
      }
      if (i >= warm && i < timed_end && (i - warm) % iters == iters - 1)
        rep_lat.push_back((now_us() - t0) / iters / 2);
    }
    spin_until(sdone, sends);
    std::sort(rep_lat.begin(), rep_lat.end());
    const double best = rep_lat.front();
    const double lat = rep_lat[rep_lat.size() / 2];
    tsu_msg_counters_t c1;
    tsu_msg_counters(&c1);
    if (me == 0) {
      std::sort(one_lat.begin(), one_lat.end());
      double sum = 0;
      for (double v : one_lat) sum += v;
      const double mean = one_lat.empty() ? 0 : sum / static_cast<double>(one_lat.size());
      const double p99 = one_lat.empty() ? 0 : one_lat[one_lat.size() * 99 / 100];
      std::printf("%10zu %10.3f %10.3f %8llu %8llu %8llu %8llu %10.3f %10.3f\n", size, lat, best,
                  static_cast<unsigned long long>(c1.eager - c0.eager),
                  static_cast<unsigned long long>(c1.sceager - c0.sceager),
                  static_cast<unsigned long long>(c1.rendezvous - c0.rendezvous),
                  static_cast<unsigned long long>(c1.sceager_busy - c0.sceager_busy), mean, p99);
    }
    std::fflush(stdout);
    tsu_barrier();
    if (size == 0) break;
  }
  return 0;
}

int stream(const MsgOptions& o) {
  uint32_t me, n;
  tsu_rank(&me);
  tsu_size(&n);
  if (n < 2) return std::fprintf(stderr, "stream needs 2 ranks\n"), 2;
  void* base;
  size_t seg;
  tsu_segment_info(TSU_SEG_MAIN, &base, &seg);
  const int w = o.window;
  auto* sbuf = static_cast<unsigned char*>(base);
  auto* rbuf = static_cast<unsigned char*>(base) + (8u << 20);
  if ((8u << 20) + o.max * static_cast<size_t>(w) > seg)
    return std::fprintf(stderr, "stream: window x max exceeds the main segment\n"), 2;
  std::memset(sbuf, 1, o.max);
  if (me == 0) {
    std::printf("# stream: window %d, rank 0 -> 1; TSU_EAGER_MAX=%s TSU_SCEAGER=%s TSU_SCEAGER_MIN=%s\n",
                w, env_or("TSU_EAGER_MAX"), env_or("TSU_SCEAGER"), env_or("TSU_SCEAGER_MIN"));
    std::printf("%10s %12s %10s %8s %8s %8s %8s\n", "bytes", "Mmsg/s", "MB/s", "eager", "sceager",
                "rndv", "busy");
  }
  const uint64_t kData = 1, kReady = 2;
  for (size_t size = o.min; size <= o.max; size = size ? size * 2 : 1) {
    if (me > 1) {
      tsu_barrier();
      continue;
    }
    const int rounds = o.iters ? o.iters : std::max(20, static_cast<int>((4u << 20) / (size + 64) / w));
    std::atomic<int> rdone{0}, sdone{0}, ready{0};
    int sends = 0, posted = 0, readies = 0;
    const auto run_rounds = [&](int count) {
      for (int r = 0; r < count; ++r) {
        if (me == 1) {
          for (int i = 0; i < w; ++i) {
            while (tsu_try_recv(0, kData, TSU_TAG_EXACT, rbuf + i * size, size, nullptr,
                                tsu_cb(count_cb, &rdone), nullptr) == TSU_EAGAIN)
              tsu_progress();
            ++posted;
          }
          send_retry(0, kReady, nullptr, 0, &sdone);
          ++sends;
          spin_until(rdone, posted);
        } else {
          while (tsu_try_recv(1, kReady, TSU_TAG_EXACT, nullptr, 0, nullptr, tsu_cb(count_cb, &ready),
                              nullptr) == TSU_EAGAIN)
            tsu_progress();
          spin_until(ready, ++readies);
          for (int i = 0; i < w; ++i) send_retry(1, kData, sbuf, size, &sdone);
          sends += w;
        }
      }
      spin_until(sdone, sends);
      tsu_barrier();  // rank 1 has every message
    };
    // A warm-up (first touches of buffers and ring slots), then kStreamReps
    // timed runs of `rounds`: the median is reported (as the pingpong's).
    tsu_barrier();
    run_rounds(std::max(2, rounds / 5));
    tsu_msg_counters_t c0;
    tsu_msg_counters(&c0);
    std::vector<double> rep_us;
    for (int rep = 0; rep < kStreamReps; ++rep) {
      const double t0 = now_us();
      run_rounds(rounds);
      rep_us.push_back(now_us() - t0);
    }
    std::sort(rep_us.begin(), rep_us.end());
    const double us = rep_us[rep_us.size() / 2];
    tsu_msg_counters_t c1;
    tsu_msg_counters(&c1);
    const double msgs = static_cast<double>(rounds) * w;
    if (me == 0)
      std::printf("%10zu %12.3f %10.1f %8llu %8llu %8llu %8llu\n", size, msgs / us,
                  msgs * static_cast<double>(size) / us,
                  static_cast<unsigned long long>(c1.eager - c0.eager),
                  static_cast<unsigned long long>(c1.sceager - c0.sceager),
                  static_cast<unsigned long long>(c1.rendezvous - c0.rendezvous),
                  static_cast<unsigned long long>(c1.sceager_busy - c0.sceager_busy));
    std::fflush(stdout);
    if (size == 0) break;
  }
  return 0;
}

std::atomic<uint64_t> g_am_count{0};
std::atomic<int> g_am_replies{0};
std::atomic<int> g_am_requests{0};

int am_bench(const MsgOptions& o) {
  uint32_t me, n;
  tsu_rank(&me);
  tsu_size(&n);
  if (n < 2) return std::fprintf(stderr, "am needs 2 ranks\n"), 2;
  tsu_am_register(
      1, [](tsu_am_token_t* t, const uint64_t* a, uint32_t, void*, size_t, void*) {
        tsu_am_reply(t, 2, a, 1, nullptr, 0);
        g_am_requests.fetch_add(1, std::memory_order_release);
      },
      nullptr);
  tsu_am_register(
      2, [](tsu_am_token_t*, const uint64_t*, uint32_t, void*, size_t, void*) {
        g_am_replies.fetch_add(1, std::memory_order_release);
      },
      nullptr);
  tsu_am_register(
      3, [](tsu_am_token_t*, const uint64_t*, uint32_t, void*, size_t, void*) {
        g_am_count.fetch_add(1, std::memory_order_relaxed);
      },
      nullptr);
  // Round trip.
  const int iters = o.iters ? o.iters : 20000;
  if (me == 0) {
    const uint64_t arg = 7;
    for (int i = 0; i < iters + 1000; ++i) {
      static double t0;
      if (i == 1000) t0 = now_us();
      while (tsu_try_am_short(1, 1, &arg, 1, tsu_cb_none()) == TSU_EAGAIN) tsu_progress();
      spin_until(g_am_replies, i + 1);
      if (i == iters + 999)
        std::printf("am round trip (short request + reply): %.3f us\n", (now_us() - t0) / iters);
    }
  } else if (me == 1) {
    while (g_am_requests.load(std::memory_order_acquire) < iters + 1000) tsu_progress();
  }
  tsu_barrier();
  g_am_count.store(0);
  // Message rate vs threads: short AMs from T threads of rank 0 to rank 1.
  for (int threads = 1; threads <= o.threads; threads *= 2) {
    const uint64_t per = 200000 / static_cast<uint64_t>(threads);
    const uint64_t total = per * static_cast<uint64_t>(threads);
    tsu_barrier();
    if (me == 0) {
      const double t0 = now_us();
      std::vector<std::thread> ts;
      for (int t = 0; t < threads; ++t)
        ts.emplace_back([&] {
          const uint64_t arg = 1;
          for (uint64_t i = 0; i < per; ++i)
            while (tsu_try_am_short(1, 3, &arg, 1, tsu_cb_none()) == TSU_EAGAIN) {
              tsu_progress();
              sched_yield();
            }
        });
      for (auto& t : ts) t.join();
      const double t_send = now_us() - t0;
      std::printf("am message rate, %d thread(s): %.2f M msg/s (sender side, %llu msgs)\n", threads,
                  static_cast<double>(total) / t_send, static_cast<unsigned long long>(total));
    } else if (me == 1) {
      while (g_am_count.load() < total) tsu_progress();
      g_am_count.fetch_sub(total);
    }
    std::fflush(stdout);
  }
  tsu_barrier();
  return 0;
}

int coll_bench(const MsgOptions& o) {
  uint32_t me, n;
  tsu_rank(&me);
  tsu_size(&n);
  std::atomic<int> done{0};
  int issued = 0;
  // Median over 5 repetitions of the max-over-ranks time per operation: one
  // short repetition hit by a neighbour's time slice does not set the result
  // (this machine is shared; bench/peers/mpi_bench.c measures alike).
  auto run = [&](const char* name, size_t bytes, auto&& start) {
    const int iters = o.iters ? o.iters : (bytes <= 4096 ? 2000 : bytes <= 65536 ? 300 : 50);
    constexpr int kReps = 5;
    std::vector<double> worst(kReps);
    for (int rep = 0; rep < kReps; ++rep) {
      tsu_barrier();
      double t0 = 0;
      const int warm = rep == 0 ? 20 : 2;
      for (int i = 0; i < iters + warm; ++i) {
        if (i == warm) t0 = now_us();
        start(tsu_cb(count_cb, &done));
        ++issued;
        spin_until(done, issued);
      }
      const double us = (now_us() - t0) / iters;
      tsu_try_allreduce(TSU_TEAM_WORLD, &us, &worst[rep], 1, TSU_DT_DOUBLE, TSU_OP_MAX,
                        tsu_cb(count_cb, &done));
      spin_until(done, ++issued);
    }
    std::sort(worst.begin(), worst.end());
    if (me == 0) std::printf("%-10s %3u ranks %10zu B %10.3f us\n", name, n, bytes, worst[kReps / 2]);
    std::fflush(stdout);
  };
  run("barrier", 0, [&](tsu_cb_t cb) { tsu_try_barrier(TSU_TEAM_WORLD, cb); });
  std::vector<double> a(o.max / 8 + 1, 1.0), b(o.max / 8 + 1);
  std::vector<unsigned char> g(o.max * n + 1), a2a(o.max * n + 1, 1);
  // 8 B, x8 each step, and --max itself.
  for (size_t bytes = 8; bytes <= o.max; bytes = bytes < o.max ? std::min(bytes * 8, o.max) : o.max + 1) {
    run("allreduce", bytes, [&](tsu_cb_t cb) {
      tsu_try_allreduce(TSU_TEAM_WORLD, a.data(), b.data(), bytes / 8, TSU_DT_DOUBLE, TSU_OP_SUM, cb);
    });
    run("broadcast", bytes, [&](tsu_cb_t cb) { tsu_try_broadcast(TSU_TEAM_WORLD, a.data(), bytes, 0, cb); });
    run("allgather", bytes, [&](tsu_cb_t cb) {
      tsu_try_allgather(TSU_TEAM_WORLD, a.data(), g.data(), bytes, cb);
    });
    run("reduce", bytes, [&](tsu_cb_t cb) {
      tsu_try_reduce(TSU_TEAM_WORLD, a.data(), b.data(), bytes / 8, TSU_DT_DOUBLE, TSU_OP_SUM, 0, cb);
    });
    run("gather", bytes, [&](tsu_cb_t cb) {
      tsu_try_gather(TSU_TEAM_WORLD, a.data(), g.data(), bytes, 0, cb);
    });
    run("alltoall", bytes, [&](tsu_cb_t cb) {
      tsu_try_alltoall(TSU_TEAM_WORLD, a2a.data(), g.data(), bytes, cb);
    });
  }
  return 0;
}

using tsu::transport::MsgRing;

int ring_bench(const MsgOptions& o) {
  constexpr uint32_t kSlots = 256, kSlotSize = 128;
  const int producers = std::max(1, o.threads);
  const uint64_t per = 2'000'000 / static_cast<uint64_t>(producers);
  auto run = [&](int rings) {
    std::vector<void*> mem(rings);
    std::vector<MsgRing> r(rings);
    for (int i = 0; i < rings; ++i) {
      mem[i] = std::aligned_alloc(64, MsgRing::bytes_for(kSlots, kSlotSize));
      r[i] = MsgRing::format(mem[i], kSlots, kSlotSize);
    }
    std::atomic<bool> go{false};
    std::vector<std::thread> ts;
    for (int p = 0; p < producers; ++p)
      ts.emplace_back([&, p] {
        tsu::core::MessageHeader h{};
        h.payload_len = 8;
        MsgRing& ring = r[rings == 1 ? 0 : p];
        while (!go.load()) sched_yield();
        for (uint64_t i = 0; i < per; ++i)
          while (ring.try_push(static_cast<uint32_t>(p), h, &i) == MsgRing::Push::kFull) sched_yield();
      });
    const uint64_t total = per * static_cast<uint64_t>(producers);
    uint64_t got = 0;
    const double t0 = now_us();
    go.store(true);
    while (got < total) {
      std::size_t n = 0;
      for (auto& ring : r) n += ring.drain(32, [](uint32_t, const tsu::core::MessageHeader&, const std::byte*) {});
      got += n;
      if (!n) sched_yield();
    }
    const double us = now_us() - t0;
    for (auto& t : ts) t.join();
    // Cost of one poll pass when nothing arrived (what an idle receiver pays).
    const double p0 = now_us();
    std::size_t sink = 0;
    for (int k = 0; k < 1'000'000; ++k)
      for (auto& ring : r) sink += ring.drain(32, [](uint32_t, const tsu::core::MessageHeader&, const std::byte*) {});
    const double poll_ns = (now_us() - p0) * 1000 / 1'000'000;
    for (void* m : mem) std::free(m);
    std::printf("%-13s producers=%d rings=%d: %6.2f M msg/s, empty poll pass %.1f ns%s\n",
                rings == 1 ? "per-receiver" : "per-pair", producers, rings,
                static_cast<double>(total) / us, poll_ns, sink ? "?" : "");
  };
  run(1);
  run(producers);
  // A receiver with 63 node peers polls 63 per-pair rings (empty): cost only.
  {
    std::vector<void*> mem(63);
    std::vector<MsgRing> r(63);
    for (int i = 0; i < 63; ++i) {
      mem[i] = std::aligned_alloc(64, MsgRing::bytes_for(kSlots, kSlotSize));
      r[i] = MsgRing::format(mem[i], kSlots, kSlotSize);
    }
    const double p0 = now_us();
    std::size_t sink = 0;
    for (int k = 0; k < 100'000; ++k)
      for (auto& ring : r) sink += ring.drain(32, [](uint32_t, const tsu::core::MessageHeader&, const std::byte*) {});
    std::printf("per-pair, 63 peers: empty poll pass %.1f ns%s\n", (now_us() - p0) * 1000 / 100'000,
                sink ? "?" : "");
    for (void* m : mem) std::free(m);
  }
  return 0;
}

// Sets up the runtime around one benchmark (ring needs none).
int run_msg(const std::string& cmd, const MsgOptions& o) {
  if (cmd == "ring") return ring_bench(o);
  if (o.yield) setenv("TSU_YIELD", "1", 1);  // read by tsu_init
  if (tsu_init(nullptr) != TSU_OK) {
    std::fprintf(stderr, "tsu_init: %s\n", tsu_last_error());
    return 1;
  }
  uint32_t me;
  tsu_rank(&me);
  pin(o, me);
  int rc = 2;
  if (cmd == "pingpong") rc = pingpong(o);
  else if (cmd == "stream") rc = stream(o);
  else if (cmd == "am") rc = am_bench(o);
  else if (cmd == "coll") rc = coll_bench(o);
  tsu_finalize();
  return rc;
}

}  // namespace

namespace bench {

int run_pingpong(const MsgOptions& o) { return run_msg("pingpong", o); }
int run_stream(const MsgOptions& o) { return run_msg("stream", o); }
int run_am(const MsgOptions& o) { return run_msg("am", o); }
int run_coll(const MsgOptions& o) { return run_msg("coll", o); }
int run_ring(const MsgOptions& o) { return run_msg("ring", o); }

}  // namespace bench
