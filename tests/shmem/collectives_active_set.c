/* The deprecated active-set collectives (OpenSHMEM 1.5, 9.9 and Annex):
 * barrier, sync, broadcast32/64, collect32/64, fcollect32/64,
 * alltoall32/64, alltoalls32/64 and the *_to_all reductions, with pSync
 * and pWrk in static data (as most programs keep them), on the whole world
 * and on the strided set of odd PEs.  One pSync serves many collectives in a
 * row, of different kinds, with no barrier between them; after a last
 * barrier every element must be back at SHMEM_SYNC_VALUE. */
#include "shmem_test.h"

/* They are deprecated: that is what this test is about. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#include <complex.h>

#define N_MAX 64
#define NELEMS 19

static long pSync[SHMEM_REDUCE_SYNC_SIZE];
static long pSyncB[SHMEM_BARRIER_SYNC_SIZE];
static long pWrkL[NELEMS / 2 + 1 + SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static double pWrkD[NELEMS / 2 + 1 + SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static long double pWrkLD[NELEMS / 2 + 1 + SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static double _Complex pWrkZ[NELEMS / 2 + 1 + SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static short pWrkS[NELEMS / 2 + 1 + SHMEM_REDUCE_MIN_WRKDATA_SIZE];

static int32_t src32[N_MAX * NELEMS * 3], dst32[N_MAX * NELEMS * 3];
static int64_t src64[N_MAX * NELEMS * 3], dst64[N_MAX * NELEMS * 3];

static int me, npes;

/* Every collective of the set (start, log_stride, size), `iters` times. */
static void run_set(int start, int log_stride, int size, int iters) {
  const int stride = 1 << log_stride;
  const int idx = (me - start) / stride; /* my index in the set */
  for (int it = 0; it < iters; ++it) {
    shmem_barrier(start, log_stride, size, pSyncB);

    /* broadcast: the root's dest is left alone. */
    const int root = it % size;
    for (int i = 0; i < NELEMS; ++i) src64[i] = 1000 * it + 10 * idx + i, dst64[i] = -1;
    shmem_broadcast64(dst64, src64, NELEMS, root, start, log_stride, size, pSync);
    for (int i = 0; i < NELEMS; ++i)
      CHECK(dst64[i] == (idx == root ? -1 : 1000 * it + 10 * root + i),
            "broadcast64 it %d root %d [%d] = %lld", it, root, i, (long long)dst64[i]);
    for (int i = 0; i < NELEMS; ++i) src32[i] = it + idx, dst32[i] = -1;
    shmem_broadcast32(dst32, src32, NELEMS, size - 1, start, log_stride, size, pSync);
    for (int i = 0; i < NELEMS; ++i)
      CHECK(dst32[i] == (idx == size - 1 ? -1 : it + size - 1), "broadcast32 [%d]", i);

    /* collect: index k gives k elements. */
    for (int i = 0; i < idx; ++i) src32[i] = 100 * idx + i + it;
    shmem_collect32(dst32, src32, (size_t)idx, start, log_stride, size, pSync);
    for (int p = 0, k = 0; p < size; ++p)
      for (int i = 0; i < p; ++i, ++k)
        CHECK(dst32[k] == 100 * p + i + it, "collect32 it %d: [%d] = %d", it, k, dst32[k]);
    for (int i = 0; i < 2; ++i) src64[i] = idx + it;
    shmem_collect64(dst64, src64, 2, start, log_stride, size, pSync);
    for (int k = 0; k < 2 * size; ++k) CHECK(dst64[k] == k / 2 + it, "collect64 [%d]", k);

    /* fcollect */
    for (int i = 0; i < NELEMS; ++i) src32[i] = 7 * idx + i - it;
    shmem_fcollect32(dst32, src32, NELEMS, start, log_stride, size, pSync);
    for (int p = 0; p < size; ++p)
      for (int i = 0; i < NELEMS; ++i)
        CHECK(dst32[p * NELEMS + i] == 7 * p + i - it, "fcollect32 %d [%d]", p, i);
    src64[0] = idx * 3 + it;
    shmem_fcollect64(dst64, src64, 1, start, log_stride, size, pSync);
    for (int p = 0; p < size; ++p) CHECK(dst64[p] == p * 3 + it, "fcollect64 [%d]", p);

    /* alltoall */
    for (int j = 0; j < size; ++j)
      for (int i = 0; i < 2; ++i) src64[j * 2 + i] = 10000 * idx + 100 * j + i + it;
    shmem_alltoall64(dst64, src64, 2, start, log_stride, size, pSync);
    for (int p = 0; p < size; ++p)
      for (int i = 0; i < 2; ++i)
        CHECK(dst64[p * 2 + i] == 10000 * p + 100 * idx + i + it, "alltoall64 %d [%d]", p, i);
    for (int j = 0; j < size; ++j) src32[j] = 100 * idx + j;
    shmem_alltoall32(dst32, src32, 1, start, log_stride, size, pSync);
    for (int p = 0; p < size; ++p) CHECK(dst32[p] == 100 * p + idx, "alltoall32 [%d]", p);

    /* alltoalls: 3 elements a block, source stride 2, dest stride 3. */
    for (int j = 0; j < size; ++j)
      for (int e = 0; e < 3; ++e) src32[(j * 3 + e) * 2] = 1000 * idx + 10 * j + e;
    shmem_alltoalls32(dst32, src32, 3, 2, 3, start, log_stride, size, pSync);
    for (int p = 0; p < size; ++p)
      for (int e = 0; e < 3; ++e)
        CHECK(dst32[(p * 3 + e) * 3] == 1000 * p + 10 * idx + e, "alltoalls32 %d [%d]", p, e);
    for (int j = 0; j < size; ++j) src64[j * 2] = 1000 * idx + j;
    shmem_alltoalls64(dst64, src64, 1, 2, 1, start, log_stride, size, pSync);
    for (int p = 0; p < size; ++p) CHECK(dst64[p] == 1000 * p + idx, "alltoalls64 [%d]", p);

    /* Reductions, in place for some. */
    static long ls[NELEMS], ld[NELEMS];
    for (int i = 0; i < NELEMS; ++i) ls[i] = idx + i;
    shmem_long_sum_to_all(ld, ls, NELEMS, start, log_stride, size, pWrkL, pSync);
    for (int i = 0; i < NELEMS; ++i)
      CHECK(ld[i] == (long)size * (size - 1) / 2 + (long)size * i, "long sum [%d] = %ld", i, ld[i]);
    shmem_long_max_to_all(ls, ls, NELEMS, start, log_stride, size, pWrkL, pSync);
    for (int i = 0; i < NELEMS; ++i) CHECK(ls[i] == size - 1 + i, "long max in place [%d]", i);
    for (int i = 0; i < NELEMS; ++i) ls[i] = 1L << (idx % 60);
    shmem_long_xor_to_all(ld, ls, NELEMS, start, log_stride, size, pWrkL, pSync);
    long x = 0;
    for (int p = 0; p < size; ++p) x ^= 1L << (p % 60);
    for (int i = 0; i < NELEMS; ++i) CHECK(ld[i] == x, "long xor [%d]", i);
    static short ss[NELEMS], sd[NELEMS];
    for (int i = 0; i < NELEMS; ++i) ss[i] = (short)(idx % 2 + 1);
    shmem_short_prod_to_all(sd, ss, NELEMS, start, log_stride, size, pWrkS, pSync);
    for (int i = 0; i < NELEMS; ++i) CHECK(sd[i] == 1 << (size / 2), "short prod [%d]", i);
    static double dsrc[NELEMS], ddst[NELEMS];
    for (int i = 0; i < NELEMS; ++i) dsrc[i] = -idx - 0.5 * i;
    shmem_double_min_to_all(ddst, dsrc, NELEMS, start, log_stride, size, pWrkD, pSync);
    for (int i = 0; i < NELEMS; ++i) CHECK(ddst[i] == -(size - 1) - 0.5 * i, "double min [%d]", i);
    static long double lds[1], ldd[1];
    lds[0] = 1.0L / (idx + 3);
    shmem_longdouble_sum_to_all(ldd, lds, 1, start, log_stride, size, pWrkLD, pSync);
    long double want = 0;
    for (int p = 0; p < size; ++p) want += 1.0L / (p + 3);
    CHECK(ldd[0] > want * (1 - 1e-15L) && ldd[0] < want * (1 + 1e-15L), "long double sum");
    static double _Complex zs[2], zd[2];
    zs[0] = 1.0 * I;
    zs[1] = (idx + 1) + 0.0 * I;
    shmem_complexd_prod_to_all(zd, zs, 2, start, log_stride, size, pWrkZ, pSync);
    double _Complex zw = 1, zw1 = 1;
    for (int p = 0; p < size; ++p) zw *= 1.0 * I, zw1 *= p + 1;
    CHECK(zd[0] == zw && zd[1] == zw1, "complexd prod");
  }
  shmem_barrier(start, log_stride, size, pSyncB);
  for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; ++i)
    CHECK(pSync[i] == SHMEM_SYNC_VALUE, "pSync[%d] = %ld after the set's last call", i, pSync[i]);
}

int main(void) {
  for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; ++i) pSync[i] = SHMEM_SYNC_VALUE;
  for (int i = 0; i < SHMEM_BARRIER_SYNC_SIZE; ++i) pSyncB[i] = SHMEM_SYNC_VALUE;
  shmem_init();
  me = shmem_my_pe();
  npes = shmem_n_pes();
  CHECK(npes <= N_MAX, "at most %d PEs", N_MAX);
  shmem_barrier_all();

  for (int i = 0; i < 100; ++i) shmem_barrier(0, 0, npes, pSyncB);
  for (int i = 0; i < 100; ++i) shmem_sync(0, 0, npes, pSyncB);

  run_set(0, 0, npes, 20); /* every PE (the library may use the world team) */
  shmem_barrier_all();     /* everyone checked its pSync before the next set uses it */
  /* All PEs but the last: a set the library must handle on its own. */
  if (npes >= 3 && me < npes - 1) run_set(0, 0, npes - 1, 20);
  shmem_barrier_all();
  /* The odd PEs: 1, 3, 5, ... (start 1, logPE_stride 1); the others wait. */
  if (npes >= 2 && me % 2 == 1) run_set(1, 1, npes / 2, 20);
  shmem_barrier_all();
  TEST_DONE("collectives_active_set");
  shmem_finalize();
  return 0;
}
