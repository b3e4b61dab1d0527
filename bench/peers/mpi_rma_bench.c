/* mpi_rma_bench: the tsu-bench workloads with MPI-3 RMA and two-sided MPI, for
 * side-by-side comparison (bench/compare).  Rank 0 measures against rank 1:
 *
 *   rma latency   MPI_Put / MPI_Get of SIZE bytes + MPI_Win_flush, one at a time
 *   rma rate      8 B MPI_Put / MPI_Get, a window of 64, then MPI_Win_flush
 *   bw            MPI_Put / MPI_Get, a window of 16, then MPI_Win_flush -> GB/s
 *   atomic        MPI_Fetch_and_op(MPI_SUM) / MPI_Compare_and_swap on 8-byte
 *                 words, latency (+ flush each) and rate (window 64 + flush),
 *                 target = rank 0 itself ("own") or rank 1 ("peer")
 *   pingpong      MPI_Send / MPI_Recv, half the round trip
 *
 * The window is MPI_Win_allocate'd and opened once with MPI_Win_lock_all
 * (passive target); rank 1 waits in MPI_Ibarrier + nanosleep while rank 0
 * measures RMA, so it does not take a CPU (as tsu-bench's idle ranks).
 * Each point: one uncounted warm-up of half a repetition, then REPS
 * repetitions of DURATION ms; median, min and max.  Output: a table on stdout
 * and, with --json FILE, JSON lines in tsu-bench's schema ("impl":"mpi").
 *
 *   mpirun --allow-run-as-root --oversubscribe -n 2 mpi-rma-bench [--quick]
 *          [--reps N] [--duration-ms D] [--json FILE]
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define MAX_SIZE ((size_t)4 << 20)
#define BW_MAX_SIZE ((size_t)64 << 20)
#define RATE_WINDOW 64
#define BW_WINDOW 16
#define MAX_REPS 101

static int g_reps = 5;
static double g_duration_ms = 50;
static int g_quick = 0;
static FILE *g_json = NULL;
static MPI_Win g_win;
static char *g_base; /* this rank's window memory */
static char *g_local; /* origin buffer */

static double now_s(void) { return MPI_Wtime(); }

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct {
  double median, min, max;
  int n;
} summary_t;

static summary_t summarize(double *v, int n) {
  summary_t s = {0, 0, 0, n};
  if (n == 0) return s;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  s.min = v[0];
  s.max = v[n - 1];
  s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  return s;
}

static double loadavg(void) {
  double l = 0;
  FILE *f = fopen("/proc/loadavg", "r");
  if (f) {
    if (fscanf(f, "%lf", &l) != 1) l = 0;
    fclose(f);
  }
  return l;
}

static void emit(const char *benchmark, const char *metric, const char *op, size_t size,
                 const char *unit, summary_t s, const char *labels, const char *extra) {
  if (!g_json) return;
  struct utsname u;
  uname(&u);
  char stamp[32];
  time_t t = time(NULL);
  strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
  fprintf(g_json,
          "{\"impl\":\"mpi\",\"benchmark\":\"%s\",\"metric\":\"%s\",\"op\":\"%s\",\"size\":%zu,"
          "\"threads\":1,\"mode\":\"%s\",\"transport\":\"%s\",\"unit\":\"%s\","
          "\"median\":%.6g,\"min\":%.6g,\"max\":%.6g,\"reps\":%d%s%s%s,"
          "\"duration_ms\":%g,\"quick\":%s,"
          "\"host\":{\"cpus\":%ld,\"kernel\":\"%s\",\"loadavg_1m\":%.2f},\"time\":\"%s\"}\n",
          benchmark, metric, op, size, strcmp(benchmark, "pingpong") ? "mpi-rma" : "mpi-p2p",
          getenv("OMPI_MCA_osc") ? getenv("OMPI_MCA_osc") : "default", unit, s.median, s.min, s.max, s.n, labels ? "," : "", labels ? labels : "",
          extra ? extra : "", g_duration_ms, g_quick ? "true" : "false",
          sysconf(_SC_NPROCESSORS_ONLN), u.release, loadavg(), stamp);
  fflush(g_json);
}

static const char *fmt(double v, char *buf) {
  double a = v < 0 ? -v : v;
  if (a >= 1000 || a == 0) sprintf(buf, "%.0f", v);
  else if (a >= 100) sprintf(buf, "%.1f", v);
  else if (a >= 10) sprintf(buf, "%.2f", v);
  else sprintf(buf, "%.3f", v);
  return buf;
}

static void print_row(const char *what, const char *op, size_t size, summary_t s,
                      const char *unit) {
  char a[32], b[32], c[32];
  printf("| %-16s | %-5s | %9zu | %12s [%s-%s] | %-6s |\n", what, op, size, fmt(s.median, a),
         fmt(s.min, b), fmt(s.max, c), unit);
  fflush(stdout);
}

/* ---- RMA kernels (rank 0 only) ------------------------------------------ */
enum { OP_PUT, OP_GET, OP_FADD, OP_CAS };
static const char *op_name(int op) {
  switch (op) {
    case OP_PUT: return "put";
    case OP_GET: return "get";
    case OP_FADD: return "fadd";
    default: return "cas";
  }
}

static uint64_t g_results[RATE_WINDOW];

static void issue(int op, int target, size_t size, MPI_Aint disp, uint64_t seq) {
  static const uint64_t one = 1;
  uint64_t cmp = seq, next = seq + 1;
  switch (op) {
    case OP_PUT:
      MPI_Put(g_local, (int)size, MPI_BYTE, target, disp, (int)size, MPI_BYTE, g_win);
      break;
    case OP_GET:
      MPI_Get(g_local, (int)size, MPI_BYTE, target, disp, (int)size, MPI_BYTE, g_win);
      break;
    case OP_FADD:
      MPI_Fetch_and_op(&one, &g_results[seq % RATE_WINDOW], MPI_UINT64_T, target, disp, MPI_SUM,
                       g_win);
      break;
    default:
      MPI_Compare_and_swap(&next, &cmp, &g_results[seq % RATE_WINDOW], MPI_UINT64_T, target, disp,
                           g_win);
  }
}

/* One repetition: ops in windows of `window` (1 = latency), each window ended
 * by a flush.  Returns seconds per operation. */
static double run_window(int op, int target, size_t size, MPI_Aint disp, int window,
                         double duration_ms) {
  uint64_t n = 0;
  const double t0 = now_s(), end = t0 + duration_ms * 1e-3;
  double t;
  do {
    for (int k = 0; k < window; ++k) issue(op, target, size, disp, n++);
    MPI_Win_flush(target, g_win);
  } while ((t = now_s()) < end);
  return (t - t0) / (double)n;
}

static summary_t measure(int op, int target, size_t size, MPI_Aint disp, int window) {
  double v[MAX_REPS];
  run_window(op, target, size, disp, window, g_duration_ms / 2 > 1 ? g_duration_ms / 2 : 1);
  for (int r = 0; r < g_reps; ++r) v[r] = run_window(op, target, size, disp, window, g_duration_ms);
  return summarize(v, g_reps);
}

static void scale(summary_t *s, double f, int invert) {
  if (invert) {
    const double lo = f / s->max, hi = f / s->min;
    s->median = f / s->median;
    s->min = lo;
    s->max = hi;
  } else {
    s->median *= f;
    s->min *= f;
    s->max *= f;
  }
}

static void rma_tests(void) {
  static const size_t quick_sizes[] = {8, 4096, 1 << 20};
  size_t sizes[32];
  int nsizes = 0;
  if (g_quick) {
    for (int i = 0; i < 3; ++i) sizes[nsizes++] = quick_sizes[i];
  } else {
    for (size_t s = 1; s <= MAX_SIZE; s *= 2) sizes[nsizes++] = s;
  }
  printf("\n## mpi_rma_bench: MPI-3 RMA, rank 0 -> rank 1, MPI_Win_lock_all, reps=%d "
         "duration=%.0f ms load(1m)=%.2f\n\n", g_reps, g_duration_ms, loadavg());
  printf("| %-16s | %-5s | %9s | %-24s | %-6s |\n", "figure", "op", "size", "median [min-max]",
         "unit");
  printf("| ---------------- | ----- | --------: | -----------------------: | ------ |\n");
  /* latency: put / get + flush, one at a time; 4 B .. 4 MiB */
  for (int op = OP_PUT; op <= OP_GET; ++op)
    for (int i = 0; i < nsizes; ++i) {
      summary_t s = measure(op, 1, sizes[i], 0, 1);
      scale(&s, 1e9, 0);
      print_row("latency", op_name(op), sizes[i], s, "ns");
      emit("rma", "latency", op_name(op), sizes[i], "ns", s, NULL, ",\"extra\":{\"window\":1}");
    }
  /* message rate: 8 B, window 64 */
  for (int op = OP_PUT; op <= OP_GET; ++op) {
    summary_t s = measure(op, 1, 8, 0, RATE_WINDOW);
    scale(&s, 1e-6, 1);
    print_row("rate", op_name(op), 8, s, "Mmsg/s");
    emit("rma", "rate", op_name(op), 8, "Mmsg/s", s, NULL, ",\"extra\":{\"window\":64}");
  }
  /* bandwidth: window 16, 8 B .. 64 MiB by 4 */
  for (int op = OP_PUT; op <= OP_GET; ++op)
    for (size_t size = 8; size <= BW_MAX_SIZE; size *= g_quick ? 64 : 4) {
      summary_t s = measure(op, 1, size, 0, BW_WINDOW);
      scale(&s, (double)size * 1e-9, 1);
      print_row("bandwidth", op_name(op), size, s, "GB/s");
      emit("bw", "bandwidth", op_name(op), size, "GB/s", s, NULL, ",\"extra\":{\"window\":16}");
    }
  /* atomics: 8-byte fetch-add / CAS, own memory and peer, latency and rate */
  for (int own = 1; own >= 0; --own)
    for (int op = OP_FADD; op <= OP_CAS; ++op) {
      const int target = own ? 0 : 1;
      const MPI_Aint disp = 64 * 1024; /* its own page */
      char labels[96];
      snprintf(labels, sizeof labels, "\"target\":\"%s\",\"interference\":\"none\"",
               own ? "own" : "peer");
      char what[32];
      summary_t s = measure(op, target, 8, disp, 1);
      scale(&s, 1e9, 0);
      snprintf(what, sizeof what, "atomic lat %s", own ? "own" : "peer");
      print_row(what, op_name(op), 8, s, "ns");
      emit("atomic", "latency", op_name(op), 8, "ns", s, labels, ",\"extra\":{\"window\":1}");
      s = measure(op, target, 8, disp, RATE_WINDOW);
      scale(&s, 1e-6, 1);
      snprintf(what, sizeof what, "atomic rate %s", own ? "own" : "peer");
      print_row(what, op_name(op), 8, s, "Mops/s");
      emit("atomic", "rate", op_name(op), 8, "Mops/s", s, labels, ",\"extra\":{\"window\":64}");
    }
}

/* ---- two-sided ping-pong (both ranks) ------------------------------------- */
static double pingpong_once(int rank, size_t size, long iters) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = now_s();
  for (long i = 0; i < iters; ++i) {
    if (rank == 0) {
      MPI_Send(g_local, (int)size, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(g_local, (int)size, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(g_local, (int)size, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(g_local, (int)size, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
    }
  }
  return (now_s() - t0) / (double)iters / 2; /* one way */
}

static void pingpong_tests(int rank) {
  if (rank > 1) return;
  for (size_t size = 1; size <= MAX_SIZE; size *= g_quick ? 4096 : 4) {
    /* calibrate on rank 0, tell rank 1 the iteration count */
    long iters = 100;
    double t = pingpong_once(rank, size, iters);
    iters = (long)(g_duration_ms * 1e-3 / (2 * t));
    if (iters < 10) iters = 10;
    MPI_Bcast(&iters, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    double v[MAX_REPS];
    for (int r = 0; r < g_reps; ++r) v[r] = pingpong_once(rank, size, iters) * 1e9;
    if (rank == 0) {
      summary_t s = summarize(v, g_reps);
      print_row("pingpong 1-way", "send", size, s, "ns");
      emit("pingpong", "latency", "sendrecv", size, "ns", s, NULL, ",\"extra\":{\"window\":1}");
    }
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const char *json_path = NULL;
  int reps_set = 0, duration_set = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--quick")) g_quick = 1;
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc) g_reps = atoi(argv[++i]), reps_set = 1;
    else if (!strcmp(argv[i], "--duration-ms") && i + 1 < argc)
      g_duration_ms = atof(argv[++i]), duration_set = 1;
    else if (!strcmp(argv[i], "--json") && i + 1 < argc) json_path = argv[++i];
    else {
      if (rank == 0) fprintf(stderr, "mpi_rma_bench: unknown argument '%s'\n", argv[i]);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  if (g_quick) {
    if (!reps_set) g_reps = 1;
    if (!duration_set) g_duration_ms = 2;
  }
  if (g_reps < 1 || g_reps > MAX_REPS || g_duration_ms <= 0) {
    if (rank == 0) fprintf(stderr, "mpi_rma_bench: --reps 1..%d, --duration-ms > 0\n", MAX_REPS);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (size < 2) {
    if (rank == 0) fprintf(stderr, "mpi_rma_bench: needs 2 ranks (mpirun -n 2)\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (rank == 0 && json_path) {
    g_json = fopen(json_path, "a");
    if (!g_json) {
      perror(json_path);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  const size_t win_bytes = BW_MAX_SIZE + (1 << 20);
  MPI_Win_allocate((MPI_Aint)win_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &g_base, &g_win);
  memset(g_base, 0, win_bytes);
  g_local = malloc(BW_MAX_SIZE);
  memset(g_local, 1, BW_MAX_SIZE);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Win_lock_all(0, g_win);
  if (rank == 0) rma_tests();
  /* the others sleep until rank 0 is done */
  MPI_Request req;
  MPI_Ibarrier(MPI_COMM_WORLD, &req);
  int done = 0;
  while (!done) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (!done) {
      struct timespec ts = {0, 200000};
      nanosleep(&ts, NULL);
    }
  }
  MPI_Win_unlock_all(g_win);
  pingpong_tests(rank);
  MPI_Win_free(&g_win);
  free(g_local);
  if (g_json) fclose(g_json);
  MPI_Finalize();
  return 0;
}
