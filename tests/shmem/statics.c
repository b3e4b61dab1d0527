/* Global and static variables are symmetric data objects (OpenSHMEM 1.5,
 * 3.2): RMA, atomics, waits and locks on them, with no allocation at all, as
 * most existing programs keep their counters, flags, pSync and pWrk there. */
#include "shmem_test.h"

long global_counter;                 /* bss */
int global_table[64] = {1, 2, 3};    /* data */
static uint64_t static_flag;         /* static bss */
static long static_lock;             /* a lock in static data */
static double static_values[8] = {0.5};
static long static_pSync[SHMEM_BARRIER_SYNC_SIZE];
static long shared_total;            /* changed only under static_lock */

int main(void) {
  for (int i = 0; i < SHMEM_BARRIER_SYNC_SIZE; ++i) static_pSync[i] = SHMEM_SYNC_VALUE;
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  CHECK(shmem_addr_accessible(&global_counter, right) && shmem_addr_accessible(&static_flag, right)
            && shmem_addr_accessible(&global_table[63], right),
        "static data not accessible on PE %d", right);

  /* RMA: put into the right neighbour's data segment, get from its bss. */
  int row[64];
  for (int i = 0; i < 64; ++i) row[i] = me * 100 + i;
  shmem_int_put(global_table, row, 64, right);
  static_values[me % 8] = me;
  shmem_barrier_all();
  for (int i = 0; i < 64; ++i)
    CHECK(global_table[i] == left * 100 + i, "global_table[%d] = %d", i, global_table[i]);
  double got[8];
  shmem_double_get(got, static_values, 8, right);
  CHECK(got[right % 8] == right, "static_values[%d] of PE %d: %g", right % 8, right,
        got[right % 8]);
  shmem_barrier_all();  /* everyone has checked global_table */
  shmem_int_p(&global_table[0], -me, right);
  shmem_barrier(0, 0, n, static_pSync);
  CHECK(shmem_int_g(&global_table[0], right) == -me, "p/g on static data");

  /* Atomics from every PE on one global word of PE 0: counts add up. */
  enum { kAdds = 100 };
  for (int i = 0; i < kAdds; ++i) shmem_long_atomic_add(&global_counter, 1, 0);
  long before = shmem_long_atomic_fetch_add(&global_counter, 0, 0);
  CHECK(before >= kAdds, "fetch_add(0) saw %ld after my own %d adds", before, kAdds);
  shmem_barrier_all();
  if (me == 0) CHECK(global_counter == (long)n * kAdds, "counter %ld", global_counter);
  CHECK(shmem_long_atomic_fetch(&global_counter, 0) == (long)n * kAdds, "atomic fetch");

  /* wait_until on a static flag set by the left neighbour. */
  shmem_uint64_atomic_set(&static_flag, (uint64_t)me + 1, right);
  shmem_uint64_wait_until(&static_flag, SHMEM_CMP_EQ, (uint64_t)left + 1);
  /* The same through a signal on static data. */
  shmem_barrier_all();
  static_flag = 0;
  shmem_barrier_all();
  const int payload = 4242 + me;
  shmem_int_put_signal(&global_table[1], &payload, 1, &static_flag, 7, SHMEM_SIGNAL_SET, right);
  CHECK(shmem_signal_wait_until(&static_flag, SHMEM_CMP_EQ, 7) == 7, "signal value");
  CHECK(global_table[1] == 4242 + left, "data before signal: %d", global_table[1]);

  /* A lock in static data guarding a read-modify-write by RMA. */
  enum { kRounds = 20 };
  for (int i = 0; i < kRounds; ++i) {
    shmem_set_lock(&static_lock);
    const long v = shmem_long_g(&shared_total, 0);
    shmem_long_p(&shared_total, v + 1, 0);
    shmem_quiet();
    shmem_clear_lock(&static_lock);
  }
  shmem_barrier_all();
  if (me == 0) CHECK(shared_total == (long)n * kRounds, "locked total %ld", shared_total);
  shmem_barrier_all();
  TEST_DONE("statics");
  shmem_finalize();
  return 0;
}
