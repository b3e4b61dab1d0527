/* SHMEM inside tsunagi's user-level threads (issue 45, item 6): on one
 * worker (TSU_ULT_WORKERS=1), K threads each count themselves in and wait
 * in shmem_long_wait_until on a flag of their own; no flag is set before all
 * K are waiting at once, which only threads that suspend in the wait allow
 * (one holding the worker would keep the others from starting, and the
 * test's time limit would end the hung job).  The left neighbour's main
 * thread then sets the flags last to first, each after the previous one's
 * thread acknowledged with a put.  The threads also make blocking gets and
 * atomics.  Needs SHMEM_THREAD_MULTIPLE (the workers are threads of their
 * own). */
#include "shmem_test.h"

#include <tsunagi/ult.h>

enum { kThreads = 64 };
static long flags[kThreads], acks[kThreads];
static long done, started;
static int me, n;

static void *waiter(void *arg) {
  const int i = (int)(intptr_t)arg;
  const int left = (me + n - 1) % n;
  shmem_long_atomic_inc(&started, me);
  shmem_long_wait_until(&flags[i], SHMEM_CMP_EQ, 1);
  /* A blocking get and atomic from the thread, then the acknowledgement. */
  CHECK(shmem_long_g(&flags[i], left) >= 0, "get from a thread");
  shmem_long_atomic_inc(&done, 0);
  shmem_long_p(&acks[i], 1, left);
  shmem_quiet();
  return NULL;
}

int main(void) {
  int provided = -1;
  shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
  CHECK(provided == SHMEM_THREAD_MULTIPLE, "provided %d", provided);
  me = shmem_my_pe();
  n = shmem_n_pes();
  CHECK(tsu_ult_init(NULL) == TSU_OK, "tsu_ult_init");
  tsu_ult_t t[kThreads];
  for (int i = 0; i < kThreads; ++i)
    CHECK(tsu_ult_create(&t[i], NULL, waiter, (void *)(intptr_t)i) == TSU_OK, "tsu_ult_create");
  shmem_long_wait_until(&started, SHMEM_CMP_EQ, kThreads);  /* all waiting at once */
  shmem_barrier_all();
  /* Set the right neighbour's flags, last first, each after the previous
   * one's thread acknowledged. */
  const int right = (me + 1) % n;
  for (int i = kThreads - 1; i >= 0; --i) {
    shmem_long_p(&flags[i], 1, right);
    shmem_quiet();
    shmem_long_wait_until(&acks[i], SHMEM_CMP_EQ, 1);
  }
  for (int i = 0; i < kThreads; ++i) CHECK(tsu_ult_join(t[i], NULL) == TSU_OK, "tsu_ult_join");
  shmem_barrier_all();
  if (me == 0) CHECK(done == (long)n * kThreads, "done %ld", done);
  CHECK(tsu_ult_finalize() == TSU_OK, "tsu_ult_finalize");
  shmem_barrier_all();
  TEST_DONE("ult_wait");
  shmem_finalize();
  return 0;
}
