#include <tsunagi/tsunagi.h>
#include <tsunagi/ult.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <time.h>
#include <sys/resource.h>
static double cpu_s(){ rusage u; getrusage(RUSAGE_SELF,&u); return u.ru_utime.tv_sec+u.ru_utime.tv_usec*1e-6+u.ru_stime.tv_sec+u.ru_stime.tv_usec*1e-6; }
using Clock = std::chrono::steady_clock;
static void empty(const void*, size_t, void*, size_t*) {}
struct Ctx { long k; int reps; int mode; };
static void* body(void* a) {
  auto* c = static_cast<Ctx*>(a);
  if (c->mode == 0) {
    std::vector<tsu_ult_t> ts(c->k);
    for (int r = 0; r < c->reps; ++r) {
      auto t0 = Clock::now();
      for (auto& t : ts) tsu_ult_spawn(&t, 1, 1, nullptr, 0, nullptr);
      for (auto t : ts) tsu_ult_join_value(t, nullptr, 0, nullptr);
      double ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
      std::printf("rate %.3f M/s\n", c->k / ns * 1e3);
    }
  } else {
    std::vector<double> v;
    for (long i = 0; i < c->k; ++i) {
      auto t0 = Clock::now();
      tsu_ult_t t;
      tsu_ult_spawn(&t, 1, 1, nullptr, 0, nullptr);
      tsu_ult_join_value(t, nullptr, 0, nullptr);
      v.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count());
    }
    std::sort(v.begin(), v.end());
    double s = 0; for (double x : v) s += x;
    std::printf("lat median %.0f mean %.0f p99 %.0f ns\n", v[v.size()/2], s / v.size(), v[v.size()*99/100]);
  }
  return nullptr;
}
int main(int argc, char** argv) {
  tsu_init(nullptr);
  uint32_t me; tsu_rank(&me);
  tsu_ult_config_t cfg{}; cfg.struct_size = sizeof cfg; cfg.field_mask = TSU_ULT_CONFIG_WORKERS; cfg.workers = 1;
  tsu_ult_init(&cfg);
  tsu_ult_register(1, empty);
  tsu_barrier();
  double c0 = cpu_s();
  Ctx c{argc > 2 ? atol(argv[2]) : 200000, argc > 3 ? atoi(argv[3]) : 5, argc > 1 ? atoi(argv[1]) : 0};
  if (me == 0) { tsu_ult_t t; tsu_ult_create(&t, nullptr, body, &c); tsu_ult_join(t, nullptr); }
  if (me != 0 && getenv("RANK1_SLEEP")) { timespec ts{atoi(getenv("RANK1_SLEEP")), 0}; nanosleep(&ts, nullptr); }
  double c1 = cpu_s();
  std::printf("rank %u cpu %.0f ns per op (all threads, incl. idle spinning)\n", me, (c1 - c0) * 1e9 / (c.mode == 0 ? c.k * c.reps : c.k));
  tsu_barrier();
  tsu_ult_finalize();
  tsu_finalize();
}
