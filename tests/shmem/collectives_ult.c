/* Collectives inside user-level threads: a team or active-set collective
 * called from a tsunagi ULT suspends that ULT while it waits for the other
 * PEs, and its worker runs the others.
 *
 * Every PE runs ONE worker.  On PE 0, ULT A enters a collective first; ULT B,
 * created after A on the same worker, then puts a flag on every other PE, and
 * only then do they enter the collective.  A collective that held PE 0's
 * worker would never let B run: the job would hang (the test's timeout fails
 * it).  Phases: shmem_barrier_all, a team reduction, a team broadcast, the
 * active-set barrier of every PE and, on 3 PEs or more, an active-set
 * reduction over PEs 0 and 1 (the set's own RMA path). */
#include "shmem_test.h"

#include <tsunagi/ult.h>

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

enum { kPhases = 5 };

static long go[kPhases];       /* set on PEs 1.. by PE 0's ULT B */
static long pSync[SHMEM_REDUCE_SYNC_SIZE];
static long pWrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static long src[4], dst[4];
static int me, npes;

/* Phase p's collective, as every PE calls it. */
static void collective(int phase) {
  switch (phase) {
    case 0:
      shmem_barrier_all();
      break;
    case 1:
      src[0] = me + 1;
      CHECK(shmem_long_sum_reduce(SHMEM_TEAM_WORLD, dst, src, 1) == 0, "sum_reduce");
      CHECK(dst[0] == (long)npes * (npes + 1) / 2, "sum_reduce: %ld", dst[0]);
      break;
    case 2:
      src[0] = 42 + me;
      CHECK(shmem_long_broadcast(SHMEM_TEAM_WORLD, dst, src, 1, 0) == 0, "broadcast");
      CHECK(dst[0] == 42, "broadcast: %ld", dst[0]);
      break;
    case 3:
      shmem_barrier(0, 0, npes, pSync);
      break;
    case 4:
      if (me < 2) {
        src[0] = 10 + me;
        shmem_long_sum_to_all(dst, src, 1, 0, 0, 2, pWrk, pSync);
        CHECK(dst[0] == 21, "sum_to_all over PEs 0 and 1: %ld", dst[0]);
      }
      break;
  }
}

static int phase_runs(int phase) { return phase < 4 || npes >= 3; }

static void *ult_a(void *arg) {
  collective((int)(intptr_t)arg);
  return NULL;
}

static void *ult_b(void *arg) {
  const int phase = (int)(intptr_t)arg;
  for (int pe = 1; pe < npes; ++pe) shmem_long_p(&go[phase], 1, pe);
  shmem_quiet();
  return NULL;
}

int main(void) {
  int provided = -1;
  CHECK(shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided) == 0 &&
            provided == SHMEM_THREAD_MULTIPLE,
        "SHMEM_THREAD_MULTIPLE");
  me = shmem_my_pe();
  npes = shmem_n_pes();
  if (npes < 2) {
    TEST_DONE("collectives_ult (needs 2 PEs: nothing to do)");
    shmem_finalize();
    return 0;
  }
  tsu_ult_config_t cfg = {0};
  cfg.struct_size = sizeof cfg;
  cfg.field_mask = TSU_ULT_CONFIG_WORKERS;
  cfg.workers = 1;
  CHECK(tsu_ult_init(&cfg) == TSU_OK, "tsu_ult_init");
  shmem_barrier_all();

  for (int phase = 0; phase < kPhases; ++phase) {
    if (!phase_runs(phase)) continue;
    if (me == 0) {
      tsu_ult_t a, b;
      CHECK(tsu_ult_create(&a, NULL, ult_a, (void *)(intptr_t)phase) == TSU_OK, "create A");
      CHECK(tsu_ult_create(&b, NULL, ult_b, (void *)(intptr_t)phase) == TSU_OK, "create B");
      CHECK(tsu_ult_join(a, NULL) == TSU_OK && tsu_ult_join(b, NULL) == TSU_OK, "join");
    } else {
      shmem_long_wait_until(&go[phase], SHMEM_CMP_EQ, 1);
      collective(phase);
    }
  }

  shmem_barrier_all();
  CHECK(tsu_ult_finalize() == TSU_OK, "tsu_ult_finalize");
  shmem_barrier_all();
  TEST_DONE("collectives_ult");
  shmem_finalize();
  return 0;
}
