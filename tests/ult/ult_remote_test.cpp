// Threads across ranks: spawn on a named rank with values checked (and kept
// there), bad input, a handle whose join failed, stack sizes honoured on
// every path, detached spawns, "any" placement spreading work, idle ranks
// taking threads let move from a rank that started them all, fork/join
// recursion spread over the job.
#include <tsunagi/tsunagi.h>
#include <tsunagi/ult.h>

#include "rank_check.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

using ult_test::g_failed;
using ult_test::g_rank;
uint32_t g_size = 1;

struct SquareOut {
  uint64_t square;
  uint32_t runner;
};

enum : uint32_t {
  kSquare = 1,
  kCount = 2,
  kWork = 3,
  kFib = 4,
  kReverse = 5,
  kDeep = 6,
  kOnlyOnRank0 = 7
};

// Uses 900 KiB of its stack, top down as a stack grows (so a stack that is
// too small with a guard page faults in the guard; without one, the writes
// land in other memory and the sum or a neighbour's data comes out wrong).
constexpr size_t kDeepBytes = 900 * 1024;
constexpr size_t kDeepStack = 1024 * 1024;
uint64_t deep_expected(uint64_t seed) {
  uint64_t sum = 0;
  for (size_t i = 0; i < kDeepBytes; ++i) sum += static_cast<unsigned char>(seed + i * 131);
  return sum;
}
__attribute__((noinline)) uint64_t use_stack(uint64_t seed) {
  volatile unsigned char buf[kDeepBytes];
  for (size_t i = kDeepBytes; i-- > 0;) buf[i] = static_cast<unsigned char>(seed + i * 131);
  tsu_ult_yield();  // others run on this worker meanwhile (their stacks must not overlap)
  uint64_t sum = 0;
  for (size_t i = 0; i < kDeepBytes; ++i) sum += buf[i];
  return sum;
}
struct DeepOut {
  uint64_t sum;
  uint32_t runner;
};
void deep(const void* arg, size_t, void* value, size_t* vlen) {
  uint64_t seed = 0;
  std::memcpy(&seed, arg, sizeof seed);
  const DeepOut out{use_stack(seed), g_rank};
  std::memcpy(value, &out, sizeof out);
  *vlen = sizeof out;
}

// A full-size argument read while the full-size value is written: the value
// is the argument reversed, byte by byte (a value buffer sharing bytes with
// the argument would garble it).
void reverse(const void* arg, size_t len, void* value, size_t* vlen) {
  const auto* a = static_cast<const unsigned char*>(arg);
  auto* v = static_cast<unsigned char*>(value);
  for (size_t i = 0; i < len; ++i) v[i] = a[len - 1 - i];
  *vlen = len;
}

void spawn_full_size() {
  for (uint32_t r = 0; r < g_size; ++r) {
    unsigned char arg[TSU_ULT_ARG_MAX];
    for (size_t i = 0; i < sizeof arg; ++i) arg[i] = static_cast<unsigned char>(i * 7 + r);
    tsu_ult_t t;
    CHECK(tsu_ult_spawn(&t, r, kReverse, arg, sizeof arg, nullptr) == TSU_OK);
    unsigned char v[TSU_ULT_VALUE_MAX] = {};
    size_t len = 0;
    CHECK(tsu_ult_join_value(t, v, sizeof v, &len) == TSU_OK);
    CHECK(len == sizeof arg);
    for (size_t i = 0; i < sizeof arg; ++i) CHECK(v[i] == arg[sizeof arg - 1 - i]);
  }
}

void square(const void* arg, size_t len, void* value, size_t* vlen) {
  uint64_t x = 0;
  if (len == sizeof x) std::memcpy(&x, arg, sizeof x);
  const SquareOut out{x * x, g_rank};
  std::memcpy(value, &out, sizeof out);
  *vlen = sizeof out;
}

std::atomic<uint64_t> g_counted{0};
void count(const void*, size_t, void*, size_t*) { g_counted.fetch_add(1); }

// Some work that yields now and then (20000 steps, or as many as the
// argument says); returns the rank it ran on.
void work(const void* arg, size_t len, void* value, size_t* vlen) {
  uint32_t steps = 20000;
  if (len == sizeof steps) std::memcpy(&steps, arg, sizeof steps);
  volatile uint64_t x = 0;
  for (uint32_t i = 0; i < steps; ++i) {
    x = x + static_cast<uint64_t>(i);
    // Not at once: a thread that has yielded has started, and only threads
    // not started yet can be taken by another rank.
    if (i % 5000 == 4999) tsu_ult_yield();
  }
  std::memcpy(value, &g_rank, sizeof g_rank);
  *vlen = sizeof g_rank;
}

// fib(n) by spawning fib(n-1) anywhere and computing fib(n-2) in place.
uint64_t fib_local(uint64_t n);
void fib(const void* arg, size_t, void* value, size_t* vlen) {
  uint64_t n = 0;
  std::memcpy(&n, arg, sizeof n);
  const uint64_t r = fib_local(n);
  std::memcpy(value, &r, sizeof r);
  *vlen = sizeof r;
}
uint64_t fib_local(uint64_t n) {
  if (n < 2) return n;
  if (n < 12) return fib_local(n - 1) + fib_local(n - 2);
  const uint64_t m = n - 1;
  tsu_ult_t t;
  if (tsu_ult_spawn(&t, TSU_ULT_ANY_RANK, kFib, &m, sizeof m, nullptr) != TSU_OK) return 0;
  const uint64_t b = fib_local(n - 2);
  uint64_t a = 0;
  size_t len = 0;
  if (tsu_ult_join_value(t, &a, sizeof a, &len) != TSU_OK || len != sizeof a) return 0;
  return a + b;
}

uint64_t sum_over_ranks(uint64_t v) {
  uint64_t out = 0;
  tsu_counter_t c;
  tsu_counter_init(&c);
  if (tsu_try_allreduce(TSU_TEAM_WORLD, &v, &out, 1, TSU_DT_UINT64, TSU_OP_SUM,
                        tsu_counter_cb(&c)) != TSU_OK ||
      tsu_counter_wait(&c, 1) != TSU_OK)
    return UINT64_MAX;
  return out;
}

// Runs a test body inside a ULT (so its waits yield) and joins it.
template <typename F>
void in_ult(F f) {
  tsu_ult_t t;
  CHECK(tsu_ult_create(&t, nullptr, [](void* a) -> void* {
          (*static_cast<F*>(a))();
          return nullptr;
        }, &f) == TSU_OK);
  CHECK(tsu_ult_join(t, nullptr) == TSU_OK);
}

void spawn_on_every_rank() {
  constexpr uint64_t kPer = 200;
  std::vector<tsu_ult_t> ts;
  for (uint32_t r = 0; r < g_size; ++r)
    for (uint64_t i = 0; i < kPer; ++i) {
      const uint64_t x = r * 1000 + i;
      tsu_ult_t t;
      CHECK(tsu_ult_spawn(&t, r, kSquare, &x, sizeof x, nullptr) == TSU_OK);
      ts.push_back(t);
    }
  size_t k = 0;
  for (uint32_t r = 0; r < g_size; ++r)
    for (uint64_t i = 0; i < kPer; ++i, ++k) {
      const uint64_t x = r * 1000 + i;
      uint32_t where = UINT32_MAX;
      CHECK(tsu_ult_rank_of(ts[k], &where) == TSU_OK);
      SquareOut out{};
      size_t len = 0;
      CHECK(tsu_ult_join_value(ts[k], &out, sizeof out, &len) == TSU_OK);
      CHECK(len == sizeof out && out.square == x * x);
      // A named rank is kept: the balancer moves only threads let move.
      CHECK(out.runner == r && where == r);
    }
}

tsu_ult_attr_t spawn_attr(size_t stack_size, bool migratable) {
  tsu_ult_attr_t attr{};
  attr.struct_size = sizeof attr;
  attr.field_mask = TSU_ULT_ATTR_MIGRATABLE;
  attr.migratable = migratable ? 1 : 0;
  if (stack_size) {
    attr.field_mask |= TSU_ULT_ATTR_STACK_SIZE;
    attr.stack_size = stack_size;
  }
  return attr;
}

// Threads that use most of a 1 MiB stack they asked for, on every rank, and
// (from rank 0) let move or placed by the balancer: each gets its stack
// wherever it runs.  The pools hold default-size stacks by now.
void spawn_deep() {
  std::vector<tsu_ult_t> ts;
  std::vector<uint64_t> seeds;
  std::vector<int> pinned_to;  // -1: may move
  auto spawn = [&](uint32_t rank, bool migratable) {
    const uint64_t seed = seeds.size() * 7 + g_rank;
    const tsu_ult_attr_t attr = spawn_attr(kDeepStack, migratable);
    tsu_ult_t t;
    CHECK(tsu_ult_spawn(&t, rank, kDeep, &seed, sizeof seed, &attr) == TSU_OK);
    ts.push_back(t);
    seeds.push_back(seed);
    pinned_to.push_back(migratable || rank == TSU_ULT_ANY_RANK ? -1 : static_cast<int>(rank));
  };
  for (uint32_t r = 0; r < g_size; ++r) spawn(r, false);
  if (g_rank == 0) {
    for (int i = 0; i < 24; ++i) spawn(0, true);
    for (int i = 0; i < 8; ++i) spawn(TSU_ULT_ANY_RANK, false);
  }
  for (size_t i = 0; i < ts.size(); ++i) {
    DeepOut out{};
    size_t len = 0;
    CHECK(tsu_ult_join_value(ts[i], &out, sizeof out, &len) == TSU_OK);
    CHECK(len == sizeof out && out.sum == deep_expected(seeds[i]));
    if (pinned_to[i] >= 0) CHECK(out.runner == static_cast<uint32_t>(pinned_to[i]));
  }
}

// A thread whose function id is registered on rank 0 only, run on another
// rank: its join fails with TSU_ERR_INVALID_ARG and keeps the handle, which
// a second join leaves as it is and a detach releases.
void unregistered_elsewhere() {
  if (g_rank != 0 || g_size < 2) return;
  for (int joins = 1; joins <= 2; ++joins) {
    const uint64_t x = 5;
    tsu_ult_t t;
    CHECK(tsu_ult_spawn(&t, 1, kOnlyOnRank0, &x, sizeof x, nullptr) == TSU_OK);
    for (int j = 0; j < joins; ++j)
      CHECK(tsu_ult_join_value(t, nullptr, 0, nullptr) == TSU_ERR_INVALID_ARG);
    CHECK(tsu_ult_detach(t) == TSU_OK);
  }
}

}  // namespace

int main() {
  if (tsu_init(nullptr) != TSU_OK) return 1;
  tsu_rank(&g_rank);
  tsu_size(&g_size);
  if (tsu_ult_init(nullptr) != TSU_OK) return 1;
  CHECK(tsu_ult_register(kSquare, square) == TSU_OK);
  CHECK(tsu_ult_register(kCount, count) == TSU_OK);
  CHECK(tsu_ult_register(kWork, work) == TSU_OK);
  CHECK(tsu_ult_register(kFib, fib) == TSU_OK);
  CHECK(tsu_ult_register(kReverse, reverse) == TSU_OK);
  CHECK(tsu_ult_register(kDeep, deep) == TSU_OK);
  // Collective, but only rank 0 gives a function: the id is known there only.
  CHECK(tsu_ult_register(kOnlyOnRank0, g_rank == 0 ? square : nullptr) == TSU_OK);

  // 1. Named ranks, from a pthread and from a ULT.
  spawn_on_every_rank();
  if (getenv("ULT_TRACE")) fprintf(stderr, "phase1a\n");
  in_ult(spawn_on_every_rank);
  if (getenv("ULT_TRACE")) fprintf(stderr, "phase1b\n");
  spawn_full_size();  // to every rank, our own included (the record is the handle)
  in_ult(spawn_full_size);

  // 2. Bad arguments.
  tsu_ult_t t;
  const uint64_t x = 3;
  CHECK(tsu_ult_spawn(&t, g_size, kSquare, &x, sizeof x, nullptr) == TSU_ERR_BAD_RANK);
  CHECK(tsu_ult_spawn(&t, 0, 999, &x, sizeof x, nullptr) == TSU_ERR_INVALID_ARG);
  static char big[TSU_ULT_ARG_MAX + 1];
  CHECK(tsu_ult_spawn(&t, 0, kSquare, big, sizeof big, nullptr) == TSU_ERR_INVALID_ARG);
  CHECK(tsu_ult_spawn(nullptr, 0, kSquare, &x, sizeof x, nullptr) == TSU_ERR_NULL_POINTER);
  CHECK(tsu_ult_spawn(&t, (g_rank + 1) % g_size, kSquare, &x, sizeof x, nullptr) == TSU_OK);
  SquareOut small{};
  size_t len = 0;
  CHECK(tsu_ult_join_value(t, &small, 4, &len) == TSU_ERR_TRUNCATED);
  CHECK(len == sizeof(SquareOut));
  tsu_ult_attr_t bad = spawn_attr(0, false);
  bad.migratable = 2;
  CHECK(tsu_ult_spawn(&t, 0, kSquare, &x, sizeof x, &bad) == TSU_ERR_INVALID_ARG);
  bad = spawn_attr(1024, false);  // under 4 KiB
  CHECK(tsu_ult_spawn(&t, 0, kSquare, &x, sizeof x, &bad) == TSU_ERR_INVALID_ARG);
  unregistered_elsewhere();
  in_ult(unregistered_elsewhere);

  // 2b. Stack sizes asked for are honoured wherever the thread runs.
  spawn_deep();
  in_ult(spawn_deep);

  // 3. Detached spawns: 100 from each rank to each rank.
  tsu_ult_attr_t attr{};
  attr.struct_size = sizeof attr;
  attr.field_mask = TSU_ULT_ATTR_DETACHED;
  attr.detached = 1;
  for (uint32_t r = 0; r < g_size; ++r)
    for (int i = 0; i < 100; ++i) CHECK(tsu_ult_spawn(nullptr, r, kCount, nullptr, 0, &attr) == TSU_OK);

  // 4. Stealing, then "any" placement: rank 0 starts everything.  First
  // 1000 threads spawned on rank 0, half let move (attr.migratable): idle
  // ranks must take some of those ("any" nowhere), and the other half must
  // run on rank 0 while the balancer is busy.  Then 500 "any" threads.
  uint64_t moved_here = 0;
  std::vector<uint64_t> stolen_to(g_size, 0);  // migratable
  std::vector<uint64_t> any_to(g_size, 0);     // "any"
  const char* lb = getenv("TSU_ULT_LB");
  const bool balancer = !lb || std::strcmp(lb, "0") != 0;
  if (g_rank == 0) {
    // (From this pthread: its spawns go straight to the run queue, where
    // the balancer finds them not started.)
    auto stealing = [&] {
      std::vector<tsu_ult_t> ts(1000);
      const tsu_ult_attr_t movable = spawn_attr(0, true);
      // Rounds until idle ranks took some (a steal needs a load report and a
      // request to cross while rank 0 still has threads not started: on a
      // loaded machine one round may end first).
      uint64_t taken = 0;
      for (int round = 0; round < 8 && (taken == 0 || round == 0); ++round) {
        const uint32_t steps = 50000;
        for (size_t i = 0; i < ts.size(); ++i)
          CHECK(tsu_ult_spawn(&ts[i], 0, kWork, &steps, sizeof steps,
                              i % 2 ? nullptr : &movable) == TSU_OK);
        for (size_t i = 0; i < ts.size(); ++i) {
          uint32_t where = UINT32_MAX;
          CHECK(tsu_ult_join_value(ts[i], &where, sizeof where, nullptr) == TSU_OK);
          CHECK(where < g_size);
          if (i % 2) CHECK(where == 0);  // pinned
          else if (where < g_size) ++stolen_to[where];
          if (i % 2 == 0 && where != 0) ++taken;
        }
        if (!balancer || g_size == 1) break;
      }
    };
    stealing();
    in_ult([&] {
      std::vector<tsu_ult_t> ts(500);
      for (auto& h : ts) CHECK(tsu_ult_spawn(&h, TSU_ULT_ANY_RANK, kWork, nullptr, 0, nullptr) == TSU_OK);
      for (auto h : ts) {
        uint32_t where = UINT32_MAX;
        CHECK(tsu_ult_join_value(h, &where, sizeof where, nullptr) == TSU_OK);
        CHECK(where < g_size);
        if (where < g_size) ++any_to[where];
      }
    });
    if (getenv("ULT_TRACE")) fprintf(stderr, "phase4\n");
    // 5. Fork/join recursion started here, spread by the balancer.
    uint64_t f = 0;
    in_ult([&] { f = fib_local(22); });
    CHECK(f == 17711);
  }
  tsu_ult_counters_t c;
  tsu_ult_counters(&c);
  moved_here = c.migrated;
  tsu_barrier();
  const uint64_t migrated = sum_over_ranks(moved_here);
  if (g_rank == 0) {
    uint64_t elsewhere = 0, stolen = 0;
    for (uint32_t r = 1; r < g_size; ++r) elsewhere += any_to[r];
    for (uint32_t r = 1; r < g_size; ++r) stolen += stolen_to[r];
    auto print = [&](const char* what, const std::vector<uint64_t>& v) {
      std::printf("%s threads per rank:", what);
      for (uint64_t n : v) std::printf(" %llu", static_cast<unsigned long long>(n));
      std::printf("\n");
    };
    print("migratable", stolen_to);
    print("\"any\"", any_to);
    std::printf("migrated (all ranks) %llu\n", static_cast<unsigned long long>(migrated));
    if (g_size > 1) CHECK(elsewhere > 0);
    if (g_size > 1 && balancer) CHECK(stolen > 0);
  }
  CHECK(tsu_ult_finalize() == TSU_OK);
  // Detached threads are only sure to have run once finalize (collective:
  // no rank has threads left) returned; a barrier before it proves nothing.
  const uint64_t counted = sum_over_ranks(g_counted.load());
  if (g_rank == 0) CHECK(counted == uint64_t{g_size} * g_size * 100);
  std::printf("rank %u: %s\n", g_rank, g_failed ? "FAIL" : "PASS");
  tsu_finalize();
  return g_failed ? 1 : 0;
}
