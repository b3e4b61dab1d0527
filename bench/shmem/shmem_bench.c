/* shmem_bench: OpenSHMEM micro-benchmarks in portable OpenSHMEM 1.4 (no
 * library-specific calls), so that the same source builds with tsunagi's
 * oshcc and with any other implementation's (bench/shmem/run.sh runs them
 * side by side).
 *
 *   shmem_bench [-q] [max_bytes]
 *
 * Point-to-point rows run between PE 0 and the last PE while the others
 * wait; collective rows use every PE.  Each row prints
 *   ROW <name> <bytes> <value> <unit>
 * with the value the median of 5 timed runs:
 *   put_lat    shmem_putmem + shmem_quiet (remote completion), us
 *   get_lat    shmem_getmem, us
 *   put_nbi    shmem_putmem_nbi windows of 64, one quiet each: messages/s (M)
 *   put_bw     the same in MB/s
 *   fadd_lat / cswap_lat / finc_lat   blocking atomics on a long, us
 *   amo_rate   shmem_long_atomic_add windows of 64 + quiet, M ops/s
 *   barrier    shmem_barrier_all, us
 *   bcast / reduce (long sum) / fcollect   active-set forms over all PEs, us */
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The active-set collectives are deprecated in 1.5 but are what every
 * implementation of 1.4 (Open MPI's OSHMEM included) has. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#define MAX_DEFAULT (4L << 20)
#define RUNS 5
#define WINDOW 64

static long pSync[SHMEM_REDUCE_SYNC_SIZE > SHMEM_BCAST_SYNC_SIZE
                      ? (SHMEM_REDUCE_SYNC_SIZE > SHMEM_COLLECT_SYNC_SIZE ? SHMEM_REDUCE_SYNC_SIZE
                                                                          : SHMEM_COLLECT_SYNC_SIZE)
                      : (SHMEM_BCAST_SYNC_SIZE > SHMEM_COLLECT_SYNC_SIZE ? SHMEM_BCAST_SYNC_SIZE
                                                                         : SHMEM_COLLECT_SYNC_SIZE)];
static long pWrk[(1 << 16) / 2 + 1 + SHMEM_REDUCE_MIN_WRKDATA_SIZE];
static int me, npes, peer;

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Iterations for a row: fewer for big messages. */
static long iters_for(long bytes, long base) {
  long it = base;
  if (bytes > 8192) it = base * 8192 / bytes;
  return it < 10 ? 10 : it;
}

/* Sizes: 8 B times 8 each step, and the maximum itself (4 MiB). */
static long next_size(long b, long max) { return b < max && b * 8 > max ? max : b * 8; }

static void row(const char *name, long bytes, double value, const char *unit) {
  if (me == 0) printf("ROW %-10s %9ld %12.3f %s\n", name, bytes, value, unit);
  fflush(stdout);
}

/* Runs body RUNS times on PE 0 (after a warm-up) and returns the median time
 * per iteration in us; the other PEs wait in the barrier. */
#define TIMED_P2P(result, iters, body)                                 \
  do {                                                                 \
    double t_[RUNS];                                                   \
    for (int r_ = -1; r_ < RUNS; ++r_) {                               \
      shmem_barrier_all();                                             \
      if (me == 0) {                                                   \
        const double s_ = now_us();                                    \
        for (long i = 0; i < (iters); ++i) { body; }                   \
        if (r_ >= 0) t_[r_] = (now_us() - s_) / (double)(iters);       \
      }                                                                \
    }                                                                  \
    shmem_barrier_all();                                               \
    qsort(t_, RUNS, sizeof t_[0], cmp_double);                         \
    (result) = t_[RUNS / 2];                                           \
  } while (0)

/* Every PE runs body; the time is PE 0's (collectives end together). */
#define TIMED_ALL(result, iters, body)                                 \
  do {                                                                 \
    double t_[RUNS];                                                   \
    for (int r_ = -1; r_ < RUNS; ++r_) {                               \
      shmem_barrier_all();                                             \
      const double s_ = now_us();                                      \
      for (long i = 0; i < (iters); ++i) { body; }                     \
      if (r_ >= 0) t_[r_] = (now_us() - s_) / (double)(iters);         \
    }                                                                  \
    qsort(t_, RUNS, sizeof t_[0], cmp_double);                         \
    (result) = t_[RUNS / 2];                                           \
  } while (0)

int main(int argc, char **argv) {
  long max = MAX_DEFAULT;
  for (int a = 1; a < argc; ++a)
    if (argv[a][0] != '-') max = atol(argv[a]);
  for (size_t i = 0; i < sizeof pSync / sizeof pSync[0]; ++i) pSync[i] = SHMEM_SYNC_VALUE;
  shmem_init();
  me = shmem_my_pe();
  npes = shmem_n_pes();
  peer = npes - 1;
  char *src = shmem_malloc((size_t)max), *dst = shmem_malloc((size_t)max * (size_t)npes);
  long *word = shmem_malloc(sizeof(long));
  if (!src || !dst || !word) {
    fprintf(stderr, "shmem_bench: shmem_malloc of %ld bytes failed (SHMEM_SYMMETRIC_SIZE?)\n",
            max * (npes + 1));
    shmem_global_exit(1);
  }
  memset(src, me + 1, (size_t)max);
  memset(dst, 0, (size_t)max * (size_t)npes);
  *word = 0;
  if (me == 0) printf("# shmem_bench: %d PEs, peer PE %d\n", npes, peer);
  double t;

  for (long b = 8; b <= max; b = next_size(b, max)) {
    TIMED_P2P(t, iters_for(b, 20000), shmem_putmem(dst, src, (size_t)b, peer); shmem_quiet());
    row("put_lat", b, t, "us");
  }
  for (long b = 8; b <= max; b = next_size(b, max)) {
    TIMED_P2P(t, iters_for(b, 20000), shmem_getmem(dst, src, (size_t)b, peer));
    row("get_lat", b, t, "us");
  }
  for (long b = 8; b <= max; b = next_size(b, max)) {
    const long windows = iters_for(b, 2000) / 4 + 1;
    TIMED_P2P(t, windows, for (int w = 0; w < WINDOW; ++w)
                              shmem_putmem_nbi(dst, src, (size_t)b, peer);
              shmem_quiet());
    row("put_nbi", b, WINDOW / t, "Mmsg/s");
    row("put_bw", b, WINDOW * (double)b / t, "MB/s");
  }
  TIMED_P2P(t, 20000, shmem_long_atomic_fetch_add(word, 1, peer));
  row("fadd_lat", 8, t, "us");
  TIMED_P2P(t, 20000, shmem_long_atomic_compare_swap(word, 0, 1, peer));
  row("cswap_lat", 8, t, "us");
  TIMED_P2P(t, 20000, shmem_long_atomic_fetch_inc(word, peer));
  row("finc_lat", 8, t, "us");
  TIMED_P2P(t, 500, for (int w = 0; w < WINDOW; ++w) shmem_long_atomic_add(word, 1, peer);
            shmem_quiet());
  row("amo_rate", 8, WINDOW / t, "Mops/s");

  TIMED_ALL(t, 2000, shmem_barrier_all());
  row("barrier", 0, t, "us");
  for (long b = 8; b <= max; b = next_size(b, max)) {
    TIMED_ALL(t, iters_for(b, 2000),
              shmem_broadcast64(dst, src, (size_t)b / 8, 0, 0, 0, npes, pSync);
              shmem_barrier_all());
    row("bcast", b, t, "us");
  }
  for (long b = 8; b <= (1 << 16) && b <= max; b *= 8) {
    TIMED_ALL(t, iters_for(b, 2000),
              shmem_long_sum_to_all((long *)dst, (long *)src, (int)(b / 8), 0, 0, npes, pWrk,
                                    pSync);
              shmem_barrier_all());
    row("reduce", b, t, "us");
  }
  for (long b = 8; b <= max / npes && b <= max; b *= 8) {
    TIMED_ALL(t, iters_for(b * npes, 2000),
              shmem_fcollect64(dst, src, (size_t)b / 8, 0, 0, npes, pSync); shmem_barrier_all());
    row("fcollect", b, t, "us");
  }
  shmem_barrier_all();
  shmem_free(word);
  shmem_free(dst);
  shmem_free(src);
  shmem_finalize();
  return 0;
}
