/* Atomic memory operations (OpenSHMEM 1.5, 9.7): every operation on every
 * type of the standard, extended and bitwise tables, blocking, _nbi, ctx and
 * C11 generic forms, the deprecated names, and contention from every PE on
 * one word (the counts add up). */
#include "shmem_test.h"

enum { kIters = 300 };
static int me, n, right, left;
static unsigned char *sym;  /* per type: n words of 8 bytes, then one shared word */

#define WORDS(T) ((T *)sym)
#define SHARED(T) (&((T *)sym)[n])

#define RESET(T)                                 \
  do {                                           \
    memset(sym, 0, (size_t)(n + 1) * 8);         \
    shmem_barrier_all();                         \
  } while (0)

/* Sequences on my slot of the right neighbour's words (nobody else touches
 * it), then contention on PE 0's shared word. */
#define TEST_STD(T, N)                                                                  \
  static void test_std_##N(void) {                                                      \
    RESET(T);                                                                           \
    T *w = &WORDS(T)[me];                                                               \
    shmem_##N##_atomic_set(w, (T)5, right);                                             \
    CHECK(shmem_##N##_atomic_fetch(w, right) == (T)5, #N " set/fetch");                 \
    CHECK(shmem_##N##_atomic_swap(w, (T)7, right) == (T)5, #N " swap");                 \
    CHECK(shmem_##N##_atomic_compare_swap(w, (T)7, (T)9, right) == (T)7, #N " cswap hit"); \
    CHECK(shmem_##N##_atomic_compare_swap(w, (T)1, (T)3, right) == (T)9, #N " cswap miss"); \
    CHECK(shmem_##N##_atomic_fetch_inc(w, right) == (T)9, #N " fetch_inc");             \
    shmem_##N##_atomic_inc(w, right);                                                   \
    CHECK(shmem_##N##_atomic_fetch_add(w, (T)10, right) == (T)11, #N " fetch_add");     \
    shmem_##N##_atomic_add(w, (T)4, right);                                             \
    CHECK(shmem_##N##_atomic_fetch(w, right) == (T)25, #N " after add");                \
    /* nbi: results by the next quiet. */                                               \
    T r[6];                                                                             \
    memset(r, 0, sizeof r);                                                             \
    shmem_##N##_atomic_fetch_nbi(&r[0], w, right);                                      \
    shmem_quiet();                                                                      \
    shmem_##N##_atomic_swap_nbi(&r[1], w, (T)30, right);                                \
    shmem_quiet();                                                                      \
    shmem_##N##_atomic_compare_swap_nbi(&r[2], w, (T)30, (T)31, right);                 \
    shmem_quiet();                                                                      \
    shmem_##N##_atomic_fetch_inc_nbi(&r[3], w, right);                                  \
    shmem_quiet();                                                                      \
    shmem_##N##_atomic_fetch_add_nbi(&r[4], w, (T)8, right);                            \
    shmem_quiet();                                                                      \
    CHECK(r[0] == (T)25 && r[1] == (T)25 && r[2] == (T)30 && r[3] == (T)31 && r[4] == (T)32, \
          #N " nbi results");                                                           \
    /* ctx and generic forms. */                                                        \
    CHECK(shmem_ctx_##N##_atomic_fetch_add(SHMEM_CTX_DEFAULT, w, (T)1, right) == (T)40, \
          "ctx " #N " fetch_add");                                                      \
    shmem_ctx_##N##_atomic_add(SHMEM_CTX_DEFAULT, w, (T)1, right);                      \
    shmem_ctx_##N##_atomic_inc(SHMEM_CTX_DEFAULT, w, right);                            \
    CHECK(shmem_ctx_##N##_atomic_compare_swap(SHMEM_CTX_DEFAULT, w, (T)43, (T)50, right) \
              == (T)43, "ctx " #N " cswap");                                            \
    CHECK(shmem_atomic_fetch_add(w, (T)2, right) == (T)50, "generic fetch_add " #N);    \
    CHECK(shmem_atomic_fetch_inc(w, right) == (T)52, "generic fetch_inc " #N);          \
    shmem_atomic_add(w, (T)1, right);                                                   \
    shmem_atomic_inc(w, right);                                                         \
    CHECK(shmem_atomic_compare_swap(w, (T)55, (T)60, right) == (T)55, "generic cswap " #N); \
    CHECK(shmem_atomic_swap(w, (T)61, right) == (T)60, "generic swap " #N);             \
    shmem_atomic_set(w, (T)62, right);                                                  \
    CHECK(shmem_atomic_fetch(w, right) == (T)62, "generic fetch " #N);                  \
    /* Contention: every PE adds and increments PE 0's shared word. */                  \
    T last = 0;                                                                         \
    for (int i = 0; i < kIters; ++i) {                                                  \
      const T old = shmem_##N##_atomic_fetch_inc(SHARED(T), 0);                         \
      CHECK(i == 0 || old > last, #N " fetch_inc went backwards");                      \
      last = old;                                                                       \
      shmem_##N##_atomic_add(SHARED(T), (T)2, 0);                                       \
    }                                                                                   \
    shmem_barrier_all();                                                                \
    CHECK(WORDS(T)[left] == (T)62, #N " my word seen locally");                         \
    if (me == 0)                                                                        \
      CHECK(*SHARED(T) == (T)(3 * kIters * n), #N " contended word %llu, want %d",      \
            (unsigned long long)*SHARED(T), 3 * kIters * n);                            \
    shmem_barrier_all();                                                                \
  }
AMO_STD_TYPES(TEST_STD)

#define TEST_EXT(T, N)                                                                  \
  static void test_ext_##N(void) {                                                      \
    RESET(T);                                                                           \
    T *w = &WORDS(T)[me];                                                               \
    shmem_##N##_atomic_set(w, (T)1.5, right);                                           \
    CHECK(shmem_##N##_atomic_fetch(w, right) == (T)1.5, #N " set/fetch");               \
    CHECK(shmem_##N##_atomic_swap(w, (T)-2.25, right) == (T)1.5, #N " swap");           \
    T r[2] = {0, 0};                                                                    \
    shmem_##N##_atomic_fetch_nbi(&r[0], w, right);                                      \
    shmem_quiet();                                                                      \
    shmem_##N##_atomic_swap_nbi(&r[1], w, (T)-2.25, right);                             \
    shmem_quiet();                                                                      \
    CHECK(r[0] == (T)-2.25 && r[1] == (T)-2.25, #N " fetch_nbi, swap_nbi");             \
    CHECK(shmem_ctx_##N##_atomic_swap(SHMEM_CTX_DEFAULT, w, (T)3.0, right) == (T)-2.25, \
          "ctx " #N " swap");                                                           \
    shmem_ctx_##N##_atomic_set(SHMEM_CTX_DEFAULT, w, (T)4.0, right);                    \
    CHECK(shmem_atomic_fetch(w, right) == (T)4.0, "generic fetch " #N);                 \
    shmem_barrier_all();                                                                \
    CHECK(WORDS(T)[left] == (T)4.0, #N " my word");                                     \
    shmem_barrier_all();                                                                \
  }
AMO_EXT_ONLY_TYPES(TEST_EXT)

#define TEST_BIT(T, N)                                                                  \
  static void test_bit_##N(void) {                                                      \
    RESET(T);                                                                           \
    T *w = &WORDS(T)[me];                                                               \
    shmem_##N##_atomic_set(w, (T)0xF0, right);                                          \
    CHECK(shmem_##N##_atomic_fetch_or(w, (T)0x0F, right) == (T)0xF0, #N " fetch_or");   \
    CHECK(shmem_##N##_atomic_fetch_and(w, (T)0x3C, right) == (T)0xFF, #N " fetch_and"); \
    CHECK(shmem_##N##_atomic_fetch_xor(w, (T)0xFF, right) == (T)0x3C, #N " fetch_xor"); \
    shmem_##N##_atomic_or(w, (T)0x100, right);                                          \
    shmem_##N##_atomic_and(w, (T)0x1C1, right);                                         \
    shmem_##N##_atomic_xor(w, (T)0x3, right);                                           \
    CHECK(shmem_##N##_atomic_fetch(w, right) == (T)0x1C2, #N " and/or/xor");            \
    T r[3] = {0, 0, 0};                                                                 \
    shmem_##N##_atomic_fetch_and_nbi(&r[0], w, (T)0xFF, right);                         \
    shmem_quiet();                                                                      \
    shmem_##N##_atomic_fetch_or_nbi(&r[1], w, (T)0x1, right);                           \
    shmem_quiet();                                                                      \
    shmem_##N##_atomic_fetch_xor_nbi(&r[2], w, (T)0x43, right);                         \
    shmem_quiet();                                                                      \
    CHECK(r[0] == (T)0x1C2 && r[1] == (T)0xC2 && r[2] == (T)0xC3, #N " nbi results");   \
    CHECK(shmem_ctx_##N##_atomic_fetch_or(SHMEM_CTX_DEFAULT, w, (T)0x8, right) == (T)0x80, \
          "ctx " #N " fetch_or");                                                       \
    shmem_ctx_##N##_atomic_xor(SHMEM_CTX_DEFAULT, w, (T)0x9, right);                    \
    CHECK(shmem_atomic_fetch_and(w, (T)0xFF, right) == (T)0x81, "generic fetch_and " #N); \
    shmem_atomic_or(w, (T)0x80, right);                                                 \
    /* Contention: each PE sets its bit in PE 0's shared word, then flips all. */       \
    shmem_##N##_atomic_or(SHARED(T), (T)((T)1 << me), 0);                              \
    shmem_barrier_all();                                                                \
    const T all = (T)(((T)1 << n) - 1);                                                 \
    if (me == 0) CHECK(*SHARED(T) == all, #N " bits of every PE");                      \
    shmem_barrier_all();                                                                \
    shmem_##N##_atomic_xor(SHARED(T), (T)((T)1 << me), 0);                              \
    shmem_##N##_atomic_and(SHARED(T), (T)~(T)0, 0);                                     \
    shmem_barrier_all();                                                                \
    if (me == 0) CHECK(*SHARED(T) == 0, #N " every bit flipped back");                  \
    CHECK(WORDS(T)[left] == (T)0x81, #N " my word: %llu", (unsigned long long)WORDS(T)[left]); \
    shmem_barrier_all();                                                                \
  }
AMO_BIT_TYPES(TEST_BIT)

/* The names deprecated in 1.4 (shmem_TYPENAME_fadd, finc, add, inc, cswap,
 * swap, fetch, set) still work. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#define TEST_DEPRECATED(T, N)                                                           \
  static void test_deprecated_##N(void) {                                               \
    RESET(T);                                                                           \
    T *w = &WORDS(T)[me];                                                               \
    shmem_##N##_set(w, (T)3, right);                                                    \
    CHECK(shmem_##N##_fetch(w, right) == (T)3, #N "_set/fetch");                        \
    CHECK(shmem_##N##_swap(w, (T)4, right) == (T)3, #N "_swap");                        \
    CHECK(shmem_##N##_cswap(w, (T)4, (T)5, right) == (T)4, #N "_cswap");                \
    CHECK(shmem_##N##_finc(w, right) == (T)5, #N "_finc");                              \
    shmem_##N##_inc(w, right);                                                          \
    CHECK(shmem_##N##_fadd(w, (T)3, right) == (T)7, #N "_fadd");                        \
    shmem_##N##_add(w, (T)10, right);                                                   \
    for (int i = 0; i < kIters; ++i) shmem_##N##_finc(SHARED(T), 0);                    \
    shmem_barrier_all();                                                                \
    CHECK(WORDS(T)[left] == (T)20, #N " deprecated sequence");                          \
    if (me == 0) CHECK(*SHARED(T) == (T)(kIters * n), #N "_finc contended");            \
    shmem_barrier_all();                                                                \
  }
TEST_DEPRECATED(int, int)
TEST_DEPRECATED(long, long)
TEST_DEPRECATED(long long, longlong)

static void test_deprecated_float(void) {
  RESET(double);
  float *f = &WORDS(float)[2 * me];
  double *d = &WORDS(double)[me];
  shmem_float_set(f, 1.5f, right);
  CHECK(shmem_float_fetch(f, right) == 1.5f && shmem_float_swap(f, 2.5f, right) == 1.5f,
        "float set/fetch/swap");
  shmem_barrier_all();
  RESET(double);
  shmem_double_set(d, 0.25, right);
  CHECK(shmem_double_swap(d, 0.5, right) == 0.25 && shmem_double_fetch(d, right) == 0.5,
        "double set/swap/fetch");
  shmem_barrier_all();
  RESET(long);
  CHECK(shmem_swap(&WORDS(long)[me], 9L, right) == 0, "shmem_swap");
  shmem_barrier_all();
}
#pragma GCC diagnostic pop

int main(void) {
  shmem_init();
  me = shmem_my_pe();
  n = shmem_n_pes();
  right = (me + 1) % n;
  left = (me + n - 1) % n;
  CHECK(n <= 31, "this test sets one bit per PE");
  sym = shmem_malloc((size_t)(n + 1) * 8);
  CHECK(sym != NULL, "shmem_malloc");
#define CALL_STD(T, N) test_std_##N();
#define CALL_EXT(T, N) test_ext_##N();
#define CALL_BIT(T, N) test_bit_##N();
  AMO_STD_TYPES(CALL_STD)
  AMO_EXT_ONLY_TYPES(CALL_EXT)
  AMO_BIT_TYPES(CALL_BIT)
  test_deprecated_int();
  test_deprecated_long();
  test_deprecated_longlong();
  test_deprecated_float();
  shmem_free(sym);
  TEST_DONE("atomics");
  shmem_finalize();
  return 0;
}
