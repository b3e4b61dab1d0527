/* Signaling operations (OpenSHMEM 1.5, 9.6): put_signal and put_signal_nbi
 * (typed, sized, mem, ctx), SHMEM_SIGNAL_SET and SHMEM_SIGNAL_ADD,
 * signal_fetch and signal_wait_until.  The data must be in place when the
 * signal is seen. */
#include "shmem_test.h"

enum { kLen = 4096, kRounds = 50 };

int main(void) {
  shmem_init();
  const int me = shmem_my_pe(), n = shmem_n_pes();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  long *data = shmem_calloc(kLen, sizeof(long));
  uint64_t *sig = shmem_calloc(4, sizeof(uint64_t));
  long *src = malloc(kLen * sizeof(long));
  CHECK(data && sig && src, "allocation");

  /* SET: round r writes data r and sets the signal to r; the receiver waits
   * for r, checks the data, and acknowledges with an ADD back. */
  for (int r = 1; r <= kRounds; ++r) {
    for (int i = 0; i < kLen; ++i) src[i] = (long)me * 1000000 + r * 1000 + i % 1000;
    switch (r % 4) {
      case 0: shmem_long_put_signal(data, src, kLen, &sig[0], (uint64_t)r, SHMEM_SIGNAL_SET, right); break;
      case 1:
        shmem_long_put_signal_nbi(data, src, kLen, &sig[0], (uint64_t)r, SHMEM_SIGNAL_SET, right);
        break;
      case 2:
        shmem_putmem_signal(data, src, kLen * sizeof(long), &sig[0], (uint64_t)r,
                            SHMEM_SIGNAL_SET, right);
        break;
      default:
        shmem_ctx_put64_signal_nbi(SHMEM_CTX_DEFAULT, data, src, kLen, &sig[0], (uint64_t)r,
                                   SHMEM_SIGNAL_SET, right);
    }
    const uint64_t seen = shmem_signal_wait_until(&sig[0], SHMEM_CMP_GE, (uint64_t)r);
    CHECK(seen == (uint64_t)r, "round %d: signal %lu", r, (unsigned long)seen);
    for (int i = 0; i < kLen; ++i)
      CHECK(data[i] == (long)left * 1000000 + r * 1000 + i % 1000, "round %d: data[%d] %ld", r, i,
            data[i]);
    /* Tell the left neighbour its buffer here may be overwritten. */
    shmem_putmem_signal(&data[0], &data[0], 0, &sig[1], 1, SHMEM_SIGNAL_ADD, left);
    shmem_signal_wait_until(&sig[1], SHMEM_CMP_GE, (uint64_t)r);
    shmem_quiet();
  }
  CHECK(shmem_signal_fetch(&sig[1]) == kRounds, "acks %lu", (unsigned long)shmem_signal_fetch(&sig[1]));

  /* ADD from every PE onto one signal of PE 0: the sum arrives. */
  shmem_barrier_all();
  const long one = me;
  shmem_long_put_signal(&data[me], &one, 1, &sig[2], (uint64_t)me + 1, SHMEM_SIGNAL_ADD, 0);
  shmem_put32_signal(&((int32_t *)&data[kLen / 2])[me], &me, 1, &sig[3], 1, SHMEM_SIGNAL_ADD, 0);
  if (me == 0) {
    const uint64_t want = (uint64_t)n * (n + 1) / 2;
    CHECK(shmem_signal_wait_until(&sig[2], SHMEM_CMP_EQ, want) == want, "sum of adds");
    shmem_signal_wait_until(&sig[3], SHMEM_CMP_EQ, (uint64_t)n);
    for (int pe = 0; pe < n; ++pe) {
      CHECK(data[pe] == pe, "data of PE %d: %ld", pe, data[pe]);
      CHECK(((int32_t *)&data[kLen / 2])[pe] == pe, "put32 data of PE %d", pe);
    }
    CHECK(shmem_signal_fetch(&sig[2]) == want, "signal_fetch");
  }
  /* signal_wait_until with each comparison that already holds. */
  sig[2] = 10;
  CHECK(shmem_signal_wait_until(&sig[2], SHMEM_CMP_NE, 11) == 10, "NE");
  CHECK(shmem_signal_wait_until(&sig[2], SHMEM_CMP_GT, 9) == 10, "GT");
  CHECK(shmem_signal_wait_until(&sig[2], SHMEM_CMP_LE, 10) == 10, "LE");
  CHECK(shmem_signal_wait_until(&sig[2], SHMEM_CMP_LT, 11) == 10, "LT");
  shmem_barrier_all();
  free(src);
  shmem_free(sig);
  shmem_free(data);
  TEST_DONE("signals");
  shmem_finalize();
  return 0;
}
