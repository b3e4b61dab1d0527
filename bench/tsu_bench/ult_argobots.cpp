// tsu-bench ult's Argobots column: the same operations on Argobots ULTs, one
// execution stream (the primary), its main pool.  Built when pkg-config
// finds argobots (not a Debian package: build it outside this repository
// and point PKG_CONFIG_PATH at it; docs/benchmarks-ult.md).
#include "ult_measure.hpp"

#ifdef TSU_BENCH_ARGOBOTS
#include <abt.h>

namespace bench::ult_measure {
namespace {

ABT_pool main_pool() {
  static bool started = false;
  if (!started) {
    ABT_init(0, nullptr);  // (finalized at exit by the library's own teardown)
    started = true;
  }
  ABT_xstream xs;
  ABT_xstream_self(&xs);
  ABT_pool pool;
  ABT_xstream_get_main_pools(xs, 1, &pool);
  return pool;
}

struct YieldLoop {
  long n;
};
void yield_a(void* a) {
  for (long i = static_cast<YieldLoop*>(a)->n; i > 0; --i) ABT_thread_yield();
}
void yield_b(void* a) {  // another call site: its returns are predicted apart
  const long n = static_cast<YieldLoop*>(a)->n;
  for (long i = 0; i < n; ++i) ABT_thread_yield();
}
void empty(void*) {}

}  // namespace

bool argobots_built() { return true; }

Stat abt_switch(int reps, long n, bool other_code) {
  ABT_pool pool = main_pool();
  return per_op(reps, n, [&](long k) {
    YieldLoop loop{k / 2};
    ABT_thread a, b;
    ABT_thread_create(pool, yield_a, &loop, ABT_THREAD_ATTR_NULL, &a);
    ABT_thread_create(pool, other_code ? yield_b : yield_a, &loop, ABT_THREAD_ATTR_NULL, &b);
    ABT_thread_free(&a);  // joins
    ABT_thread_free(&b);
  });
}

Stat abt_create_join(int reps, long n) {
  ABT_pool pool = main_pool();
  return per_op(reps, n, [&](long k) {
    for (long i = 0; i < k; ++i) {
      ABT_thread t;
      ABT_thread_create(pool, empty, nullptr, ABT_THREAD_ATTR_NULL, &t);
      ABT_thread_free(&t);
    }
  });
}

Stat abt_mutex(int reps, long n) {
  main_pool();
  ABT_mutex m;
  ABT_mutex_create(&m);
  const Stat s = per_op(reps, n, [&](long k) {
    for (long i = 0; i < k; ++i) {
      ABT_mutex_lock(m);
      ABT_mutex_unlock(m);
    }
  });
  ABT_mutex_free(&m);
  return s;
}

}  // namespace bench::ult_measure

#else

namespace bench::ult_measure {
bool argobots_built() { return false; }
Stat abt_switch(int, long, bool) { return Stat{}; }
Stat abt_create_join(int, long) { return Stat{}; }
Stat abt_mutex(int, long) { return Stat{}; }
}  // namespace bench::ult_measure

#endif
