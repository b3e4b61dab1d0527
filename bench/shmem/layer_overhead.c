/* The OpenSHMEM layer's cost over tsunagi's own C API, in one process and one
 * run: PE 0 times an 8-byte put (with its quiet), get and fetch-add to PE 1
 * through libtsunagi-shmem, and the same operation on the same symmetric
 * words through tsunagi's calls (tsu_try_put_nbi / tsu_try_get_nbi /
 * tsu_try_atomic_nbi and tsu_quiet), batch by batch in turn, so that a slow
 * moment of the machine hits both columns.  Per row: median, mean and p99 over
 * the batches of the per-operation time, and the layer's overhead.
 * Target (issue 45): at most 5 ns or 10% over tsunagi's own call, the larger.
 *
 *   tsurun -n 2 build/release/bench/tsu-shmem-overhead [BATCHES]
 *   (docs/benchmarks-shmem.md)
 */
#include <shmem.h>
#include <tsunagi/tsunagi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kOpsPerBatch = 2000, kRows = 3 };

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void check(tsu_status_t st, const char *what) {
  if (st != TSU_OK) {
    fprintf(stderr, "layer_overhead: %s: %s (%s)\n", what, tsu_strerror(st), tsu_last_error());
    shmem_global_exit(1);
  }
}

/* The symmetric words: the target's and the initiator's own. */
static uint64_t *g_remote, *g_local;
static tsu_gaddr_t g_remote_addr;
static tsu_laddr_t g_local_addr;

static double shmem_batch(int row) {
  const double t0 = now_ns();
  uint64_t sink = 0;
  for (int i = 0; i < kOpsPerBatch; ++i) {
    switch (row) {
      case 0: shmem_putmem(g_remote, g_local, 8, 1); shmem_quiet(); break;
      case 1: shmem_getmem(g_local, g_remote + 1, 8, 1); break;
      default: sink += shmem_uint64_atomic_fetch_add(g_remote + 2, 1, 1); break;
    }
  }
  const double t = (now_ns() - t0) / kOpsPerBatch;
  g_local[3] += sink;
  return t;
}

static double tsu_batch(int row) {
  const double t0 = now_ns();
  uint64_t sink = 0, result = 0;
  const uint64_t one = 1;
  for (int i = 0; i < kOpsPerBatch; ++i) {
    switch (row) {
      case 0:
        check(tsu_try_put_nbi(g_remote_addr, g_local_addr, 8), "tsu_try_put_nbi");
        check(tsu_quiet(), "tsu_quiet");
        break;
      case 1:
        check(tsu_try_get_nbi(g_local_addr, tsu_gaddr_add(g_remote_addr, 8), 8), "tsu_try_get_nbi");
        check(tsu_quiet(), "tsu_quiet");
        break;
      default:
        check(tsu_try_atomic_nbi(tsu_gaddr_add(g_remote_addr, 16), TSU_AOP_FETCH_ADD,
                                 TSU_TYPE_UINT64, &one, NULL, &result),
              "tsu_try_atomic_nbi");
        check(tsu_quiet(), "tsu_quiet");
        sink += result;
        break;
    }
  }
  const double t = (now_ns() - t0) / kOpsPerBatch;
  g_local[3] += sink;
  return t;
}

static void summarize(double *v, int n, double *median, double *mean, double *p99) {
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += v[i];
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  *median = v[n / 2];
  *mean = sum / n;
  *p99 = v[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1];
}

int main(int argc, char **argv) {
  const int batches = argc > 1 ? atoi(argv[1]) : 300;
  shmem_init();
  if (shmem_n_pes() < 2 || batches < 1) {
    if (shmem_my_pe() == 0) fprintf(stderr, "usage: run on 2 PEs: layer_overhead [BATCHES]\n");
    shmem_finalize();
    return 2;
  }
  g_remote = shmem_calloc(4, sizeof(uint64_t));
  g_local = shmem_calloc(4, sizeof(uint64_t));
  if (!g_remote || !g_local) {
    fprintf(stderr, "layer_overhead: shmem_calloc failed\n");
    shmem_global_exit(1);
  }
  /* The heap is a tsunagi segment: the same words by tsunagi's addresses. */
  check(tsu_gaddr_of(g_remote, &g_remote_addr), "tsu_gaddr_of");
  g_remote_addr.rank = 1;
  check(tsu_laddr_of(g_local, &g_local_addr), "tsu_laddr_of");
  shmem_barrier_all();
  if (shmem_my_pe() == 0) {
    static const char *const names[kRows] = {"put 8 B + quiet", "get 8 B", "fetch-add 8 B"};
    double *lay = malloc(sizeof(double) * (size_t)batches);
    double *own = malloc(sizeof(double) * (size_t)batches);
    printf("# 8-byte operations PE 0 -> PE 1, %d batches of %d, ns per operation\n", batches,
           kOpsPerBatch);
    printf("%-16s %26s %26s %9s %7s\n", "row", "shmem median (mean, p99)",
           "tsunagi median (mean, p99)", "overhead", "target");
    for (int row = 0; row < kRows; ++row) {
      for (int w = 0; w < 20; ++w) { shmem_batch(row); tsu_batch(row); } /* warm-up */
      for (int b = 0; b < batches; ++b) {
        /* Alternate which goes first, so neither always follows the other. */
        if (b & 1) {
          own[b] = tsu_batch(row);
          lay[b] = shmem_batch(row);
        } else {
          lay[b] = shmem_batch(row);
          own[b] = tsu_batch(row);
        }
      }
      double lm, la, lp, om, oa, op;
      summarize(lay, batches, &lm, &la, &lp);
      summarize(own, batches, &om, &oa, &op);
      const double allowed = om * 0.10 > 5.0 ? om * 0.10 : 5.0;
      char l[40], o[40];
      snprintf(l, sizeof l, "%.1f (%.1f, %.1f)", lm, la, lp);
      snprintf(o, sizeof o, "%.1f (%.1f, %.1f)", om, oa, op);
      printf("%-16s %26s %26s %+8.1f %7s\n", names[row], l, o, lm - om,
             lm - om <= allowed ? "met" : "missed");
      printf("JSON {\"row\":\"%s\",\"shmem_ns\":%.2f,\"shmem_mean\":%.2f,\"shmem_p99\":%.2f,"
             "\"tsunagi_ns\":%.2f,\"tsunagi_mean\":%.2f,\"tsunagi_p99\":%.2f}\n",
             names[row], lm, la, lp, om, oa, op);
    }
    free(lay);
    free(own);
  }
  shmem_barrier_all();
  shmem_free(g_local);
  shmem_free(g_remote);
  shmem_finalize();
  return 0;
}
