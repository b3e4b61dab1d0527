/* Point-to-point synchronization (OpenSHMEM 1.5, 9.10): wait_until,
 * wait_until_all/any/some and their vector forms, test, test_all/any/some
 * and vector forms, for every type of the synchronization table, with every
 * comparison; the generic forms and the deprecated shmem_wait names.  Each
 * PE's left neighbour writes its variables (a little later, so that the
 * waits really wait). */
#define _DEFAULT_SOURCE /* usleep */
#include "shmem_test.h"

#include <unistd.h>

enum { kVars = 16 };
static int me, n, right, left;
static void *sym;

#define TEST_SYNC(T, N)                                                                     \
  static void test_##N(void) {                                                              \
    T *iv = (T *)sym;                                                                       \
    memset(iv, 0, kVars * sizeof(T));                                                       \
    shmem_barrier_all();                                                                    \
    usleep(1000);                                                                           \
    const T seven[3] = {7, 7, 7};                                                           \
    shmem_##N##_p(&iv[0], (T)1, right);                                                     \
    shmem_fence();                                                                          \
    shmem_##N##_p(&iv[1], (T)5, right);                                                     \
    shmem_##N##_put(&iv[2], seven, 3, right);                                               \
    shmem_##N##_p(&iv[6], (T)9, right);                                                     \
    shmem_##N##_p(&iv[7], (T)9, right);                                                     \
    shmem_##N##_p(&iv[8], (T)3, right);                                                     \
    shmem_##N##_p(&iv[9], (T)4, right);                                                     \
    const T vec[3] = {10, 11, 12};                                                          \
    shmem_##N##_put(&iv[10], vec, 3, right);                                                \
    shmem_quiet();                                                                          \
    /* Now wait for what the left neighbour wrote here. */                                  \
    shmem_##N##_wait_until(&iv[0], SHMEM_CMP_EQ, (T)1);                                     \
    shmem_##N##_wait_until(&iv[1], SHMEM_CMP_NE, (T)0);                                     \
    CHECK(iv[1] == (T)5, #N " data after the fence");                                       \
    shmem_##N##_wait_until(&iv[1], SHMEM_CMP_GT, (T)4);                                     \
    shmem_##N##_wait_until(&iv[1], SHMEM_CMP_GE, (T)5);                                     \
    shmem_##N##_wait_until(&iv[1], SHMEM_CMP_LT, (T)6);                                     \
    shmem_##N##_wait_until(&iv[1], SHMEM_CMP_LE, (T)5);                                     \
    shmem_wait_until(&iv[1], SHMEM_CMP_EQ, (T)5);                                           \
    CHECK(shmem_##N##_test(&iv[0], SHMEM_CMP_EQ, (T)1) == 1, #N "_test EQ");                \
    CHECK(shmem_##N##_test(&iv[0], SHMEM_CMP_NE, (T)1) == 0, #N "_test NE");                \
    CHECK(shmem_test(&iv[1], SHMEM_CMP_GT, (T)5) == 0, "generic test " #N);                 \
    shmem_##N##_wait_until_all(&iv[2], 3, NULL, SHMEM_CMP_EQ, (T)7);                        \
    CHECK(iv[2] == 7 && iv[3] == 7 && iv[4] == 7, #N "_wait_until_all");                    \
    const int skip_middle[3] = {0, 1, 0};                                                   \
    size_t got = shmem_##N##_wait_until_any(&iv[5], 3, skip_middle, SHMEM_CMP_EQ, (T)9);    \
    CHECK(got == 2, #N "_wait_until_any returned %zu", got);                                \
    CHECK(shmem_##N##_wait_until_any(&iv[5], 0, NULL, SHMEM_CMP_EQ, (T)9) == SIZE_MAX,      \
          #N "_wait_until_any of nothing");                                                 \
    size_t idx[3] = {99, 99, 99};                                                           \
    got = shmem_##N##_wait_until_some(&iv[8], 2, idx, NULL, SHMEM_CMP_GE, (T)3);            \
    CHECK(got >= 1 && got <= 2 && idx[0] < 2 && iv[8 + idx[0]] >= (T)3,                     \
          #N "_wait_until_some: %zu", got);                                                 \
    const T want[3] = {10, 11, 12};                                                         \
    shmem_##N##_wait_until_all_vector(&iv[10], 3, NULL, SHMEM_CMP_EQ, (T *)want);           \
    const int skip_ends[3] = {1, 0, 1};                                                     \
    const T other[3] = {10, 11, 99};                                                        \
    got = shmem_##N##_wait_until_any_vector(&iv[10], 3, skip_ends, SHMEM_CMP_EQ, (T *)other); \
    CHECK(got == 1, #N "_wait_until_any_vector returned %zu", got);                         \
    const T some[3] = {10, 0, 12};                                                          \
    got = shmem_##N##_wait_until_some_vector(&iv[10], 3, idx, NULL, SHMEM_CMP_EQ, (T *)some); \
    CHECK(got == 2 && idx[0] + idx[1] == 2, #N "_wait_until_some_vector: %zu", got);        \
    /* The test forms on what is there now. */                                              \
    CHECK(shmem_##N##_test_all(&iv[2], 3, NULL, SHMEM_CMP_EQ, (T)7) == 1, #N "_test_all");   \
    CHECK(shmem_##N##_test_all(&iv[1], 3, NULL, SHMEM_CMP_EQ, (T)7) == 0, #N "_test_all no"); \
    got = shmem_##N##_test_any(&iv[5], 3, NULL, SHMEM_CMP_EQ, (T)9);                        \
    CHECK(got == 1 || got == 2, #N "_test_any %zu", got);                                   \
    CHECK(shmem_##N##_test_any(&iv[5], 3, NULL, SHMEM_CMP_EQ, (T)8) == SIZE_MAX,            \
          #N "_test_any none");                                                             \
    CHECK(shmem_##N##_test_some(&iv[5], 3, idx, NULL, SHMEM_CMP_EQ, (T)9) == 2,             \
          #N "_test_some");                                                                 \
    CHECK(shmem_##N##_test_some(&iv[5], 3, idx, skip_middle, SHMEM_CMP_EQ, (T)9) == 1 &&    \
              idx[0] == 2, #N "_test_some with status");                                    \
    CHECK(shmem_##N##_test_all_vector(&iv[10], 3, NULL, SHMEM_CMP_EQ, (T *)want) == 1,      \
          #N "_test_all_vector");                                                           \
    CHECK(shmem_##N##_test_any_vector(&iv[10], 3, skip_ends, SHMEM_CMP_EQ, (T *)other) == 1, \
          #N "_test_any_vector");                                                           \
    CHECK(shmem_##N##_test_some_vector(&iv[10], 3, idx, NULL, SHMEM_CMP_LE, (T *)some) == 2, \
          #N "_test_some_vector");                                                          \
    shmem_barrier_all();                                                                    \
  }
SYNC_TYPES(TEST_SYNC)

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static void test_deprecated(void) {
  long *lv = (long *)sym;
  int *iv = (int *)((char *)sym + 8 * sizeof(long));
  memset(sym, 0, kVars * 8);
  shmem_barrier_all();
  usleep(1000);
  shmem_long_p(&lv[0], 3, right);
  shmem_long_p(&lv[1], 4, right);
  shmem_int_p(&iv[0], 5, right);
  shmem_int_p(&iv[1], 6, right);
  shmem_long_wait(&lv[0], 0);                   /* until it is no longer 0 */
  shmem_long_wait_until(&lv[1], SHMEM_CMP_EQ, 4);
  shmem_int_wait(&iv[0], 0);
  shmem_int_wait_until(&iv[1], SHMEM_CMP_GE, 6);
  CHECK(lv[0] == 3 && iv[0] == 5, "deprecated waits");
  shmem_barrier_all();
}
#pragma GCC diagnostic pop

int main(void) {
  shmem_init();
  me = shmem_my_pe();
  n = shmem_n_pes();
  right = (me + 1) % n;
  left = (me + n - 1) % n;
  sym = shmem_malloc(kVars * 8);
  CHECK(sym != NULL, "shmem_malloc");
#define CALL_SYNC(T, N) test_##N();
  SYNC_TYPES(CALL_SYNC)
  test_deprecated();
  shmem_free(sym);
  TEST_DONE("wait");
  shmem_finalize();
  return 0;
}
