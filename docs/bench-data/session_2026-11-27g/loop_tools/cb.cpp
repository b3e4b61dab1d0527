// usage: cb OP ITERS REPS   OP: bcast reduce gather barrier allreduce alltoall
#include <sched.h>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <vector>
#include "tsunagi/tsunagi.h"
static std::atomic<int> done{0};
static void cb(tsu_status_t, void* a) { static_cast<std::atomic<int>*>(a)->fetch_add(1, std::memory_order_release); }
int main(int argc, char** argv) {
  tsu_init(nullptr);
  uint32_t me, n; tsu_rank(&me); tsu_size(&n);
  if (getenv("PIN") && *getenv("PIN")) { cpu_set_t set; CPU_ZERO(&set); CPU_SET(me % 2, &set); sched_setaffinity(0, sizeof set, &set); }
  const char* op = argv[1]; int iters = atoi(argv[2]); int reps = atoi(argv[3]);
  size_t bytes = argc > 4 ? atoi(argv[4]) : 8;
  std::vector<double> a(bytes/8+1, 1.0), b(bytes/8+1); std::vector<unsigned char> g(bytes*n+8), x(bytes*n+8,1);
  int issued = 0; long waited = 0, polls = 0;
  std::vector<double> res;
  for (int rep = 0; rep < reps; ++rep) {
    tsu_barrier();
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) {
      tsu_cb_t c = tsu_cb(cb, &done);
      if (!strcmp(op, "bcast")) tsu_try_broadcast(TSU_TEAM_WORLD, a.data(), bytes, 0, c);
      else if (!strcmp(op, "reduce")) tsu_try_reduce(TSU_TEAM_WORLD, a.data(), b.data(), bytes/8, TSU_DT_DOUBLE, TSU_OP_SUM, 0, c);
      else if (!strcmp(op, "gather")) tsu_try_gather(TSU_TEAM_WORLD, a.data(), g.data(), bytes, 0, c);
      else if (!strcmp(op, "barrier")) tsu_try_barrier(TSU_TEAM_WORLD, c);
      else if (!strcmp(op, "allreduce")) tsu_try_allreduce(TSU_TEAM_WORLD, a.data(), b.data(), bytes/8, TSU_DT_DOUBLE, TSU_OP_SUM, c);
      else if (!strcmp(op, "alltoall")) tsu_try_alltoall(TSU_TEAM_WORLD, x.data(), g.data(), bytes, c);
      ++issued;
      if (done.load(std::memory_order_acquire) < issued) ++waited;
      while (done.load(std::memory_order_acquire) < issued) { tsu_progress(); ++polls; }
    }
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters;
    double w = 0;
    tsu_try_allreduce(TSU_TEAM_WORLD, &us, &w, 1, TSU_DT_DOUBLE, TSU_OP_MAX, tsu_cb(cb, &done));
    ++issued; while (done.load() < issued) tsu_progress();
    res.push_back(w); if (getenv("EACH")) printf("rank %u rep %d: %.3f us waited %ld polls %ld\n", me, rep, us, waited, polls); waited = polls = 0;
  }
  std::sort(res.begin(), res.end());
  if (me == 0) { printf("%s %u ranks %zu B: median %.3f us min %.3f max %.3f\n", op, n, bytes, res[reps/2], res[0], res[reps-1]); }
  tsu_finalize();
}
