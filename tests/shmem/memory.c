/* Memory management (OpenSHMEM 1.5, 9.3): shmem_malloc, calloc, align,
 * realloc, free, malloc_with_hints on the symmetric heap; a request the
 * heap cannot hold returns NULL on every PE; shmem_ptr to node peers.
 * SHMEM_TEST_EXPECT_PTR=1 (set by the test on routes where every PE shares
 * this node with the others and bypass is on) demands shmem_ptr to them. */
#include "shmem_test.h"

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int right = (me + 1) % n;

  /* malloc: usable, symmetric, distinct blocks. */
  long *a = shmem_malloc(100 * sizeof(long));
  long *b = shmem_malloc(100 * sizeof(long));
  CHECK(a && b && a != b, "malloc %p %p", (void *)a, (void *)b);
  CHECK(((uintptr_t)a % sizeof(long double)) == 0, "malloc alignment %p", (void *)a);
  for (int i = 0; i < 100; ++i) a[i] = me * 1000 + i;
  shmem_barrier_all();
  shmem_getmem(b, a, 100 * sizeof(long), right);
  for (int i = 0; i < 100; ++i) CHECK(b[i] == right * 1000 + i, "b[%d] %ld", i, b[i]);
  CHECK(shmem_malloc(0) == NULL, "malloc(0) is not NULL");

  /* calloc: zeroed, also after the block was used before. */
  shmem_free(b);
  long *c = shmem_calloc(100, sizeof(long));
  CHECK(c != NULL, "calloc");
  for (int i = 0; i < 100; ++i) CHECK(c[i] == 0, "calloc c[%d] %ld", i, c[i]);
  CHECK(shmem_calloc(0, 8) == NULL && shmem_calloc(8, 0) == NULL, "calloc of nothing");

  /* align: every power of two up to 1 MiB. */
  for (size_t al = 1; al <= (1u << 20); al <<= 1) {
    char *p = shmem_align(al, 24);
    CHECK(p != NULL && ((uintptr_t)p % al) == 0, "align(%zu) %p", al, (void *)p);
    p[23] = (char)me;
    shmem_free(p);
  }

  /* realloc keeps the contents, grows and shrinks; realloc(NULL) mallocs. */
  for (int i = 0; i < 100; ++i) c[i] = i + me;
  c = shmem_realloc(c, 10000 * sizeof(long));
  CHECK(c != NULL, "realloc grow");
  for (int i = 0; i < 100; ++i) CHECK(c[i] == i + me, "after grow c[%d] %ld", i, c[i]);
  c[9999] = me;
  shmem_barrier_all();
  CHECK(shmem_long_g(&c[9999], right) == right, "grown block on PE %d", right);
  c = shmem_realloc(c, 10 * sizeof(long));
  CHECK(c != NULL, "realloc shrink");
  for (int i = 0; i < 10; ++i) CHECK(c[i] == i + me, "after shrink c[%d] %ld", i, c[i]);
  long *d = shmem_realloc(NULL, 8 * sizeof(long));
  CHECK(d != NULL, "realloc(NULL)");
  shmem_free(d);

  /* malloc_with_hints: every hint, and none. */
  const long hints[] = {0, SHMEM_MALLOC_ATOMICS_REMOTE, SHMEM_MALLOC_SIGNAL_REMOTE,
                        SHMEM_MALLOC_ATOMICS_REMOTE | SHMEM_MALLOC_SIGNAL_REMOTE};
  for (unsigned h = 0; h < sizeof hints / sizeof hints[0]; ++h) {
    uint64_t *w = shmem_malloc_with_hints(sizeof(uint64_t), hints[h]);
    CHECK(w != NULL, "malloc_with_hints(%ld)", hints[h]);
    *w = 0;
    shmem_barrier_all();
    shmem_uint64_atomic_add(w, 1, 0);
    shmem_barrier_all();
    if (me == 0) CHECK(*w == (uint64_t)n, "hinted word %lu", (unsigned long)*w);
    shmem_free(w);
  }

  /* More than the heap can hold: NULL on every PE, and the heap is intact. */
  void *huge = shmem_malloc((size_t)1 << 50);
  CHECK(huge == NULL, "malloc(1 PiB) is not NULL");
  CHECK(shmem_malloc(SIZE_MAX - 64) == NULL, "malloc(SIZE_MAX - 64)");
  CHECK(shmem_calloc(SIZE_MAX / 2, 4) == NULL, "calloc overflowing size_t");
  CHECK(shmem_align(64, (size_t)1 << 50) == NULL, "align of 1 PiB");
  /* Fill the heap with 1 MiB blocks until it refuses, free them all, and do
   * it again: as many blocks fit the second time. */
  enum { kMaxBlocks = 4096 };
  static void *blocks[kMaxBlocks];
  int fits[2] = {0, 0};
  for (int round = 0; round < 2; ++round) {
    int k = 0;
    while (k < kMaxBlocks && (blocks[k] = shmem_malloc(1u << 20)) != NULL) ++k;
    fits[round] = k;
    while (k > 0) shmem_free(blocks[--k]);
  }
  CHECK(fits[0] > 0 && fits[0] == fits[1], "1 MiB blocks that fit: %d then %d", fits[0],
        fits[1]);

  /* shmem_ptr: our own object always; node peers' heap where bypass allows. */
  CHECK(shmem_ptr(a, me) == a, "shmem_ptr to myself %p, object %p", shmem_ptr(a, me), (void *)a);
  const char *expect = getenv("SHMEM_TEST_EXPECT_PTR");
  for (int pe = 0; pe < n; ++pe) {
    long *p = shmem_ptr(a, pe);
    if (p == NULL) {
      CHECK(!(expect && expect[0] == '1'), "shmem_ptr to node peer %d is NULL", pe);
      continue;
    }
    for (int i = 0; i < 100; ++i) CHECK(p[i] == pe * 1000 + i, "PE %d's a[%d] %ld", pe, i, p[i]);
  }
  shmem_barrier_all();
  long *rp = shmem_ptr(a, right);
  if (rp) rp[0] = -me;  /* a store through the pointer lands in the peer's heap */
  shmem_barrier_all();
  if (shmem_ptr(a, (me + n - 1) % n))
    CHECK(a[0] == -((me + n - 1) % n), "store through shmem_ptr: a[0] %ld", a[0]);

  shmem_free(c);
  shmem_free(a);
  shmem_free(NULL); /* no effect, as the specification says */
  shmem_barrier_all();
  TEST_DONE("memory");
  shmem_finalize();
  return 0;
}
