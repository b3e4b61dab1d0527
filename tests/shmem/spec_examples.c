/* The examples of the OpenSHMEM 1.5 specification, rewritten from their
 * description (not copied), each turned into a check of its own result. */
#include "shmem_test.h"

static long target[10];
static int race_winner = -1;
static int winners;
static long lock;
static long lock_count;
static int ivar;
static uint64_t sig;

/* shmem_put: PE 0 sends ten longs to the target array of PE 1. */
static void put_example(void) {
  long source[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  if (shmem_my_pe() == 0 && shmem_n_pes() > 1) shmem_long_put(target, source, 10, 1);
  shmem_barrier_all();
  if (shmem_my_pe() == 1)
    for (int i = 0; i < 10; ++i) CHECK(target[i] == i + 1, "put example: target[%d]", i);
}

/* shmem_p: PE 0 writes a double to every other PE. */
static void p_example(void) {
  static double f;
  if (shmem_my_pe() == 0)
    for (int pe = 1; pe < shmem_n_pes(); ++pe) shmem_double_p(&f, 2.718281828, pe);
  shmem_barrier_all();
  if (shmem_my_pe() != 0) CHECK(f == 2.718281828, "p example: %g", f);
}

/* shmem_iput: every other element of the source lands in consecutive
 * elements of the target. */
static void iput_example(void) {
  static short dest[5];
  short source[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  const int me = shmem_my_pe();
  if (me == 0) shmem_short_iput(dest, source, 1, 2, 5, shmem_n_pes() - 1);
  shmem_barrier_all();
  if (me == shmem_n_pes() - 1)
    for (int i = 0; i < 5; ++i) CHECK(dest[i] == 2 * i + 1, "iput example: dest[%d]", i);
}

/* shmem_atomic_compare_swap: a race to replace -1 by one's PE number on
 * PE n-1; exactly one PE wins. */
static void cswap_example(void) {
  const int me = shmem_my_pe(), last = shmem_n_pes() - 1;
  const int old = shmem_int_atomic_compare_swap(&race_winner, -1, me, last);
  if (old == -1) shmem_int_atomic_inc(&winners, 0);
  shmem_barrier_all();
  if (me == 0) CHECK(winners == 1, "cswap example: %d winners", winners);
  const int winner = shmem_int_atomic_fetch(&race_winner, last);
  CHECK(winner >= 0 && winner <= last, "cswap example: winner %d", winner);
}

/* shmem_set_lock: PEs take the lock in turn and bump a count on PE 0. */
static void lock_example(void) {
  shmem_set_lock(&lock);
  const long v = shmem_long_g(&lock_count, 0);
  shmem_long_p(&lock_count, v + 1, 0);
  shmem_quiet();
  shmem_clear_lock(&lock);
  shmem_barrier_all();
  if (shmem_my_pe() == 0) CHECK(lock_count == shmem_n_pes(), "lock example: %ld", lock_count);
}

/* shmem_broadcast: PE 0's four longs reach every PE of the world team. */
static void broadcast_example(void) {
  long *source = shmem_malloc(4 * sizeof(long)), *dest = shmem_malloc(4 * sizeof(long));
  for (int i = 0; i < 4; ++i) {
    source[i] = shmem_my_pe() == 0 ? i + 1 : -1;
    dest[i] = -9;
  }
  shmem_long_broadcast(SHMEM_TEAM_WORLD, dest, source, 4, 0);
  if (shmem_my_pe() != 0)
    for (int i = 0; i < 4; ++i) CHECK(dest[i] == i + 1, "broadcast example: dest[%d]", i);
  shmem_free(dest);
  shmem_free(source);
}

/* shmem_wait_until: PE 0 waits until every other PE has set ivar through
 * an atomic add. */
static void wait_example(void) {
  const int n = shmem_n_pes();
  shmem_int_atomic_add(&ivar, 1, 0);
  if (shmem_my_pe() == 0) shmem_int_wait_until(&ivar, SHMEM_CMP_EQ, n);
  shmem_barrier_all();
}

/* shmem_fcollect: each PE's two ints gathered in PE order everywhere. */
static void fcollect_example(void) {
  const int n = shmem_n_pes(), me = shmem_my_pe();
  int *src = shmem_malloc(2 * sizeof(int)), *dst = shmem_malloc(2 * (size_t)n * sizeof(int));
  src[0] = me;
  src[1] = -me;
  shmem_int_fcollect(SHMEM_TEAM_WORLD, dst, src, 2);
  for (int pe = 0; pe < n; ++pe)
    CHECK(dst[2 * pe] == pe && dst[2 * pe + 1] == -pe, "fcollect example: PE %d", pe);
  shmem_free(dst);
  shmem_free(src);
}

/* shmem_ptr: where a pointer to the right neighbour's array exists, store
 * through it; otherwise put. */
static void ptr_example(void) {
  const int me = shmem_my_pe(), n = shmem_n_pes(), right = (me + 1) % n;
  int *bigd = shmem_calloc(100, sizeof(int));
  shmem_barrier_all();
  int *ptr = shmem_ptr(bigd, right);
  if (ptr) {
    for (int i = 0; i < 100; ++i) ptr[i] = me * 100 + i;
  } else {
    int tmp[100];
    for (int i = 0; i < 100; ++i) tmp[i] = me * 100 + i;
    shmem_int_put(bigd, tmp, 100, right);
  }
  shmem_barrier_all();
  const int left = (me + n - 1) % n;
  for (int i = 0; i < 100; ++i) CHECK(bigd[i] == left * 100 + i, "ptr example [%d]", i);
  shmem_free(bigd);
}

/* shmem_team_split_strided: a team of the even PEs sums their numbers. */
static void team_example(void) {
  const int me = shmem_my_pe(), n = shmem_n_pes();
  shmem_team_t even = SHMEM_TEAM_INVALID;
  shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, (n + 1) / 2, NULL, 0, &even);
  int *v = shmem_malloc(sizeof(int)), *sum = shmem_malloc(sizeof(int));
  if (even != SHMEM_TEAM_INVALID) {
    *v = me;
    shmem_int_sum_reduce(even, sum, v, 1);
    int want = 0;
    for (int pe = 0; pe < n; pe += 2) want += pe;
    CHECK(*sum == want, "team example: sum %d want %d", *sum, want);
    shmem_team_destroy(even);
  }
  shmem_free(sum);
  shmem_free(v);
}

/* shmem_put_signal: a message and its signal to the right neighbour, who
 * waits on the signal only. */
static void signal_example(void) {
  const int me = shmem_my_pe(), n = shmem_n_pes();
  long *msg = shmem_calloc(8, sizeof(long));
  long out[8];
  for (int i = 0; i < 8; ++i) out[i] = me + i;
  shmem_long_put_signal(msg, out, 8, &sig, 1, SHMEM_SIGNAL_SET, (me + 1) % n);
  shmem_signal_wait_until(&sig, SHMEM_CMP_EQ, 1);
  const int left = (me + n - 1) % n;
  for (int i = 0; i < 8; ++i) CHECK(msg[i] == left + i, "signal example [%d]", i);
  shmem_barrier_all();
  shmem_free(msg);
}

/* Contexts: a private context per thread in the specification; here one
 * context whose quiet completes its puts before a flag on the default one. */
static void context_example(void) {
  const int me = shmem_my_pe(), n = shmem_n_pes();
  shmem_ctx_t ctx;
  static int flag;
  int *data = shmem_calloc(16, sizeof(int));
  int out[16];
  for (int i = 0; i < 16; ++i) out[i] = me * 16 + i;
  if (shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx) != 0) ctx = SHMEM_CTX_DEFAULT;
  shmem_ctx_int_put_nbi(ctx, data, out, 16, (me + 1) % n);
  shmem_ctx_quiet(ctx);
  shmem_int_atomic_set(&flag, 1, (me + 1) % n);
  shmem_int_wait_until(&flag, SHMEM_CMP_EQ, 1);
  const int left = (me + n - 1) % n;
  for (int i = 0; i < 16; ++i) CHECK(data[i] == left * 16 + i, "context example [%d]", i);
  if (ctx != SHMEM_CTX_DEFAULT) shmem_ctx_destroy(ctx);
  shmem_barrier_all();
  shmem_free(data);
}

int main(void) {
  shmem_init();
  put_example();
  p_example();
  iput_example();
  cswap_example();
  lock_example();
  broadcast_example();
  wait_example();
  fcollect_example();
  ptr_example();
  team_example();
  signal_example();
  context_example();
  shmem_barrier_all();
  TEST_DONE("spec_examples");
  shmem_finalize();
  return 0;
}
