/* The active-set collectives (deprecated in OpenSHMEM 1.5, still in wide
 * use): barrier, sync, broadcast32/64, collect32/64, fcollect32/64,
 * alltoall32/64, alltoalls32/64 and the *_to_all reductions on every type
 * they list, with pSync and pWrk in static data as most programs keep them;
 * over all PEs and over the even PEs (logPE_stride 1). */
#include "shmem_test.h"

#include <complex.h>

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

enum { kN = 6, kSyncLen = SHMEM_BCAST_SYNC_SIZE + SHMEM_REDUCE_SYNC_SIZE + SHMEM_SYNC_SIZE +
                         SHMEM_COLLECT_SYNC_SIZE + SHMEM_ALLTOALL_SYNC_SIZE +
                         SHMEM_ALLTOALLS_SYNC_SIZE + SHMEM_BARRIER_SYNC_SIZE };
static long pSync[3][kSyncLen];
static long double pWrk_area[kN / 2 + 1 + SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static long double src_area[64 * 16], dst_area[64 * 16];
static int me, n, turn;

typedef struct { int start, log_stride, size, my; } Set;

/* The pSync of the next collective (two in turn) after a barrier of the set
 * on the third, so that no PE is still in a collective that used it. */
static long *next_psync(const Set *s) {
  shmem_barrier(s->start, s->log_stride, s->size, pSync[2]);
  return pSync[turn++ % 2];
}
static int pe_of(const Set *s, int i) { return s->start + (i << s->log_stride); }
static int val(int pe, int j) { return pe % 3 + j % 2 + 1; }

#define REDUCE(T, N, OP, EXPR)                                                          \
  do {                                                                                  \
    T *src = (T *)src_area, *dst = (T *)dst_area, want[kN];                             \
    for (int j = 0; j < kN; ++j) {                                                      \
      src[j] = (T)val(me, j);                                                           \
      want[j] = (T)val(pe_of(s, 0), j);                                                 \
      for (int i = 1; i < s->size; ++i) {                                               \
        const T a = want[j], b = (T)val(pe_of(s, i), j);                                \
        want[j] = (T)(EXPR);                                                            \
      }                                                                                 \
    }                                                                                   \
    shmem_##N##_##OP##_to_all(dst, src, kN, s->start, s->log_stride, s->size,           \
                              (T *)pWrk_area, next_psync(s));                           \
    for (int j = 0; j < kN; ++j) CHECK(dst[j] == want[j], "%s [%d]", "shmem_" #N "_" #OP "_to_all", j); \
  } while (0)

#define BITWISE(T, N)                                   \
  static void bit_##N(const Set *s) {                   \
    REDUCE(T, N, and, a & b);                           \
    REDUCE(T, N, or, a | b);                            \
    REDUCE(T, N, xor, a ^ b);                           \
  }
#define ARITH(T, N)                                     \
  static void arith_##N(const Set *s) {                 \
    REDUCE(T, N, sum, a + b);                           \
    REDUCE(T, N, prod, a * b);                          \
  }
#define MINMAX(T, N)                                    \
  ARITH(T, N)                                           \
  static void minmax_##N(const Set *s) {                \
    REDUCE(T, N, max, a > b ? a : b);                   \
    REDUCE(T, N, min, a < b ? a : b);                   \
    arith_##N(s);                                       \
  }
BITWISE(short, short)
BITWISE(int, int)
BITWISE(long, long)
BITWISE(long long, longlong)
MINMAX(short, short)
MINMAX(int, int)
MINMAX(long, long)
MINMAX(long long, longlong)
MINMAX(float, float)
MINMAX(double, double)
MINMAX(long double, longdouble)
ARITH(float _Complex, complexf)
ARITH(double _Complex, complexd)

#define MOVE(BITS, T)                                                                   \
  static void move_##BITS(const Set *s) {                                               \
    T *src = (T *)src_area, *dst = (T *)dst_area;                                       \
    for (int root = 0; root < s->size; ++root) {                                        \
      for (int j = 0; j < kN; ++j) src[j] = (T)(1000 * pe_of(s, root) + j);             \
      memset(dst, 0, kN * sizeof(T));                                                   \
      shmem_broadcast##BITS(dst, src, kN, root, s->start, s->log_stride, s->size,       \
                            next_psync(s));                                             \
      if (s->my != root)                                                                \
        for (int j = 0; j < kN; ++j)                                                    \
          CHECK(dst[j] == (T)(1000 * pe_of(s, root) + j), "broadcast" #BITS " root %d", root); \
    }                                                                                   \
    for (int j = 0; j <= s->my; ++j) src[j] = (T)(100 * s->my + j);                     \
    shmem_collect##BITS(dst, src, (size_t)s->my + 1, s->start, s->log_stride, s->size,  \
                        next_psync(s));                                                 \
    for (int i = 0, k = 0; i < s->size; ++i)                                            \
      for (int j = 0; j <= i; ++j, ++k) CHECK(dst[k] == (T)(100 * i + j), "collect" #BITS); \
    for (int j = 0; j < 3; ++j) src[j] = (T)(10 * s->my + j);                           \
    shmem_fcollect##BITS(dst, src, 3, s->start, s->log_stride, s->size, next_psync(s)); \
    for (int i = 0; i < s->size; ++i)                                                   \
      for (int j = 0; j < 3; ++j) CHECK(dst[3 * i + j] == (T)(10 * i + j), "fcollect" #BITS); \
    for (int i = 0; i < 2 * s->size; ++i) src[i] = (T)(1000 * s->my + i);               \
    shmem_alltoall##BITS(dst, src, 2, s->start, s->log_stride, s->size, next_psync(s)); \
    for (int i = 0; i < s->size; ++i)                                                   \
      for (int j = 0; j < 2; ++j)                                                       \
        CHECK(dst[2 * i + j] == (T)(1000 * i + 2 * s->my + j), "alltoall" #BITS);       \
    for (int i = 0; i < 6 * s->size; ++i) src[i] = (T)(1000 * s->my + i);               \
    shmem_alltoalls##BITS(dst, src, 2, 3, 2, s->start, s->log_stride, s->size,          \
                          next_psync(s));                                               \
    for (int i = 0; i < s->size; ++i)                                                   \
      for (int j = 0; j < 2; ++j)                                                       \
        CHECK(dst[(2 * i + j) * 2] == (T)(1000 * i + (2 * s->my + j) * 3), "alltoalls" #BITS); \
  }
MOVE(32, int32_t)
MOVE(64, int64_t)

static void run_on(const Set *s) {
  bit_short(s); bit_int(s); bit_long(s); bit_longlong(s);
  minmax_short(s); minmax_int(s); minmax_long(s); minmax_longlong(s);
  minmax_float(s); minmax_double(s); minmax_longdouble(s);
  arith_complexf(s); arith_complexd(s);
  move_32(s);
  move_64(s);
  shmem_sync(s->start, s->log_stride, s->size, next_psync(s));
  shmem_barrier(s->start, s->log_stride, s->size, pSync[2]);
}

int main(void) {
  for (int k = 0; k < 3; ++k)
    for (int i = 0; i < kSyncLen; ++i) pSync[k][i] = SHMEM_SYNC_VALUE;
  shmem_init();
  me = shmem_my_pe();
  n = shmem_n_pes();
  const Set all = {0, 0, n, me};
  run_on(&all);
  shmem_barrier_all();
  if (me % 2 == 0) {
    const Set evens = {0, 1, (n + 1) / 2, me / 2};
    run_on(&evens);
  }
  shmem_sync_all();
  shmem_barrier_all();
  TEST_DONE("active_set");
  shmem_finalize();
  return 0;
}
