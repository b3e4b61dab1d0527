// tsu-bench ult: user-level threads beside Boost.Fiber, Argobots (when built
// with it: ult_argobots.cpp), pthreads and the raw
// Boost.Context switch (the limit), in one run:
//   switch        one context switch (two threads yielding to each other):
//                 running different functions (the return out of every
//                 switch is mispredicted: the common case), the same one
//                 (every return predicted: the best case), and one of the two
//                 computing in floating point (src/ult/fp_state.hpp)
//   create+join   an empty thread, created and joined (stack from the pool)
//   mutex         uncontended lock + unlock
// and with 2 ranks (tsurun -n 2), rank 0 -> rank 1:
//   remote create+join   one spawned empty thread, joined (latency per op),
//                        beside an active-message round trip (the limit)
//   remote spawn rate    threads spawned and joined per second, batched,
//                        beside the one-way active-message rate (the limit)
// Local rows: median over --reps batches of the per-op mean (and mean, p99
// over the batches); remote latency: per-op median, mean, p99.
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <tsunagi/tsunagi.h>
#include <tsunagi/ult.h>

#include <algorithm>
#include <atomic>
#include <cfenv>
#include <boost/context/detail/fcontext.hpp>
#include <boost/fiber/all.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "subcommands.hpp"
#include "ult_measure.hpp"

namespace bench {
namespace {

using namespace ult_measure;

std::string cell(const Stat& s) {
  if (!s.valid) return "-";
  char b[128];
  if (s.cpu >= 0)
    std::snprintf(b, sizeof b, "%.1f (mean %.1f, p99 %.1f; cpu %.1f)", s.median, s.mean, s.p99,
                  s.cpu);
  else
    std::snprintf(b, sizeof b, "%.1f (mean %.1f, p99 %.1f)", s.median, s.mean, s.p99);
  return b;
}

// ---- raw fcontext: the limit -------------------------------------------------------
namespace bctx = boost::context::detail;
void bounce(bctx::transfer_t t) {
  for (;;) t = bctx::jump_fcontext(t.fctx, nullptr);
}
// A bare jump loop: no call around the jump, no return after it (Boost's
// jump_fcontext itself leaves by an indirect jump, which the CPU predicts
// from the branch history).  The floor of any switch.
Stat raw_switch(int reps, long n) {
  std::vector<char> stack(64 * 1024);
  std::feclearexcept(FE_ALL_EXCEPT);  // (the other context keeps the flags of now: see per_op)
  bctx::fcontext_t ctx = bctx::make_fcontext(stack.data() + stack.size(), stack.size(), bounce);
  return per_op(reps, n, [&](long k) {
    for (long i = 0; i < k; ++i) ctx = bctx::jump_fcontext(ctx, nullptr).fctx;
  });  // one iteration = two jumps
}

// The limit of a yield *call*: a function that switches and returns to its
// caller in the resumed context, as tsu_ult_yield and boost::this_fiber::yield
// do.  That return is predicted from the return stack of the context that
// called: right only when the resumed one called from the same place.
// raw_yield_jump's return never is (jump_fcontext's own call stays on the
// return stack); raw_yield_ontop's is when the call sites match (the on-top
// function returns straight to the resumed caller).
bctx::transfer_t raw_on_top(bctx::transfer_t t) { return t; }
__attribute__((noipa)) bctx::fcontext_t raw_yield_jump(bctx::fcontext_t c) {
  return bctx::jump_fcontext(c, nullptr).fctx;
}
__attribute__((noipa)) bctx::fcontext_t raw_yield_ontop(bctx::fcontext_t c) {
  return bctx::ontop_fcontext(c, nullptr, raw_on_top).fctx;
}
using RawYield = bctx::fcontext_t (*)(bctx::fcontext_t);
template <RawYield Y>
__attribute__((noipa)) bctx::fcontext_t raw_yield_loop(bctx::fcontext_t c, long k) {
  for (long i = 0; i < k; ++i) c = Y(c);
  return c;
}
template <RawYield Y>  // the same loop, another function: another call site
// (noipa: no clone of either loop for a constant k, which would be another site)
__attribute__((noipa)) bctx::fcontext_t raw_yield_loop_other(bctx::fcontext_t c, long k) {
  for (long i = 0; i < k; ++i) {
    asm volatile("nop");  // (keeps the two loops apart: no identical-code folding)
    c = Y(c);
  }
  return c;
}
template <RawYield Y, bool kSameSite>
void raw_yield_partner(bctx::transfer_t t) {
  for (;;)
    t.fctx = kSameSite ? raw_yield_loop<Y>(t.fctx, 1L << 62) : raw_yield_loop_other<Y>(t.fctx, 1L << 62);
}
// Per switch (half a round trip).
template <RawYield Y, bool kSameSite>
Stat raw_yield_call(int reps, long n) {
  std::vector<char> stack(64 * 1024);
  std::feclearexcept(FE_ALL_EXCEPT);
  bctx::fcontext_t ctx = bctx::make_fcontext(stack.data() + stack.size(), stack.size(),
                                             raw_yield_partner<Y, kSameSite>);
  Stat s = per_op(reps, n, [&](long k) { ctx = raw_yield_loop<Y>(ctx, k); });
  s.median /= 2, s.mean /= 2, s.p99 /= 2, s.cpu /= 2;
  return s;
}
// The better of the two primitives for a yield call.
Stat best(const Stat& a, const Stat& b) { return a.median <= b.median ? a : b; }

// ---- tsunagi-ult --------------------------------------------------------------------
struct Loop {
  long n;
  bool fp = false;     // compute in floating point between yields
  bool fresh = false;  // start with the status flags clear: a thread that has
                       // not computed in floating point, in a process whose
                       // threads started so (else this one inherits the
                       // flags this program's own arithmetic raised)
};
// A computing thread's work between yields: raises FE_INEXACT, as nearly any
// floating-point work does.
volatile double g_fp_sink = 1.0;
inline void fp_step() {
  g_fp_sink = g_fp_sink * 1.1;  // inexact
  if (g_fp_sink > 1e300) g_fp_sink = 1.0;
}
void* yield_n(void* a) {
  const Loop& l = *static_cast<Loop*>(a);
  if (l.fresh) std::feclearexcept(FE_ALL_EXCEPT);
  for (long i = 0; i < l.n; ++i) {
    if (l.fp) fp_step();
    tsu_ult_yield();
  }
  return nullptr;
}
// The same loop as another function: two threads running different code.
void* yield_n_other(void* a) {
  const long n = static_cast<Loop*>(a)->n;
  for (long i = 0; i < n; ++i) tsu_ult_yield();
  return nullptr;
}
void* empty_fn(void*) { return nullptr; }

template <typename F>
void in_ult(F f) {
  tsu_ult_t t;
  tsu_ult_create(&t, nullptr, [](void* a) -> void* {
    (*static_cast<F*>(a))();
    return nullptr;
  }, &f);
  tsu_ult_join(t, nullptr);
}

// Two threads on one worker yielding to each other, k/2 times each: a runs
// fa with a copy of la, b runs fb with a copy of lb (their n set here).
Stat ult_pair(int reps, long n, tsu_ult_fn_t fa, Loop la, tsu_ult_fn_t fb, Loop lb) {
  return per_op(reps, n, [=](long k) {
    Loop l_a = la, l_b = lb;
    l_a.n = l_b.n = k / 2;
    in_ult([&] {
      tsu_ult_t a, b;
      tsu_ult_create(&a, nullptr, fa, &l_a);
      tsu_ult_create(&b, nullptr, fb, &l_b);
      tsu_ult_join(a, nullptr);
      tsu_ult_join(b, nullptr);
    });
  });
}
Stat ult_switch(int reps, long n) { return ult_pair(reps, n, yield_n, {}, yield_n, {}); }
// Switch between two threads running different functions.
Stat ult_switch_other_code(int reps, long n) {
  return ult_pair(reps, n, yield_n, {}, yield_n_other, {});
}
// Switch between a thread computing in floating point and one not (the same
// function: only the floating-point state differs from ult_switch).
Stat ult_switch_fp(int reps, long n) {
  return ult_pair(reps, n, yield_n, Loop{0, true}, yield_n, Loop{0, false, true});
}
Stat ult_create_join(int reps, long n) {
  Stat s;
  in_ult([&] {
    s = per_op(reps, n, [](long k) {
      for (long i = 0; i < k; ++i) {
        tsu_ult_t t;
        tsu_ult_create(&t, nullptr, empty_fn, nullptr);
        tsu_ult_join(t, nullptr);
      }
    });
  });
  return s;
}
Stat ult_mutex(int reps, long n) {
  Stat s;
  in_ult([&] {
    tsu_ult_mutex_t m = TSU_ULT_MUTEX_INITIALIZER;
    s = per_op(reps, n, [&](long k) {
      for (long i = 0; i < k; ++i) {
        tsu_ult_mutex_lock(&m);
        tsu_ult_mutex_unlock(&m);
      }
    });
  });
  return s;
}

// ---- Boost.Fiber (its default round-robin scheduler, this thread) ------------------
Stat fiber_switch(int reps, long n) {
  return per_op(reps, n, [](long k) {
    auto body = [k] {
      for (long i = 0; i < k / 2; ++i) boost::this_fiber::yield();
    };
    boost::fibers::fiber a(body), b(body);
    a.join();
    b.join();
  });
}
// Boost.Fiber's body: one lambda type for both fibers, like yield_n.
struct FiberLoop {
  long n;
  bool fp;
  bool fresh = false;  // as Loop::fresh
  void operator()() const {
    if (fresh) std::feclearexcept(FE_ALL_EXCEPT);
    for (long i = 0; i < n; ++i) {
      if (fp) fp_step();
      boost::this_fiber::yield();
    }
  }
};
Stat fiber_switch_other_code(int reps, long n) {
  return per_op(reps, n, [](long k) {
    auto other = [k] {
      for (long i = 0; i < k / 2; ++i) boost::this_fiber::yield();
    };
    boost::fibers::fiber a(FiberLoop{k / 2, false}), b(other);
    a.join();
    b.join();
  });
}
Stat fiber_switch_fp(int reps, long n) {
  return per_op(reps, n, [](long k) {
    boost::fibers::fiber a(FiberLoop{k / 2, true}), b(FiberLoop{k / 2, false, true});
    a.join();
    b.join();
  });
}
Stat fiber_create_join(int reps, long n) {
  return per_op(reps, n, [](long k) {
    for (long i = 0; i < k; ++i) {
      boost::fibers::fiber f([] {});
      f.join();
    }
  });
}
Stat fiber_mutex(int reps, long n) {
  boost::fibers::mutex m;
  return per_op(reps, n, [&](long k) {
    for (long i = 0; i < k; ++i) {
      m.lock();
      m.unlock();
    }
  });
}

// ---- pthreads ------------------------------------------------------------------------
Stat pthread_switch(int reps, long n) {
  // Two threads handing a token back and forth (each hand-off is a switch
  // when they share a CPU; pinned to one CPU here so it is).
  return per_op(reps, n, [](long k) {
    std::mutex mu;
    std::condition_variable cv;
    long turn = 0;
    auto body = [&](long me) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(0, &set);
      pthread_setaffinity_np(pthread_self(), sizeof set, &set);
      for (long i = 0; i < k / 2; ++i) {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return turn % 2 == me; });
        ++turn;
        cv.notify_one();
      }
    };
    std::thread a(body, 0), b(body, 1);
    a.join();
    b.join();
  });
}
Stat pthread_create_join(int reps, long n) {
  return per_op(reps, n, [](long k) {
    for (long i = 0; i < k; ++i) {
      pthread_t t;
      pthread_create(&t, nullptr, empty_fn, nullptr);
      pthread_join(t, nullptr);
    }
  });
}
Stat pthread_mutex(int reps, long n) {
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  return per_op(reps, n, [&](long k) {
    for (long i = 0; i < k; ++i) {
      pthread_mutex_lock(&m);
      pthread_mutex_unlock(&m);
    }
  });
}

// ---- Across ranks -------------------------------------------------------------------
constexpr uint32_t kEmptyFn = 7;
constexpr uint32_t kAmPing = 100, kAmPong = 101, kAmSink = 102, kAmMediumPing = 103;
std::atomic<uint64_t> g_pongs{0}, g_sunk{0};
void remote_empty(const void*, size_t, void*, size_t*) {}

}  // namespace

int run_ult(const UltOptions& o) {
  if (tsu_init(nullptr) != TSU_OK) return 1;
  uint32_t me = 0, n = 1;
  tsu_rank(&me);
  tsu_size(&n);
  tsu_ult_config_t cfg{};
  cfg.struct_size = sizeof cfg;
  cfg.field_mask = TSU_ULT_CONFIG_WORKERS;
  cfg.workers = static_cast<uint32_t>(o.workers);
  if (tsu_ult_init(&cfg) != TSU_OK) return 1;
  tsu_ult_register(kEmptyFn, remote_empty);
  tsu_am_register(kAmPing, [](tsu_am_token_t* t, const uint64_t*, uint32_t, void*, size_t, void*) {
    tsu_am_reply(t, kAmPong, nullptr, 0, nullptr, 0);
  }, nullptr);
  tsu_am_register(kAmPong, [](tsu_am_token_t*, const uint64_t*, uint32_t, void*, size_t, void*) {
    g_pongs.fetch_add(1, std::memory_order_release);
  }, nullptr);
  // A medium ping (24 B, like one spawn record) answered by a medium reply
  // (16 B, like one exit-value record): the messages remote spawns use.
  tsu_am_register(kAmMediumPing, [](tsu_am_token_t* t, const uint64_t*, uint32_t, void*, size_t,
                                    void*) {
    static const unsigned char value[16] = {};
    tsu_am_reply(t, kAmPong, nullptr, 0, value, sizeof value);
  }, nullptr);
  tsu_am_register(kAmSink, [](tsu_am_token_t*, const uint64_t*, uint32_t, void*, size_t, void*) {
    g_sunk.fetch_add(1, std::memory_order_relaxed);
  }, nullptr);
  const int reps = o.quick ? 3 : o.reps;
  const long iters = o.quick ? 2000 : o.iters;
  if (me == 0 && o.remote_only) {
    std::printf("## tsu-bench ult: %u rank(s), %d worker(s) per rank, %d reps (remote rows only)\n",
                n, o.workers, reps);
  } else if (me == 0) {
    std::printf("## tsu-bench ult: %u rank(s), %d worker(s) per rank, %d reps of %ld ops\n\n", n,
                o.workers, reps, iters);
    std::printf("Local, ns per operation: median over reps (mean, p99; cpu: median process CPU "
                "time per op, all threads)\n\n");
    std::printf("| operation | tsunagi-ult | Boost.Fiber | Argobots%s | pthreads | raw fcontext "
                "yield call (limit) |\n",
                argobots_built() ? "" : " (not built)");
    std::printf("|---|---|---|---|---|---|\n");
    const Stat raw_other = best(raw_yield_call<raw_yield_jump, false>(reps, iters),
                                raw_yield_call<raw_yield_ontop, false>(reps, iters));
    std::printf("| switch, the two threads yielding from different call sites | %s | %s | %s | %s "
                "| %s |\n",
                cell(ult_switch_other_code(reps, iters)).c_str(),
                cell(fiber_switch_other_code(reps, iters)).c_str(),
                cell(abt_switch(reps, iters, true)).c_str(),
                cell(pthread_switch(reps, iters / 10)).c_str(), cell(raw_other).c_str());
    std::fflush(stdout);
    const Stat raw_same = best(raw_yield_call<raw_yield_jump, true>(reps, iters),
                               raw_yield_call<raw_yield_ontop, true>(reps, iters));
    std::printf("| switch, both yielding from one call site (every return predicted) | %s | "
                "%s | %s | - | %s |\n",
                cell(ult_switch(reps, iters)).c_str(), cell(fiber_switch(reps, iters)).c_str(),
                cell(abt_switch(reps, iters, false)).c_str(),
                cell(raw_same).c_str());
    std::fflush(stdout);
    std::printf("| switch, one of the two computing in floating point | %s | %s | - | - | - |\n",
                cell(ult_switch_fp(reps, iters)).c_str(),
                cell(fiber_switch_fp(reps, iters)).c_str());
    std::fflush(stdout);
    std::printf("| create + join, empty thread | %s | %s | %s | %s | - |\n",
                cell(ult_create_join(reps, iters)).c_str(),
                cell(fiber_create_join(reps, iters)).c_str(),
                cell(abt_create_join(reps, iters)).c_str(),
                cell(pthread_create_join(reps, iters / 100 + 1)).c_str());
    std::printf("| mutex lock + unlock, uncontended | %s | %s | %s | %s | - |\n",
                cell(ult_mutex(reps, iters)).c_str(), cell(fiber_mutex(reps, iters)).c_str(),
                cell(abt_mutex(reps, iters)).c_str(),
                cell(pthread_mutex(reps, iters)).c_str());
    Stat bare = raw_switch(reps, iters);
    bare.median /= 2, bare.mean /= 2, bare.p99 /= 2, bare.cpu /= 2;
    std::printf("\nThe limit column: a function that switches and returns to its caller in the "
                "resumed context (Boost.Context's jump_fcontext or ontop_fcontext inside it, "
                "whichever is faster).  A bare jump loop, no call around the jump: %s ns per "
                "switch (no return to predict: the floor of any switch).\n",
                cell(bare).c_str());
    std::fflush(stdout);
  }
  tsu_barrier();
  if (n >= 2 && me == 0) {
    // Each latency row warms up for a while before it measures: the first
    // milliseconds after the barrier are a transient (the kernel spreading
    // the ranks' busy threads over the CPUs, rank 1 starting its barrier's
    // helper), and 2,000 operations measured inside it made the row
    // bimodal between runs (1.5 or 5-8 us on the 2-core machine).
    const long lat_iters = o.quick ? 200 : std::max<long>(iters / 10, 20000);
    const auto warm = std::chrono::milliseconds(o.quick ? 10 : 200);
    auto warming = [&](long i, Clock::time_point start) {
      return i < lat_iters / 10 || Clock::now() - start < warm;
    };
    std::vector<double> spawn_ns, am_ns;
    in_ult([&] {
      const auto start = Clock::now();
      for (long i = 0, kept = 0; kept < lat_iters; ++i) {
        const auto t0 = Clock::now();
        tsu_ult_t t;
        tsu_ult_spawn(&t, 1, kEmptyFn, nullptr, 0, nullptr);
        tsu_ult_join_value(t, nullptr, 0, nullptr);
        if (!warming(i, start)) spawn_ns.push_back(ns_since(t0)), ++kept;
      }
    });
    {
      const auto start = Clock::now();
      for (long i = 0, kept = 0; kept < lat_iters; ++i) {
        const uint64_t want = g_pongs.load() + 1;
        const auto t0 = Clock::now();
        while (tsu_try_am_short(1, kAmPing, nullptr, 0, tsu_cb_none()) == TSU_EAGAIN) tsu_progress();
        while (g_pongs.load(std::memory_order_acquire) < want) tsu_progress();
        if (!warming(i, start)) am_ns.push_back(ns_since(t0)), ++kept;
      }
    }
    std::vector<double> medium_ns;
    const auto medium_start = Clock::now();
    for (long i = 0, kept = 0; kept < lat_iters; ++i) {
      static const unsigned char record[24] = {};
      const uint64_t want = g_pongs.load() + 1;
      const auto t0 = Clock::now();
      while (tsu_try_am_medium(1, kAmMediumPing, nullptr, 0, record, sizeof record,
                               tsu_cb_none()) == TSU_EAGAIN)
        tsu_progress();
      while (g_pongs.load(std::memory_order_acquire) < want) tsu_progress();
      if (!warming(i, medium_start)) medium_ns.push_back(ns_since(t0)), ++kept;
    }
    std::printf("\nAcross ranks (rank 0 -> rank 1, one node: shm), ns\n\n");
    std::printf("| operation | tsunagi-ult | short-AM round trip (limit) | medium-AM round trip "
                "(24 B out, 16 B back) |\n|---|---|---|---|\n");
    std::printf("| remote create + join, latency | %s | %s | %s |\n",
                cell(stat_of(spawn_ns)).c_str(), cell(stat_of(am_ns)).c_str(),
                cell(stat_of(medium_ns)).c_str());
    std::fflush(stdout);
    // Rate: spawn k threads from one ULT, join them all.
    const long k = o.quick ? 2000 : 200000;
    std::vector<double> rates, am_rates;
    for (int r = 0; r < reps; ++r) {
      in_ult([&] {
        std::vector<tsu_ult_t> ts(static_cast<std::size_t>(k));
        const auto t0 = Clock::now();
        for (auto& t : ts) tsu_ult_spawn(&t, 1, kEmptyFn, nullptr, 0, nullptr);
        for (auto t : ts) tsu_ult_join_value(t, nullptr, 0, nullptr);
        rates.push_back(static_cast<double>(k) / ns_since(t0) * 1e3);  // M/s
      });
      const uint64_t base = g_sunk.load();
      (void)base;
      const auto t0 = Clock::now();
      for (long i = 0; i < k; ++i)
        while (tsu_try_am_short(1, kAmSink, nullptr, 0, tsu_cb_none()) == TSU_EAGAIN) tsu_progress();
      am_rates.push_back(static_cast<double>(k) / ns_since(t0) * 1e3);
    }
    const Stat rs = stat_of(rates), as = stat_of(am_rates);
    std::printf("| remote spawn + join rate, M threads/s (%ld per rep) | %.2f (mean %.2f) | "
                "%.2f M msgs/s one-way (mean %.2f) | - |\n",
                k, rs.median, rs.mean, as.median, as.mean);
    std::fflush(stdout);
  }
  tsu_barrier();
  tsu_ult_counters_t c{};
  tsu_ult_counters(&c);
  tsu_ult_finalize();
  tsu_finalize();
  return 0;
}

}  // namespace bench
