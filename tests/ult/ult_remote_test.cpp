// Threads across ranks: spawn on a named rank with values checked, detached
// spawns, "any" placement spreading work, idle ranks taking threads from a
// rank that started them all, fork/join recursion spread over the job.
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

enum : uint32_t { kSquare = 1, kCount = 2, kWork = 3, kFib = 4, kReverse = 5 };

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

// Some work that yields now and then; returns the rank it ran on.
void work(const void*, size_t, void* value, size_t* vlen) {
  volatile uint64_t x = 0;
  for (int i = 0; i < 20000; ++i) {
    x = x + static_cast<uint64_t>(i);
    if (i % 5000 == 0) tsu_ult_yield();
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
      // Stealing may move a thread before it starts (so `where` may change).
      CHECK(out.runner < g_size && where < g_size);
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

  // 3. Detached spawns: 100 from each rank to each rank.
  tsu_ult_attr_t attr{};
  attr.struct_size = sizeof attr;
  attr.field_mask = TSU_ULT_ATTR_DETACHED;
  attr.detached = 1;
  for (uint32_t r = 0; r < g_size; ++r)
    for (int i = 0; i < 100; ++i) CHECK(tsu_ult_spawn(nullptr, r, kCount, nullptr, 0, &attr) == TSU_OK);

  // 4. "Any" placement and stealing: rank 0 starts everything.
  uint64_t ran_here = 0, moved_here = 0;
  std::vector<uint64_t> per_rank(g_size, 0);
  if (g_rank == 0) {
    in_ult([&] {
      std::vector<tsu_ult_t> ts(1500);
      for (size_t i = 0; i < ts.size(); ++i)
        CHECK(tsu_ult_spawn(&ts[i], i < 500 ? TSU_ULT_ANY_RANK : 0, kWork, nullptr, 0, nullptr) ==
              TSU_OK);
      for (auto h : ts) {
        uint32_t where = 0;
        CHECK(tsu_ult_join_value(h, &where, sizeof where, nullptr) == TSU_OK);
        if (where < g_size) ++per_rank[where];
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
  ran_here = g_rank == 0 ? 0 : 1;
  (void)ran_here;
  tsu_barrier();
  const uint64_t migrated = sum_over_ranks(moved_here);
  if (g_rank == 0) {
    uint64_t elsewhere = 0;
    for (uint32_t r = 1; r < g_size; ++r) elsewhere += per_rank[r];
    std::printf("work threads per rank:");
    for (uint32_t r = 0; r < g_size; ++r) std::printf(" %llu", static_cast<unsigned long long>(per_rank[r]));
    std::printf("; migrated (all ranks) %llu\n", static_cast<unsigned long long>(migrated));
    if (g_size > 1) CHECK(elsewhere > 0);
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
