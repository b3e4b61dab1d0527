/* Remote memory access (OpenSHMEM 1.5, 9.5): put, get, p, g, iput, iget,
 * put_nbi, get_nbi for every type of the standard RMA table, in their typed,
 * shmem_ctx_ and C11 generic forms; the sized forms (8 .. 128 bits); putmem
 * and getmem from 0 B to 1 MiB at unaligned offsets.  Each PE writes to its
 * right neighbour and reads from it; the values say who wrote them. */
#include "shmem_test.h"

enum { kN = 16, kSlots = 12 };
static unsigned char *sym;  /* kSlots slots of kN elements of the largest type */
static int me, n, right, left;

/* The value of element i written by PE pe (small: fits every type). */
static int val(int pe, int i) { return (pe * kN + i) % 100 + 1; }

#define SLOT(T, k) ((T *)(sym + (size_t)(k) * kN * 16))

#define TEST_TYPE(T, N)                                                                  \
  static void test_##N(void) {                                                           \
    T src[kN], buf[kN];                                                                  \
    memset(sym, 0, (size_t)kSlots * kN * 16);                                            \
    for (int i = 0; i < kN; ++i) {                                                       \
      src[i] = (T)val(me, i);                                                            \
      SLOT(T, 11)[i] = (T)val(me, i);                                                    \
    }                                                                                    \
    shmem_barrier_all();                                                                 \
    shmem_##N##_put(SLOT(T, 0), src, kN, right);                                         \
    shmem_##N##_p(&SLOT(T, 1)[3], (T)val(me, 7), right);                                 \
    shmem_##N##_iput(SLOT(T, 2), src, 2, 3, 5, right); /* dest 0,2,..8 <- src 0,3,..12 */ \
    shmem_##N##_put_nbi(SLOT(T, 3), src, kN, right);                                     \
    shmem_ctx_##N##_put(SHMEM_CTX_DEFAULT, SLOT(T, 4), src, kN, right);                  \
    shmem_put(SLOT(T, 5), src, kN, right);                                               \
    shmem_p(&SLOT(T, 6)[1], (T)val(me, 9), right);                                       \
    shmem_ctx_##N##_put_nbi(SHMEM_CTX_DEFAULT, SLOT(T, 7), src, kN, right);              \
    shmem_iput(SLOT(T, 8), src, 1, 2, 8, right);                                         \
    shmem_quiet();                                                                       \
    /* Gets from the right neighbour's slot 11 (its own values). */                      \
    memset(buf, 0, sizeof buf);                                                          \
    shmem_##N##_get(buf, SLOT(T, 11), kN, right);                                        \
    for (int i = 0; i < kN; ++i)                                                         \
      CHECK(buf[i] == (T)val(right, i), #N "_get [%d]", i);                              \
    CHECK(shmem_##N##_g(&SLOT(T, 11)[5], right) == (T)val(right, 5), #N "_g");           \
    CHECK(shmem_g(&SLOT(T, 11)[6], right) == (T)val(right, 6), "generic g " #N);         \
    CHECK(shmem_ctx_##N##_g(SHMEM_CTX_DEFAULT, &SLOT(T, 11)[2], right) == (T)val(right, 2), \
          "ctx_" #N "_g");                                                               \
    memset(buf, 0, sizeof buf);                                                          \
    shmem_##N##_iget(buf, SLOT(T, 11), 3, 2, 5, right); /* buf 0,3,..12 <- 0,2,..8 */    \
    for (int i = 0; i < 5; ++i)                                                          \
      CHECK(buf[3 * i] == (T)val(right, 2 * i), #N "_iget [%d]", 3 * i);                 \
    CHECK(buf[1] == 0 && buf[13] == 0, #N "_iget wrote between the strides");            \
    memset(buf, 0, sizeof buf);                                                          \
    shmem_##N##_get_nbi(buf, SLOT(T, 11), kN, right);                                    \
    shmem_quiet();                                                                       \
    for (int i = 0; i < kN; ++i) CHECK(buf[i] == (T)val(right, i), #N "_get_nbi [%d]", i); \
    memset(buf, 0, sizeof buf);                                                          \
    shmem_ctx_##N##_get(SHMEM_CTX_DEFAULT, buf, SLOT(T, 11), kN, right);                 \
    for (int i = 0; i < kN; ++i) CHECK(buf[i] == (T)val(right, i), "ctx_" #N "_get [%d]", i); \
    memset(buf, 0, sizeof buf);                                                          \
    shmem_get(buf, SLOT(T, 11), kN, right);                                              \
    for (int i = 0; i < kN; ++i) CHECK(buf[i] == (T)val(right, i), "generic get " #N);   \
    memset(buf, 0, sizeof buf);                                                          \
    shmem_ctx_##N##_iget(SHMEM_CTX_DEFAULT, buf, SLOT(T, 11), 1, 4, 4, right);           \
    for (int i = 0; i < 4; ++i) CHECK(buf[i] == (T)val(right, 4 * i), "ctx_" #N "_iget"); \
    shmem_barrier_all();                                                                 \
    /* What the left neighbour put here. */                                              \
    for (int i = 0; i < kN; ++i) {                                                       \
      CHECK(SLOT(T, 0)[i] == (T)val(left, i), #N "_put [%d]", i);                        \
      CHECK(SLOT(T, 3)[i] == (T)val(left, i), #N "_put_nbi [%d]", i);                    \
      CHECK(SLOT(T, 4)[i] == (T)val(left, i), "ctx_" #N "_put [%d]", i);                 \
      CHECK(SLOT(T, 5)[i] == (T)val(left, i), "generic put " #N " [%d]", i);             \
      CHECK(SLOT(T, 7)[i] == (T)val(left, i), "ctx_" #N "_put_nbi [%d]", i);             \
      const T iput_want = (i % 2 == 0 && i < 10) ? (T)val(left, i / 2 * 3) : (T)0;        \
      CHECK(SLOT(T, 2)[i] == iput_want, #N "_iput [%d]", i);                             \
      const T iput1_want = i < 8 ? (T)val(left, 2 * i) : (T)0;                           \
      CHECK(SLOT(T, 8)[i] == iput1_want, "generic iput " #N " [%d]", i);                 \
    }                                                                                    \
    CHECK(SLOT(T, 1)[3] == (T)val(left, 7) && SLOT(T, 1)[2] == 0, #N "_p");              \
    CHECK(SLOT(T, 6)[1] == (T)val(left, 9), "generic p " #N);                            \
    shmem_barrier_all();                                                                 \
  }
RMA_TYPES(TEST_TYPE)

/* Sized forms: BITS-bit elements, untyped pointers. */
#define TEST_SIZED(BITS)                                                                 \
  static void test_sized_##BITS(void) {                                                  \
    enum { kBytes = BITS / 8 };                                                          \
    unsigned char src[kN * kBytes], buf[kN * kBytes];                                    \
    memset(sym, 0, (size_t)kSlots * kN * 16);                                            \
    for (int i = 0; i < kN * kBytes; ++i) {                                              \
      src[i] = (unsigned char)(me * 31 + i);                                             \
      sym[11 * kN * 16 + i] = src[i];                                                    \
    }                                                                                    \
    shmem_barrier_all();                                                                 \
    shmem_put##BITS(sym, src, kN, right);                                                \
    shmem_iput##BITS(sym + kN * 16, src, 2, 1, kN / 2, right);                           \
    shmem_put##BITS##_nbi(sym + 2 * kN * 16, src, kN, right);                            \
    shmem_ctx_put##BITS(SHMEM_CTX_DEFAULT, sym + 3 * kN * 16, src, kN, right);           \
    shmem_quiet();                                                                       \
    shmem_get##BITS(buf, sym + 11 * kN * 16, kN, right);                                 \
    for (int i = 0; i < kN * kBytes; ++i)                                                \
      CHECK(buf[i] == (unsigned char)(right * 31 + i), "get" #BITS " byte %d", i);       \
    memset(buf, 0, sizeof buf);                                                          \
    shmem_iget##BITS(buf, sym + 11 * kN * 16, 1, 2, kN / 2, right);                      \
    for (int e = 0; e < kN / 2; ++e)                                                     \
      for (int b = 0; b < kBytes; ++b)                                                   \
        CHECK(buf[e * kBytes + b] == (unsigned char)(right * 31 + 2 * e * kBytes + b),   \
              "iget" #BITS " element %d", e);                                            \
    memset(buf, 0, sizeof buf);                                                          \
    shmem_get##BITS##_nbi(buf, sym + 11 * kN * 16, kN, right);                           \
    shmem_quiet();                                                                       \
    CHECK(buf[kN * kBytes - 1] == (unsigned char)(right * 31 + kN * kBytes - 1),         \
          "get" #BITS "_nbi");                                                           \
    shmem_barrier_all();                                                                 \
    for (int i = 0; i < kN * kBytes; ++i) {                                              \
      const unsigned char want = (unsigned char)(left * 31 + i);                         \
      CHECK(sym[i] == want, "put" #BITS " byte %d", i);                                  \
      CHECK(sym[2 * kN * 16 + i] == want, "put" #BITS "_nbi byte %d", i);                \
      CHECK(sym[3 * kN * 16 + i] == want, "ctx_put" #BITS " byte %d", i);                \
    }                                                                                    \
    for (int e = 0; e < kN / 2; ++e)                                                     \
      for (int b = 0; b < kBytes; ++b) {                                                 \
        CHECK(sym[kN * 16 + 2 * e * kBytes + b] ==                                       \
                  (unsigned char)(left * 31 + e * kBytes + b),                           \
              "iput" #BITS " element %d", e);                                            \
        CHECK(sym[kN * 16 + (2 * e + 1) * kBytes + b] == 0, "iput" #BITS " gap %d", e);  \
      }                                                                                  \
    shmem_barrier_all();                                                                 \
  }
TEST_SIZED(8)
TEST_SIZED(16)
TEST_SIZED(32)
TEST_SIZED(64)
TEST_SIZED(128)

/* putmem / getmem (and _nbi, ctx) of many sizes at odd offsets. */
static void test_mem(void) {
  const size_t max = (size_t)1 << 20;
  unsigned char *area = shmem_malloc(2 * max + 64);  /* [0, max+32): puts; then gets */
  unsigned char *src = malloc(max + 32), *buf = malloc(max + 32);
  CHECK(area && src && buf, "allocation");
  const size_t sizes[] = {0, 1, 2, 3, 7, 8, 9, 63, 64, 65, 1000, 4095, 4096, 4097, 65537,
                          200000, max};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; ++s) {
    const size_t len = sizes[s], off = s % 8;
    for (size_t i = 0; i < len + 16; ++i) {
      src[i] = (unsigned char)(me + 3 * i + s);
      area[max + 32 + i] = (unsigned char)(me * 7 + i + s);  /* the get side */
    }
    memset(area, 0, max + 32);
    shmem_barrier_all();
    switch (s % 4) {
      case 0: shmem_putmem(area + off, src + off, len, right); break;
      case 1: shmem_putmem_nbi(area + off, src + off, len, right); shmem_quiet(); break;
      case 2: shmem_ctx_putmem(SHMEM_CTX_DEFAULT, area + off, src + off, len, right); break;
      default:
        shmem_ctx_putmem_nbi(SHMEM_CTX_DEFAULT, area + off, src + off, len, right);
        shmem_ctx_quiet(SHMEM_CTX_DEFAULT);
        break;
    }
    memset(buf, 0xee, len + 16);
    switch (s % 3) {
      case 0: shmem_getmem(buf + off, area + max + 32 + off, len, right); break;
      case 1: shmem_getmem_nbi(buf + off, area + max + 32 + off, len, right); shmem_quiet(); break;
      default: shmem_ctx_getmem(SHMEM_CTX_DEFAULT, buf + off, area + max + 32 + off, len, right);
    }
    for (size_t i = off; i < off + len; ++i)
      CHECK(buf[i] == (unsigned char)(right * 7 + i + s), "getmem of %zu B: byte %zu", len, i);
    CHECK(buf[off + len] == 0xee, "getmem of %zu B wrote past the end", len);
    shmem_barrier_all();
    for (size_t i = 0; i < off + len + 8 && i < max + 32; ++i) {
      const unsigned char want =
          (i >= off && i < off + len) ? (unsigned char)(left + 3 * i + s) : 0;
      CHECK(area[i] == want, "putmem of %zu B at offset %zu: byte %zu is %d, want %d", len,
            off, i, area[i], want);
    }
  }
  shmem_barrier_all();
  free(buf);
  free(src);
  shmem_free(area);
}

int main(void) {
  shmem_init();
  me = shmem_my_pe();
  n = shmem_n_pes();
  right = (me + 1) % n;
  left = (me + n - 1) % n;
  sym = shmem_malloc((size_t)kSlots * kN * 16);
  CHECK(sym != NULL, "shmem_malloc");
#define CALL_TYPE(T, N) test_##N();
  RMA_TYPES(CALL_TYPE)
  test_sized_8();
  test_sized_16();
  test_sized_32();
  test_sized_64();
  test_sized_128();
  test_mem();
  shmem_free(sym);
  TEST_DONE("rma");
  shmem_finalize();
  return 0;
}
