/* Distributed locks (OpenSHMEM 1.5, 9.11): set_lock / clear_lock give mutual
 * exclusion (a counter on PE 0 changed by get + put inside the lock adds up,
 * and at most one PE is ever inside); test_lock takes a free lock and
 * refuses a taken one.  Locks on the heap and in static data. */
#define _DEFAULT_SOURCE /* usleep */
#include "shmem_test.h"

#include <unistd.h>

enum { kRounds = 40 };
static long static_lock;

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  long *lock = shmem_calloc(1, sizeof(long));
  long *count = shmem_calloc(2, sizeof(long));  /* [0]: total, [1]: PEs inside */
  CHECK(lock && count, "allocation");
  /* The first half on the static lock, the second on the heap's: a PE
   * never holds one while another PE holds the other. */
  for (int r = 0; r < kRounds; ++r) {
    if (r == kRounds / 2) shmem_barrier_all();
    long *l = r < kRounds / 2 ? &static_lock : lock;
    shmem_set_lock(l);
    const long inside = shmem_long_atomic_fetch_inc(&count[1], 0);
    CHECK(inside == 0, "round %d: %ld other PEs inside the lock", r, inside);
    const long v = shmem_long_g(&count[0], 0);
    if (r % 8 == 0) usleep(200);  /* widen the window a broken lock would show */
    shmem_long_p(&count[0], v + 1, 0);
    shmem_quiet();
    shmem_long_atomic_add(&count[1], -1, 0);
    shmem_quiet();
    shmem_clear_lock(l);
  }
  shmem_barrier_all();
  if (me == 0) CHECK(count[0] == (long)n * kRounds, "total %ld, want %ld", count[0], (long)n * kRounds);
  shmem_barrier_all();

  /* test_lock: 0 when it took the lock, 1 when another holds it. */
  if (me == 0) {
    CHECK(shmem_test_lock(lock) == 0, "test_lock on a free lock");
  }
  shmem_barrier_all();
  if (me != 0) CHECK(shmem_test_lock(lock) == 1, "test_lock on a lock PE 0 holds");
  shmem_barrier_all();
  if (me == 0) shmem_clear_lock(lock);
  shmem_barrier_all();
  /* Everyone takes it in turn by spinning on test_lock. */
  while (shmem_test_lock(&static_lock) != 0) {
  }
  shmem_long_atomic_inc(&count[0], 0);
  shmem_clear_lock(&static_lock);
  shmem_barrier_all();
  if (me == 0) CHECK(count[0] == (long)n * kRounds + n, "test_lock rounds: %ld", count[0]);
  shmem_barrier_all();
  shmem_free(count);
  shmem_free(lock);
  TEST_DONE("locks");
  shmem_finalize();
  return 0;
}
