/* Open MPI peer benchmark for docs/benchmarks-messaging.md: the same
 * pingpong (plain and with the next receive pre-posted, as in seed 004's
 * modified osu_latency) and collective latencies as tsu-bench-msg.
 *   mpirun --allow-run-as-root --oversubscribe -np 2 tsu-peers-mpi pingpong [--prepost]
 *   mpirun ... -np 2 tsu-peers-mpi stream [--max B]   (message rate, as tsu-bench stream)
 *   mpirun ... -np N tsu-peers-mpi coll */
#define _GNU_SOURCE
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int iters_for(size_t size) { return size <= 4096 ? 4000 : size <= 65536 ? 1000 : 200; }

static void pin(int rank, const char *cpus) {
  if (!cpus) return;
  int a = -1, b = -1;
  if (sscanf(cpus, "%d,%d", &a, &b) < 1) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(rank == 0 || b < 0 ? a : b, &set);
  sched_setaffinity(0, sizeof set, &set);
}

static void pingpong(int me, int prepost, size_t maxb) {
  char *s = malloc(maxb + 1), *r = malloc(maxb + 1);
  memset(s, 1, maxb + 1);
  if (me == 0) printf("# Open MPI pingpong %s (half round trip, us; median and best of 5)\n%10s %10s %10s\n", prepost ? "pre-posted" : "plain", "bytes", "median", "best");
  for (size_t size = 1; size <= maxb; size *= 2) {
    int reps = 5, iters = iters_for(size) / reps, warm = iters / 5 + 10, peer = me ^ 1;
    if (iters < 20) iters = 20;
    int total = warm + reps * iters;
    double t0 = 0, rl[5];
    int nr = 0;
    MPI_Request req;
    MPI_Barrier(MPI_COMM_WORLD);
    if (prepost) MPI_Irecv(r, (int)size, MPI_CHAR, peer, 1, MPI_COMM_WORLD, &req);
    for (int i = 0; i < total; ++i) {
      if (i >= warm && (i - warm) % iters == 0) t0 = MPI_Wtime();
      if (!prepost) {
        if (me == 0) {
          MPI_Send(s, (int)size, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
          MPI_Recv(r, (int)size, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
          MPI_Recv(r, (int)size, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          MPI_Send(s, (int)size, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
        }
      } else {
        if (me == 0) {
          MPI_Send(s, (int)size, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
          MPI_Wait(&req, MPI_STATUS_IGNORE);
          if (i + 1 < total) MPI_Irecv(r, (int)size, MPI_CHAR, peer, 1, MPI_COMM_WORLD, &req);
        } else {
          MPI_Wait(&req, MPI_STATUS_IGNORE);
          if (i + 1 < total) MPI_Irecv(r, (int)size, MPI_CHAR, peer, 1, MPI_COMM_WORLD, &req);
          MPI_Send(s, (int)size, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
        }
      }
      if (i >= warm && (i - warm) % iters == iters - 1) rl[nr++] = (MPI_Wtime() - t0) * 1e6 / iters / 2;
    }
    for (int a = 0; a < nr; ++a)
      for (int b = a + 1; b < nr; ++b)
        if (rl[b] < rl[a]) { double t = rl[a]; rl[a] = rl[b]; rl[b] = t; }
    double lat = rl[nr / 2], best = rl[0];
    if (me == 0) printf("%10zu %10.3f %10.3f\n", size, lat, best);
    fflush(stdout);
  }
  free(s);
  free(r);
}

/* tsu-bench stream's protocol: per round rank 1 posts a window of 64
 * receives and sends "ready"; rank 0 waits for it and sends 64 messages.
 * Same round count, the same warm-up (a fifth of the rounds) and the median
 * of 5 timed runs per size. */
static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void stream_rounds(int me, int rounds, size_t size, char *s, char *r) {
  enum { W = 64 };
  MPI_Request req[W];
  for (int k = 0; k < rounds && me < 2; ++k) {
    if (me == 1) {
      for (int i = 0; i < W; ++i) MPI_Irecv(r + i * size, (int)size, MPI_CHAR, 0, 1, MPI_COMM_WORLD, &req[i]);
      MPI_Send(NULL, 0, MPI_CHAR, 0, 2, MPI_COMM_WORLD);
      MPI_Waitall(W, req, MPI_STATUSES_IGNORE);
    } else {
      MPI_Recv(NULL, 0, MPI_CHAR, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      for (int i = 0; i < W; ++i) MPI_Isend(s, (int)size, MPI_CHAR, 1, 1, MPI_COMM_WORLD, &req[i]);
      MPI_Waitall(W, req, MPI_STATUSES_IGNORE);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD); /* rank 1 has every message */
}

static void stream(int me, size_t minb, size_t maxb) {
  enum { W = 64 };
  char *s = malloc(maxb + 1), *r = malloc((maxb + 1) * W);
  memset(s, 1, maxb + 1);
  if (me == 0) printf("# Open MPI stream: window %d, rank 0 -> 1\n%10s %12s %10s\n", W, "bytes", "Mmsg/s", "MB/s");
  for (size_t size = minb; size <= maxb; size = size ? size * 2 : 1) {
    int rounds = (int)((4u << 20) / (size + 64) / W);
    if (rounds < 20) rounds = 20;
    double rep_us[5];
    MPI_Barrier(MPI_COMM_WORLD);
    stream_rounds(me, rounds / 5 > 2 ? rounds / 5 : 2, size, s, r); /* warm-up */
    for (int rep = 0; rep < 5; ++rep) {
      const double t0 = MPI_Wtime();
      stream_rounds(me, rounds, size, s, r);
      rep_us[rep] = (MPI_Wtime() - t0) * 1e6;
    }
    qsort(rep_us, 5, sizeof rep_us[0], cmp_double);
    const double us = rep_us[2], msgs = (double)rounds * W;
    if (me == 0) printf("%10zu %12.3f %10.1f\n", size, msgs / us, msgs * (double)size / us);
    fflush(stdout);
    if (size == 0) break;
  }
  free(s);
  free(r);
}

static void coll(int me, int n, size_t maxb) {
  double *a = malloc(maxb + 8), *b = malloc(maxb + 8);
  char *g = malloc(maxb * (size_t)n + 1), *x = malloc(maxb * (size_t)n + 1);
  memset(x, 1, maxb * (size_t)n + 1);
  for (size_t i = 0; i < maxb / 8 + 1; ++i) a[i] = 1.0;
  /* Median of 5 repetitions of the slowest rank's time, as tsu-bench-msg. */
  for (int kind = 0; kind < 7; ++kind) {
    for (size_t bytes = kind == 0 ? 0 : 8; bytes <= (kind == 0 ? 0 : maxb);
         bytes = bytes < maxb && bytes * 8 > maxb ? maxb : bytes * 8) {
      int iters = bytes <= 4096 ? 2000 : bytes <= 65536 ? 300 : 50;
      double worst[5];
      for (int rep = 0; rep < 5; ++rep) {
        MPI_Barrier(MPI_COMM_WORLD);
        int warm = rep == 0 ? 20 : 2;
        double t0 = 0;
        for (int i = 0; i < iters + warm; ++i) {
          if (i == warm) t0 = MPI_Wtime();
          if (kind == 0) MPI_Barrier(MPI_COMM_WORLD);
          if (kind == 1) MPI_Allreduce(a, b, (int)(bytes / 8), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
          if (kind == 2) MPI_Bcast(a, (int)bytes, MPI_CHAR, 0, MPI_COMM_WORLD);
          if (kind == 3) MPI_Allgather(a, (int)bytes, MPI_CHAR, g, (int)bytes, MPI_CHAR, MPI_COMM_WORLD);
          if (kind == 4) MPI_Reduce(a, b, (int)(bytes / 8), MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
          if (kind == 5) MPI_Gather(a, (int)bytes, MPI_CHAR, g, (int)bytes, MPI_CHAR, 0, MPI_COMM_WORLD);
          if (kind == 6) MPI_Alltoall(x, (int)bytes, MPI_CHAR, g, (int)bytes, MPI_CHAR, MPI_COMM_WORLD);
        }
        double us = (MPI_Wtime() - t0) * 1e6 / iters;
        MPI_Allreduce(&us, &worst[rep], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      }
      for (int x = 0; x < 5; ++x)
        for (int y = x + 1; y < 5; ++y)
          if (worst[y] < worst[x]) { double t = worst[x]; worst[x] = worst[y]; worst[y] = t; }
      static const char *names[] = {"barrier", "allreduce", "broadcast", "allgather",
                                    "reduce", "gather", "alltoall"};
      if (me == 0) printf("%-10s %3d ranks %10zu B %10.3f us (Open MPI)\n", names[kind], n, bytes, worst[2]);
      fflush(stdout);
      if (kind == 0) break;
    }
  }
  free(a);
  free(b);
  free(g);
  free(x);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int me, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const char *cmd = argc > 1 ? argv[1] : "pingpong";
  int prepost = 0;
  size_t maxb = 1u << 20, minb = 8;
  const char *cpus = NULL;
  for (int i = 2; i < argc; ++i) {
    if (!strcmp(argv[i], "--prepost")) prepost = 1;
    else if (!strcmp(argv[i], "--max") && i + 1 < argc) maxb = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--min") && i + 1 < argc) minb = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--cpus") && i + 1 < argc) cpus = argv[++i];
  }
  pin(me, cpus);
  if (!strcmp(cmd, "pingpong") && n >= 2) pingpong(me, prepost, maxb);
  else if (!strcmp(cmd, "stream") && n >= 2) stream(me, minb, maxb);
  else if (!strcmp(cmd, "coll")) coll(me, n, maxb);
  MPI_Finalize();
  return 0;
}
