#include <tsunagi/ult.h>
#include <time.h>
#include <cstdio>
#include <cstdlib>
static long N;
static double tcpu() { timespec ts; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); return ts.tv_sec*1e9+ts.tv_nsec; }
static void* e(void*) { return nullptr; }
static void* driver(void*) {
  double best = 1e9;
  for (int rep = 0; rep < 5; ++rep) {
    double t0 = tcpu();
    for (long i = 0; i < N; ++i) { tsu_ult_t t; tsu_ult_create(&t, nullptr, e, nullptr); tsu_ult_join(t, nullptr); }
    double cj = (tcpu() - t0) / N;
    if (cj < best) best = cj;
  }
  std::printf("create+join %.1f ns\n", best);
  return nullptr;
}
int main(int argc, char** argv) {
  N = argc > 1 ? atol(argv[1]) : 2000000;
  tsu_ult_config_t cfg{}; cfg.struct_size = sizeof cfg; cfg.field_mask = TSU_ULT_CONFIG_WORKERS; cfg.workers = 1;
  tsu_ult_init(&cfg);
  tsu_ult_t t; tsu_ult_create(&t, nullptr, driver, nullptr); tsu_ult_join(t, nullptr);
  tsu_ult_finalize();
}
