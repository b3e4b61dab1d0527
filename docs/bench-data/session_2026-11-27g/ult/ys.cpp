#include <tsunagi/ult.h>
#include <time.h>
#include <cstdio>
#include <cstdlib>
static long N;
static double tcpu() { timespec ts; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); return ts.tv_sec*1e9+ts.tv_nsec; }
static void* y(void*) { for (long i = 0; i < N; ++i) tsu_ult_yield(); return nullptr; }
static void* driver(void*) {
  double best = 1e9;
  for (int rep = 0; rep < 5; ++rep) {
    double t0 = tcpu();
    tsu_ult_t a, b;
    tsu_ult_create(&a, nullptr, y, nullptr);
    tsu_ult_create(&b, nullptr, y, nullptr);
    tsu_ult_join(a, nullptr); tsu_ult_join(b, nullptr);
    double sw = (tcpu() - t0) / (2.0 * N);
    if (sw < best) best = sw;
  }
  std::printf("switch %.1f ns\n", best);
  return nullptr;
}
int main(int argc, char** argv) {
  N = argc > 1 ? atol(argv[1]) : 2000000;
  tsu_ult_config_t cfg{}; cfg.struct_size = sizeof cfg; cfg.field_mask = TSU_ULT_CONFIG_WORKERS; cfg.workers = 1;
  tsu_ult_init(&cfg);
  tsu_ult_t t; tsu_ult_create(&t, nullptr, driver, nullptr); tsu_ult_join(t, nullptr);
  tsu_ult_finalize();
}
