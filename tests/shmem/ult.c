/* SHMEM inside user-level threads: a blocking SHMEM call made from a tsunagi
 * ULT suspends that ULT and lets its worker run the others.
 *
 * PE 0 runs kThreads ULTs on ONE worker; ULT i waits for flags[i], which
 * PE 1 sets in reverse order (the last-started ULT's flag first), setting the
 * next only once the ULT it released has reported back.  A wait that held
 * the worker would stop the first ULT from ever letting the others run, and
 * PE 1 would never see the report it waits for (the test's timeout fails it).
 * Each ULT also does a blocking get and a fetch-add, which must not hold the
 * worker either. */
#include <shmem.h>
#include <tsunagi/ult.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { kThreads = 64 };

static long flags[kThreads];   /* static data: symmetric */
static long reports;           /* on PE 1: how many ULTs finished */
static long values[kThreads];

#define CHECK(c)                                                                  \
  do {                                                                            \
    if (!(c)) {                                                                   \
      fprintf(stderr, "PE %d: line %d: %s\n", shmem_my_pe(), __LINE__, #c);       \
      shmem_global_exit(1);                                                       \
    }                                                                             \
  } while (0)

static void *waiter(void *arg) {
  const int i = (int)(intptr_t)arg;
  shmem_long_wait_until(&flags[i], SHMEM_CMP_EQ, 1);
  const long v = shmem_long_g(&values[i], 1);
  CHECK(v == 1000 + i);
  shmem_long_atomic_fetch_add(&reports, 1, 1);
  return NULL;
}

int main(void) {
  shmem_init();
  const int me = shmem_my_pe();
  if (shmem_n_pes() != 2) {
    if (me == 0) fprintf(stderr, "needs exactly 2 PEs\n");
    shmem_finalize();
    return 1;
  }
  for (int i = 0; i < kThreads; ++i) values[i] = 1000 + i;
  shmem_barrier_all();
  /* tsu_ult_init is collective: every PE starts its scheduler. */
  tsu_ult_config_t cfg = {0};
  cfg.struct_size = sizeof cfg;
  cfg.field_mask = TSU_ULT_CONFIG_WORKERS;
  cfg.workers = 1;
  CHECK(tsu_ult_init(&cfg) == TSU_OK);
  if (me == 0) {
    tsu_ult_t threads[kThreads];
    for (int i = 0; i < kThreads; ++i)
      CHECK(tsu_ult_create(&threads[i], NULL, waiter, (void *)(intptr_t)i) == TSU_OK);
    for (int i = 0; i < kThreads; ++i) CHECK(tsu_ult_join(threads[i], NULL) == TSU_OK);
  } else {
    for (int i = kThreads - 1; i >= 0; --i) {
      shmem_long_p(&flags[i], 1, 0);
      shmem_long_wait_until(&reports, SHMEM_CMP_EQ, (long)(kThreads - i));
    }
  }
  shmem_barrier_all();
  CHECK(tsu_ult_finalize() == TSU_OK);
  shmem_barrier_all();
  if (me == 1) printf("%d ULTs waited on PE 0's worker without holding it\n", kThreads);
  shmem_finalize();
  return 0;
}
