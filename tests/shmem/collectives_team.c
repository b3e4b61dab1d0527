/* The team collectives of OpenSHMEM 1.5 (9.9): sync, broadcast, collect,
 * fcollect, alltoall, alltoalls and the reductions on every type of their
 * tables, on SHMEM_TEAM_WORLD and on a team split from it, with the results
 * each PE can predict.  Run on 1, 2, 3 and 4 PEs (odd sizes exercise the
 * uneven trees and the short last team). */
#include "shmem_test.h"

#include <complex.h>
#include <stdint.h>

#define N_MAX 64 /* PEs this test supports */
#define NELEMS 37

static int me, npes;

/* Symmetric buffers: static data, and the heap (allocated by every PE in
 * main: shmem_malloc is collective over the world, not over a team). */
static long ssrc[NELEMS * N_MAX * 3], sdst[NELEMS * N_MAX * 3];
static long double rsrc[NELEMS], rdst[NELEMS]; /* reduction buffers, any type */

/* Broadcast from every root of `team` (the team form updates the root's
 * dest too), then collect, fcollect, alltoall and alltoalls, on `long`. */
static void data_movement(shmem_team_t team, long *src, long *dst) {
  const int tme = shmem_team_my_pe(team), tn = shmem_team_n_pes(team);

  for (int root = 0; root < tn; ++root) {
    for (int i = 0; i < NELEMS; ++i) src[i] = 1000L * tme + i, dst[i] = -1;
    CHECK(shmem_long_broadcast(team, dst, src, NELEMS, root) == 0, "broadcast");
    for (int i = 0; i < NELEMS; ++i)
      CHECK(dst[i] == 1000L * root + i, "broadcast root %d: dst[%d] = %ld", root, i, dst[i]);
  }
  /* broadcastmem: bytes. */
  char *cs = (char *)src, *cd = (char *)dst;
  for (int i = 0; i < 5; ++i) cs[i] = (char)('a' + tme), cd[i] = 0;
  CHECK(shmem_broadcastmem(team, cd, cs, 5, tn - 1) == 0, "broadcastmem");
  for (int i = 0; i < 5; ++i) CHECK(cd[i] == 'a' + tn - 1, "broadcastmem [%d]", i);

  /* collect: team PE p gives p + 1 elements, concatenated in team-PE order. */
  for (int i = 0; i <= tme; ++i) src[i] = 100L * tme + i;
  CHECK(shmem_long_collect(team, dst, src, (size_t)tme + 1) == 0, "collect");
  for (int p = 0, k = 0; p < tn; ++p)
    for (int i = 0; i <= p; ++i, ++k)
      CHECK(dst[k] == 100L * p + i, "collect: dst[%d] = %ld (PE %d, %d)", k, dst[k], p, i);
  /* ... and one PE gives nothing. */
  for (int i = 0; i < 3; ++i) src[i] = tme;
  CHECK(shmem_long_collect(team, dst, src, tme == 0 ? 0 : 3) == 0, "collect with an empty part");
  for (int k = 0; k < 3 * (tn - 1); ++k) CHECK(dst[k] == 1 + k / 3, "collect: dst[%d]", k);

  /* fcollect */
  for (int i = 0; i < NELEMS; ++i) src[i] = 7L * tme + i;
  CHECK(shmem_long_fcollect(team, dst, src, NELEMS) == 0, "fcollect");
  for (int p = 0; p < tn; ++p)
    for (int i = 0; i < NELEMS; ++i)
      CHECK(dst[p * NELEMS + i] == 7L * p + i, "fcollect: PE %d [%d]", p, i);

  /* alltoall: block j of my source goes to team PE j, into block tme. */
  for (int j = 0; j < tn; ++j)
    for (int i = 0; i < 3; ++i) src[j * 3 + i] = 10000L * tme + 100L * j + i;
  CHECK(shmem_long_alltoall(team, dst, src, 3) == 0, "alltoall");
  for (int p = 0; p < tn; ++p)
    for (int i = 0; i < 3; ++i)
      CHECK(dst[p * 3 + i] == 10000L * p + 100L * tme + i, "alltoall: from %d [%d]", p, i);

  /* alltoalls: 2 elements a block, source stride 3, dest stride 2. */
  for (int i = 0; i < NELEMS * N_MAX; ++i) dst[i] = -5;
  for (int j = 0; j < tn; ++j)
    for (int e = 0; e < 2; ++e) src[(j * 2 + e) * 3] = 10000L * tme + 100L * j + e;
  CHECK(shmem_long_alltoalls(team, dst, src, 2, 3, 2) == 0, "alltoalls");
  for (int p = 0; p < tn; ++p)
    for (int e = 0; e < 2; ++e) {
      CHECK(dst[(p * 2 + e) * 2] == 10000L * p + 100L * tme + e, "alltoalls: from %d [%d]", p, e);
      CHECK(dst[(p * 2 + e) * 2 + 1] == -5, "alltoalls wrote between the strided elements");
    }

  CHECK(shmem_team_sync(team) == 0, "team_sync");
}

/* Reductions: team PE p contributes (p + 1 + i) for sum/min/max, 1 or 2 for
 * prod, bit patterns for and/or/xor; dest = source (in place) on the second
 * pass. */
#define REDUCE_ORD_CHECK(T, N)                                                             \
  {                                                                                        \
    T *s = (T *)rsrc, *d = (T *)rdst;                                                      \
    for (int pass = 0; pass < 2; ++pass) {                                                 \
      T *out = pass ? s : d;                                                               \
      for (int i = 0; i < NELEMS; ++i) s[i] = (T)(tme + 1 + i % 5);                        \
      CHECK(shmem_##N##_max_reduce(team, out, s, NELEMS) == 0, #N " max");                 \
      for (int i = 0; i < NELEMS; ++i) CHECK(out[i] == (T)(tn + i % 5), #N " max [%d]", i); \
      for (int i = 0; i < NELEMS; ++i) s[i] = (T)(tme + 1 + i % 5);                        \
      CHECK(shmem_##N##_min_reduce(team, out, s, NELEMS) == 0, #N " min");                 \
      for (int i = 0; i < NELEMS; ++i) CHECK(out[i] == (T)(1 + i % 5), #N " min [%d]", i);  \
      for (int i = 0; i < NELEMS; ++i) s[i] = (T)(tme + 1 + i % 3);                        \
      CHECK(shmem_##N##_sum_reduce(team, out, s, NELEMS) == 0, #N " sum");                 \
      for (int i = 0; i < NELEMS; ++i)                                                     \
        CHECK(out[i] == (T)(tn * (tn + 1) / 2 + tn * (i % 3)), #N " sum [%d]", i);          \
      for (int i = 0; i < NELEMS; ++i) s[i] = (T)(tme % 2 + 1);                            \
      CHECK(shmem_##N##_prod_reduce(team, out, s, NELEMS) == 0, #N " prod");               \
      for (int i = 0; i < NELEMS; ++i) CHECK(out[i] == (T)(1 << (tn / 2)), #N " prod [%d]", i); \
    }                                                                                      \
  }

#define REDUCE_BIT_CHECK(T, N)                                                             \
  {                                                                                        \
    T *s = (T *)rsrc, *d = (T *)rdst;                                                      \
    for (int pass = 0; pass < 2; ++pass) {                                                 \
      T *out = pass ? s : d;                                                               \
      for (int i = 0; i < NELEMS; ++i) s[i] = (T)((1u << (tme % 7)) | 0x80u);              \
      CHECK(shmem_##N##_or_reduce(team, out, s, NELEMS) == 0, #N " or");                   \
      for (int i = 0; i < NELEMS; ++i) CHECK(out[i] == (T)(or_all | 0x80u), #N " or [%d]", i); \
      for (int i = 0; i < NELEMS; ++i) s[i] = (T)(~(1u << (tme % 7)));                     \
      CHECK(shmem_##N##_and_reduce(team, out, s, NELEMS) == 0, #N " and");                 \
      for (int i = 0; i < NELEMS; ++i) CHECK(out[i] == (T)~or_all, #N " and [%d]", i);     \
      for (int i = 0; i < NELEMS; ++i) s[i] = (T)(tme + i);                                \
      CHECK(shmem_##N##_xor_reduce(team, out, s, NELEMS) == 0, #N " xor");                 \
      for (int i = 0; i < NELEMS; ++i) {                                                   \
        unsigned x = 0;                                                                    \
        for (int p = 0; p < tn; ++p) x ^= (unsigned)(p + i);                               \
        CHECK(out[i] == (T)x, #N " xor [%d]", i);                                          \
      }                                                                                    \
    }                                                                                      \
  }

#define ORD_TYPES(X)                                                                       \
  X(char, char) X(signed char, schar) X(short, short) X(int, int) X(long, long)            \
  X(long long, longlong) X(ptrdiff_t, ptrdiff) X(unsigned char, uchar)                     \
  X(unsigned short, ushort) X(unsigned int, uint) X(unsigned long, ulong)                  \
  X(unsigned long long, ulonglong) X(int8_t, int8) X(int16_t, int16) X(int32_t, int32)     \
  X(int64_t, int64) X(uint8_t, uint8) X(uint16_t, uint16) X(uint32_t, uint32)              \
  X(uint64_t, uint64) X(size_t, size) X(float, float) X(double, double)                    \
  X(long double, longdouble)
#define BIT_TYPES(X)                                                                       \
  X(unsigned char, uchar) X(unsigned short, ushort) X(unsigned int, uint)                  \
  X(unsigned long, ulong) X(unsigned long long, ulonglong) X(int8_t, int8)                 \
  X(int16_t, int16) X(int32_t, int32) X(int64_t, int64) X(uint8_t, uint8)                  \
  X(uint16_t, uint16) X(uint32_t, uint32) X(uint64_t, uint64) X(size_t, size)

static void reductions(shmem_team_t team) {
  const int tme = shmem_team_my_pe(team), tn = shmem_team_n_pes(team);
  unsigned or_all = 0;
  for (int p = 0; p < tn; ++p) or_all |= 1u << (p % 7);
  ORD_TYPES(REDUCE_ORD_CHECK)
  BIT_TYPES(REDUCE_BIT_CHECK)

  /* Complex sum and product (the product is computed, not a sum of parts). */
  double _Complex *zs = (double _Complex *)rsrc, *zd = (double _Complex *)rdst;
  float _Complex *fs = (float _Complex *)(zs + 4), *fd = (float _Complex *)(zd + 4);
  for (int i = 0; i < 4; ++i) zs[i] = (tme + 1) + i * I, fs[i] = (float)(tme + 1) - 1.0f * I;
  CHECK(shmem_complexd_sum_reduce(team, zd, zs, 4) == 0, "complexd sum");
  CHECK(shmem_complexf_sum_reduce(team, fd, fs, 4) == 0, "complexf sum");
  for (int i = 0; i < 4; ++i) {
    CHECK(creal(zd[i]) == tn * (tn + 1) / 2 && cimag(zd[i]) == tn * i, "complexd sum [%d]", i);
    CHECK(crealf(fd[i]) == tn * (tn + 1) / 2 && cimagf(fd[i]) == -tn, "complexf sum [%d]", i);
  }
  for (int i = 0; i < 4; ++i) zs[i] = 1.0 * I, fs[i] = 1.0f + 1.0f * I;
  CHECK(shmem_complexd_prod_reduce(team, zd, zs, 4) == 0, "complexd prod");
  CHECK(shmem_complexf_prod_reduce(team, fd, fs, 4) == 0, "complexf prod");
  double _Complex zwant = 1;
  float _Complex fwant = 1;
  for (int p = 0; p < tn; ++p) zwant *= 1.0 * I, fwant *= 1.0f + 1.0f * I;
  for (int i = 0; i < 4; ++i) {
    CHECK(zd[i] == zwant, "complexd prod [%d]: (%g, %g)", i, creal(zd[i]), cimag(zd[i]));
    CHECK(fd[i] == fwant, "complexf prod [%d]", i);
  }

  /* Floating sums are bit-identical on every PE (the results are compared). */
  double *ds = (double *)rsrc, *dd = (double *)ssrc;
  long double *ls = rsrc + 1, *ld = (long double *)sdst;
  ds[0] = 1.0 / (3 + tme);
  *ls = 1.0L / (3 + tme);
  CHECK(shmem_double_sum_reduce(team, &dd[N_MAX], ds, 1) == 0, "double sum");
  CHECK(shmem_longdouble_sum_reduce(team, &ld[N_MAX], ls, 1) == 0, "long double sum");
  CHECK(shmem_double_fcollect(team, dd, &dd[N_MAX], 1) == 0, "fcollect of the sums");
  CHECK(shmem_fcollectmem(team, ld, &ld[N_MAX], sizeof(long double)) == 0, "fcollectmem");
  for (int p = 1; p < tn; ++p) {
    CHECK(memcmp(&dd[p], &dd[0], sizeof(double)) == 0, "double sums differ between PEs");
    CHECK(ld[p] == ld[0], "long double sums differ between PEs");
  }
  long double want = 0;
  for (int p = 0; p < tn; ++p) want += 1.0L / (3 + p);
  CHECK(ld[0] > want * (1 - 1e-15L) && ld[0] < want * (1 + 1e-15L), "long double sum %Lg, want %Lg",
        ld[0], want);
}

int main(void) {
  shmem_init();
  me = shmem_my_pe();
  npes = shmem_n_pes();
  CHECK(npes <= N_MAX, "at most %d PEs", N_MAX);

  for (int i = 0; i < 50; ++i) {
    shmem_barrier_all();
    shmem_sync_all();
    CHECK(shmem_team_sync(SHMEM_TEAM_WORLD) == 0 && shmem_sync(SHMEM_TEAM_WORLD) == 0, "syncs");
  }
  CHECK(shmem_team_sync(SHMEM_TEAM_SHARED) == 0, "team_sync(SHARED)");

  long *hsrc = shmem_malloc(sizeof(long) * NELEMS * N_MAX * 3);
  long *hdst = shmem_malloc(sizeof(long) * NELEMS * N_MAX * 3);
  CHECK(hsrc && hdst, "shmem_malloc");
  data_movement(SHMEM_TEAM_WORLD, hsrc, hdst);
  reductions(SHMEM_TEAM_WORLD);

  /* The same on the PEs 1, 3, 5, ... of the world (team PEs differ from world PEs). */
  shmem_team_t odds = SHMEM_TEAM_INVALID;
  if (npes >= 2) {
    CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, npes / 2, NULL, 0, &odds) == 0,
          "split_strided");
    if (odds != SHMEM_TEAM_INVALID) {
      data_movement(odds, ssrc, sdst);
      reductions(odds);
      shmem_team_destroy(odds);
    }
  }
  /* A team of one (the last PE; any stride is valid for one member): its
   * collectives complete alone. */
  shmem_team_t last = SHMEM_TEAM_INVALID;
  CHECK(shmem_team_split_strided(SHMEM_TEAM_WORLD, npes - 1, 1 << 30, 1, NULL, 0, &last) == 0,
        "split_strided of one");
  CHECK((last != SHMEM_TEAM_INVALID) == (me == npes - 1), "membership of the team of one");
  if (last != SHMEM_TEAM_INVALID) {
    CHECK(shmem_team_n_pes(last) == 1 && shmem_team_my_pe(last) == 0, "team of one");
    CHECK(shmem_team_translate_pe(SHMEM_TEAM_WORLD, me, last) == 0 &&
              shmem_team_translate_pe(SHMEM_TEAM_WORLD, 0, last) == (npes == 1 ? 0 : -1),
          "translate into the team of one");
    data_movement(last, ssrc, sdst);
    reductions(last);
    shmem_team_destroy(last);
  }
  shmem_barrier_all();
  shmem_free(hsrc);
  shmem_free(hdst);
  TEST_DONE("collectives_team");
  shmem_finalize();
  return 0;
}
