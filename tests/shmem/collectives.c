/* Team collectives (OpenSHMEM 1.5, 9.9): sync, broadcast, collect,
 * fcollect, alltoall, alltoalls (typed and mem forms) and every reduction
 * (and, or, xor, max, min, sum, prod) on every type its table lists, complex
 * included; on SHMEM_TEAM_WORLD and on a team of the even PEs; in place and
 * through the C11 generic names.  Every call must return 0. */
#include "shmem_test.h"

#include <complex.h>

enum { kN = 5 };
static int me, n;
static void *src_area, *dst_area; /* symmetric scratch */

#define BIT_TYPES(X)                                                                   \
  X(unsigned char, uchar) X(unsigned short, ushort) X(unsigned int, uint)             \
  X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int8_t, int8)             \
  X(int16_t, int16) X(int32_t, int32) X(int64_t, int64) X(uint8_t, uint8)              \
  X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size)
#define MINMAX_TYPES(X)                                                                \
  X(char, char) X(signed char, schar) X(short, short) X(int, int) X(long, long)        \
  X(long long, longlong) X(ptrdiff_t, ptrdiff) X(unsigned char, uchar)                 \
  X(unsigned short, ushort) X(unsigned int, uint) X(unsigned long, ulong)              \
  X(unsigned long long, ulonglong) X(int8_t, int8) X(int16_t, int16) X(int32_t, int32) \
  X(int64_t, int64) X(uint8_t, uint8) X(uint16_t, uint16) X(uint32_t, uint32)          \
  X(uint64_t, uint64) X(size_t, size) X(float, float) X(double, double)                \
  X(long double, longdouble)
#define COMPLEX_TYPES(X) X(float _Complex, complexf) X(double _Complex, complexd)

/* The team's PEs in world numbers: start + i * stride, i < size. */
typedef struct {
  shmem_team_t team;
  int start, stride, size, my;
} Team;

static int bitval(int pe, int j) { return (1 << (pe % 6)) | (j << 3) | 1; }
static int smallval(int pe, int j) { return pe % 3 + j % 2 + 1; }

#define TEST_BIT(T, N)                                                                  \
  static void bit_##N(const Team *t) {                                                  \
    T *src = src_area, *dst = dst_area;                                                 \
    for (int j = 0; j < kN; ++j) src[j] = (T)bitval(me, j);                             \
    T want_and[kN], want_or[kN], want_xor[kN];                                          \
    for (int j = 0; j < kN; ++j) {                                                      \
      want_and[j] = (T)~(T)0;                                                           \
      want_or[j] = want_xor[j] = 0;                                                     \
      for (int i = 0; i < t->size; ++i) {                                               \
        const T v = (T)bitval(t->start + i * t->stride, j);                             \
        want_and[j] &= v;                                                               \
        want_or[j] |= v;                                                                \
        want_xor[j] ^= v;                                                               \
      }                                                                                 \
    }                                                                                   \
    CHECK(shmem_##N##_and_reduce(t->team, dst, src, kN) == 0, #N "_and_reduce rc");     \
    for (int j = 0; j < kN; ++j) CHECK(dst[j] == want_and[j], #N "_and_reduce [%d]", j); \
    CHECK(shmem_##N##_or_reduce(t->team, dst, src, kN) == 0, #N "_or_reduce rc");       \
    for (int j = 0; j < kN; ++j) CHECK(dst[j] == want_or[j], #N "_or_reduce [%d]", j);  \
    CHECK(shmem_##N##_xor_reduce(t->team, dst, src, kN) == 0, #N "_xor_reduce rc");     \
    for (int j = 0; j < kN; ++j) CHECK(dst[j] == want_xor[j], #N "_xor_reduce [%d]", j); \
  }
BIT_TYPES(TEST_BIT)

#define TEST_ARITH(T, N)                                                                \
  static void arith_##N(const Team *t, int with_minmax) {                               \
    T *src = src_area, *dst = dst_area;                                                 \
    for (int j = 0; j < kN; ++j) src[j] = (T)smallval(me, j);                           \
    T want_sum[kN], want_prod[kN];                                                      \
    for (int j = 0; j < kN; ++j) {                                                      \
      want_sum[j] = 0;                                                                  \
      want_prod[j] = 1;                                                                 \
      for (int i = 0; i < t->size; ++i) {                                               \
        want_sum[j] += (T)smallval(t->start + i * t->stride, j);                        \
        want_prod[j] *= (T)smallval(t->start + i * t->stride, j);                       \
      }                                                                                 \
    }                                                                                   \
    CHECK(shmem_##N##_sum_reduce(t->team, dst, src, kN) == 0, #N "_sum_reduce rc");     \
    for (int j = 0; j < kN; ++j) CHECK(dst[j] == want_sum[j], #N "_sum_reduce [%d]", j); \
    CHECK(shmem_##N##_prod_reduce(t->team, dst, src, kN) == 0, #N "_prod_reduce rc");   \
    for (int j = 0; j < kN; ++j) CHECK(dst[j] == want_prod[j], #N "_prod_reduce [%d]", j); \
    (void)with_minmax;                                                                  \
  }
#define TEST_MINMAX(T, N)                                                               \
  TEST_ARITH(T, N)                                                                      \
  static void minmax_##N(const Team *t) {                                               \
    T *src = src_area, *dst = dst_area;                                                 \
    T lo[kN], hi[kN];                                                                   \
    for (int j = 0; j < kN; ++j) {                                                      \
      src[j] = (T)((me * 7 + j * 3) % 11);                                              \
      lo[j] = (T)100;                                                                   \
      hi[j] = 0;                                                                        \
      for (int i = 0; i < t->size; ++i) {                                               \
        const T v = (T)(((t->start + i * t->stride) * 7 + j * 3) % 11);                 \
        if (v < lo[j]) lo[j] = v;                                                       \
        if (v > hi[j]) hi[j] = v;                                                       \
      }                                                                                 \
    }                                                                                   \
    CHECK(shmem_##N##_max_reduce(t->team, dst, src, kN) == 0, #N "_max_reduce rc");     \
    for (int j = 0; j < kN; ++j) CHECK(dst[j] == hi[j], #N "_max_reduce [%d]", j);      \
    CHECK(shmem_##N##_min_reduce(t->team, dst, src, kN) == 0, #N "_min_reduce rc");     \
    for (int j = 0; j < kN; ++j) CHECK(dst[j] == lo[j], #N "_min_reduce [%d]", j);      \
    arith_##N(t, 1);                                                                    \
  }
MINMAX_TYPES(TEST_MINMAX)
COMPLEX_TYPES(TEST_ARITH)

static void complex_values(const Team *t) {
  /* Products of complex numbers, not only of reals. */
  double _Complex *src = src_area, *dst = dst_area;
  src[0] = (double)(me + 1) + 1.0 * I;
  double _Complex want = 1;
  for (int i = 0; i < t->size; ++i) want *= (double)(t->start + i * t->stride + 1) + 1.0 * I;
  CHECK(shmem_complexd_prod_reduce(t->team, dst, src, 1) == 0, "complexd prod rc");
  CHECK(dst[0] == want, "complexd prod (%g, %g), want (%g, %g)", creal(dst[0]), cimag(dst[0]),
        creal(want), cimag(want));
}

static void data_movement(const Team *t) {
  long *src = src_area, *dst = dst_area;
  /* broadcast from each root in turn (typed, mem, generic). */
  for (int root = 0; root < t->size; ++root) {
    for (int j = 0; j < 8; ++j) src[j] = 1000 * (t->start + root * t->stride) + j;
    memset(dst, 0, 8 * sizeof(long));
    CHECK(shmem_long_broadcast(t->team, dst, src, 8, root) == 0, "long_broadcast rc");
    if (t->my != root)
      for (int j = 0; j < 8; ++j)
        CHECK(dst[j] == 1000 * (t->start + root * t->stride) + j, "broadcast from %d [%d]", root, j);
    memset(dst, 0, 8 * sizeof(long));
    CHECK(shmem_broadcastmem(t->team, dst, src, 3 * sizeof(long), root) == 0, "broadcastmem rc");
    if (t->my != root)
      CHECK(dst[2] == 1000 * (t->start + root * t->stride) + 2 && dst[3] == 0, "broadcastmem");
    CHECK(shmem_broadcast(t->team, dst, src, 1, root) == 0, "generic broadcast rc");
  }
  /* collect: team PE i brings i + 1 elements. */
  const int mine = t->my + 1;
  for (int j = 0; j < mine; ++j) src[j] = 100 * t->my + j;
  CHECK(shmem_long_collect(t->team, dst, src, (size_t)mine) == 0, "long_collect rc");
  int k = 0;
  for (int i = 0; i < t->size; ++i)
    for (int j = 0; j <= i; ++j, ++k) CHECK(dst[k] == 100 * i + j, "collect [%d]", k);
  CHECK(shmem_collectmem(t->team, dst, src, (size_t)mine * sizeof(long)) == 0, "collectmem rc");
  CHECK(dst[k - 1] == 100 * (t->size - 1) + t->size - 1, "collectmem last");
  /* fcollect: 4 each. */
  for (int j = 0; j < 4; ++j) src[j] = 10 * t->my + j;
  CHECK(shmem_long_fcollect(t->team, dst, src, 4) == 0, "long_fcollect rc");
  for (int i = 0; i < t->size; ++i)
    for (int j = 0; j < 4; ++j) CHECK(dst[4 * i + j] == 10 * i + j, "fcollect [%d]", 4 * i + j);
  CHECK(shmem_fcollectmem(t->team, dst, src, 2 * sizeof(long)) == 0, "fcollectmem rc");
  CHECK(dst[2 * t->size - 1] == 10 * (t->size - 1) + 1, "fcollectmem");
  /* alltoall: block i of my source goes to team PE i. */
  for (int i = 0; i < t->size; ++i)
    for (int j = 0; j < 3; ++j) src[3 * i + j] = 10000 * t->my + 100 * i + j;
  CHECK(shmem_long_alltoall(t->team, dst, src, 3) == 0, "long_alltoall rc");
  for (int i = 0; i < t->size; ++i)
    for (int j = 0; j < 3; ++j)
      CHECK(dst[3 * i + j] == 10000 * i + 100 * t->my + j, "alltoall from %d [%d]", i, j);
  CHECK(shmem_alltoallmem(t->team, dst, src, 3 * sizeof(long)) == 0, "alltoallmem rc");
  CHECK(dst[3 * (t->size - 1)] == 10000 * (t->size - 1) + 100 * t->my, "alltoallmem");
  /* alltoalls: strides 2 (dest) and 3 (source), 2 elements per PE. */
  for (int i = 0; i < 3 * 2 * t->size; ++i) src[i] = 7000 * t->my + i;
  memset(dst, 0, 4 * (size_t)t->size * sizeof(long));
  CHECK(shmem_long_alltoalls(t->team, dst, src, 2, 3, 2) == 0, "long_alltoalls rc");
  for (int i = 0; i < t->size; ++i)
    for (int j = 0; j < 2; ++j)
      /* element j of PE i's block for me: source index (my*2 + j) * 3 */
      CHECK(dst[(i * 2 + j) * 2] == 7000 * i + (t->my * 2 + j) * 3, "alltoalls from %d [%d]",
            i, j);
  CHECK(shmem_team_sync(t->team) == 0, "team_sync rc");
}

static void in_place_and_generic(const Team *t) {
  int *buf = dst_area;
  for (int j = 0; j < kN; ++j) buf[j] = me + j;
  CHECK(shmem_int_sum_reduce(t->team, buf, buf, kN) == 0, "in-place sum rc");
  int want = 0;
  for (int i = 0; i < t->size; ++i) want += t->start + i * t->stride;
  for (int j = 0; j < kN; ++j) CHECK(buf[j] == want + t->size * j, "in-place sum [%d]", j);
  double *d = src_area, *e = dst_area;
  d[0] = me;
  CHECK(shmem_max_reduce(t->team, e, d, 1) == 0, "generic max rc");
  CHECK(e[0] == t->start + (t->size - 1) * t->stride, "generic max %g", e[0]);
}

static void run_on(const Team *t) {
#define CALL_BIT(T, N) bit_##N(t);
#define CALL_MINMAX(T, N) minmax_##N(t);
#define CALL_COMPLEX(T, N) arith_##N(t, 0);
  BIT_TYPES(CALL_BIT)
  MINMAX_TYPES(CALL_MINMAX)
  COMPLEX_TYPES(CALL_COMPLEX)
  complex_values(t);
  data_movement(t);
  in_place_and_generic(t);
}

int main(void) {
  shmem_init();
  me = shmem_my_pe();
  n = shmem_n_pes();
  src_area = shmem_calloc(64 * (size_t)n, sizeof(long double));
  dst_area = shmem_calloc(64 * (size_t)n, sizeof(long double));
  CHECK(src_area && dst_area, "allocation");
  const Team world = {SHMEM_TEAM_WORLD, 0, 1, n, me};
  run_on(&world);
  shmem_team_t evens = SHMEM_TEAM_INVALID;
  shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, NULL, 0, &evens);
  if (me % 2 == 0) {
    const Team t = {evens, 0, 2, (n + 1) / 2, me / 2};
    run_on(&t);
    shmem_team_destroy(evens);
  }
  shmem_barrier_all();
  shmem_free(dst_area);
  shmem_free(src_area);
  TEST_DONE("collectives");
  shmem_finalize();
  return 0;
}
