/* SHMEM_THREAD_MULTIPLE (OpenSHMEM 1.5, 9.2): several threads of each PE
 * share the default context at once: atomics from every thread of every PE
 * on one word add up, puts and gets of each thread land in its own slice,
 * shmem_quiet from any thread completes its puts, and wait_until in one
 * thread sees a flag another PE's thread sets.  Threads also use private
 * contexts of their own. */
#include "shmem_test.h"

#include <pthread.h>

enum { kThreads = 4, kIters = 200, kSlice = 256 };
static int me, n;
static long *counter, *slices, *flags;

static void *work(void *arg) {
  const int t = (int)(intptr_t)arg;
  const int right = (me + 1) % n;
  long src[kSlice], back[kSlice];
  for (int i = 0; i < kIters; ++i) {
    shmem_long_atomic_inc(&counter[0], 0);
    shmem_long_atomic_fetch_add(&counter[1], 2, (me + t) % n);
  }
  for (int r = 0; r < 10; ++r) {
    for (int i = 0; i < kSlice; ++i) src[i] = ((long)me << 32) | (t << 16) | (r << 8) | (i & 255);
    long *mine = &slices[(me * kThreads + t) * kSlice];  /* my slice on the right PE */
    if (r % 2) {
      shmem_long_put_nbi(mine, src, kSlice, right);
      shmem_quiet();
    } else {
      shmem_long_put(mine, src, kSlice, right);
    }
    shmem_long_get(back, mine, kSlice, right);
    for (int i = 0; i < kSlice; ++i)
      CHECK(back[i] == src[i], "thread %d round %d: got back %lx for %lx", t, r, back[i], src[i]);
  }
  /* A private context per thread. */
  shmem_ctx_t ctx;
  if (shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx) == 0) {
    for (int i = 0; i < kIters / 5; ++i) shmem_ctx_long_atomic_inc(ctx, &counter[2], 0);
    shmem_ctx_quiet(ctx);
    shmem_ctx_destroy(ctx);
  } else {
    for (int i = 0; i < kIters / 5; ++i) shmem_long_atomic_inc(&counter[2], 0);
  }
  /* Thread t of PE me raises flag t of PE right, then waits on its own. */
  shmem_long_atomic_set(&flags[t], me + 1, right);
  shmem_long_wait_until(&flags[t], SHMEM_CMP_EQ, (me + n - 1) % n + 1);
  return NULL;
}

int main(void) {
  int provided = -1;
  CHECK(shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided) == 0, "init_thread");
  CHECK(provided == SHMEM_THREAD_MULTIPLE, "provided %d", provided);
  me = shmem_my_pe();
  n = shmem_n_pes();
  counter = shmem_calloc(3, sizeof(long));
  slices = shmem_calloc((size_t)n * kThreads * kSlice, sizeof(long));
  flags = shmem_calloc(kThreads, sizeof(long));
  CHECK(counter && slices && flags, "allocation");
  pthread_t th[kThreads];
  for (int t = 0; t < kThreads; ++t)
    CHECK(pthread_create(&th[t], NULL, work, (void *)(intptr_t)t) == 0, "pthread_create");
  for (int t = 0; t < kThreads; ++t) pthread_join(th[t], NULL);
  shmem_barrier_all();
  if (me == 0) {
    CHECK(counter[0] == (long)n * kThreads * kIters, "counter %ld", counter[0]);
    CHECK(counter[2] == (long)n * kThreads * (kIters / 5), "private contexts' counter %ld",
          counter[2]);
  }
  /* counter[1]: each thread t of PE p added 2*kIters on PE (p+t)%n. */
  long want = 0;
  for (int p = 0; p < n; ++p)
    for (int t = 0; t < kThreads; ++t)
      if ((p + t) % n == me) want += 2 * kIters;
  CHECK(counter[1] == want, "counter[1] %ld, want %ld", counter[1], want);
  const int left = (me + n - 1) % n;
  for (int t = 0; t < kThreads; ++t)
    CHECK(slices[(left * kThreads + t) * kSlice + 7] ==
              (((long)left << 32) | (t << 16) | (9 << 8) | 7),
          "slice of thread %d", t);
  shmem_barrier_all();
  shmem_free(flags);
  shmem_free(slices);
  shmem_free(counter);
  TEST_DONE("threads");
  shmem_finalize();
  return 0;
}
