/* Memory ordering (OpenSHMEM 1.5, 9.9): data put before a shmem_fence is
 * delivered before a flag put after it; after shmem_quiet every earlier put
 * (blocking or _nbi) is complete everywhere; the same scoped to a context
 * with shmem_ctx_fence / shmem_ctx_quiet.  The receiver waits on the flag
 * and then checks every word of the data. */
#include "shmem_test.h"

enum { kWords = 2048, kRounds = 40 };

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  long *data = shmem_calloc(kWords, sizeof(long));
  long *flag = shmem_calloc(2, sizeof(long));
  long *src = malloc(kWords * sizeof(long));
  CHECK(data && flag && src, "allocation");
  shmem_ctx_t ctx = SHMEM_CTX_DEFAULT;
  const int have_ctx = shmem_ctx_create(0, &ctx) == 0;
  if (!have_ctx) ctx = SHMEM_CTX_DEFAULT;

  for (int r = 1; r <= kRounds; ++r) {
    for (int i = 0; i < kWords; ++i) src[i] = (long)r * 100000 + me * 1000 + i % 1000;
    switch (r % 4) {
      case 0:  /* blocking puts, fence, flag */
        for (int i = 0; i < kWords; i += 256) shmem_long_put(&data[i], &src[i], 256, right);
        shmem_fence();
        shmem_long_p(&flag[0], r, right);
        break;
      case 1:  /* nbi puts, quiet, flag */
        for (int i = 0; i < kWords; i += 128) shmem_long_put_nbi(&data[i], &src[i], 128, right);
        shmem_quiet();
        shmem_long_atomic_set(&flag[0], r, right);
        break;
      case 2:  /* word by word with p, fence, atomic flag */
        for (int i = 0; i < kWords; ++i) shmem_long_p(&data[i], src[i], right);
        shmem_fence();
        shmem_long_atomic_set(&flag[0], r, right);
        break;
      default:  /* on a context of our own: ctx_fence orders its puts */
        for (int i = 0; i < kWords; i += 512)
          shmem_ctx_long_put_nbi(ctx, &data[i], &src[i], 512, right);
        shmem_ctx_fence(ctx);
        shmem_ctx_long_p(ctx, &flag[0], r, right);
        shmem_ctx_quiet(ctx);
        break;
    }
    shmem_long_wait_until(&flag[0], SHMEM_CMP_EQ, r);
    for (int i = 0; i < kWords; ++i)
      CHECK(data[i] == (long)r * 100000 + left * 1000 + i % 1000,
            "round %d: data[%d] is %ld when the flag came", r, i, data[i]);
    /* Acknowledge so that the left neighbour may overwrite the data. */
    shmem_long_atomic_inc(&flag[1], left);
    shmem_long_wait_until(&flag[1], SHMEM_CMP_GE, r);
  }
  /* shmem_quiet makes puts visible to third parties: PE me puts to PE
   * right, quiets, then tells PE right+1 (through a flag) to read the data
   * from PE right with a get. */
  shmem_barrier_all();
  if (n >= 3) {
    data[0] = 0;
    flag[0] = 0;
    shmem_barrier_all();
    const long mine = 777000 + me;
    shmem_long_put(&data[1], &mine, 1, right);
    shmem_quiet();
    shmem_long_atomic_set(&flag[0], 1, (me + 2) % n);
    shmem_long_wait_until(&flag[0], SHMEM_CMP_EQ, 1);
    const int writer = (me + n - 2) % n, holder = (me + n - 1) % n;
    CHECK(shmem_long_g(&data[1], holder) == 777000 + writer, "third-party view after quiet");
  }
  shmem_barrier_all();
  if (have_ctx) shmem_ctx_destroy(ctx);
  free(src);
  shmem_free(flag);
  shmem_free(data);
  TEST_DONE("ordering");
  shmem_finalize();
  return 0;
}
