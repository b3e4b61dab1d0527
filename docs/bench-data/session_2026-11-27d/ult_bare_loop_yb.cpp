#include <tsunagi/ult.h>
#include <time.h>
#include <cstdio>
#include <cstdlib>
static long N;
static double tcpu() { timespec ts; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); return ts.tv_sec*1e9+ts.tv_nsec; }
static void* y(void*) { for (long i = 0; i < N; ++i) tsu_ult_yield(); return nullptr; }
static void* e(void*) { return nullptr; }
static double res[2];
static void* driver(void*) {
  for (int rep = 0; rep < 5; ++rep) {
    double t0 = tcpu();
    tsu_ult_t a, b;
    tsu_ult_create(&a, nullptr, y, nullptr);
    tsu_ult_create(&b, nullptr, y, nullptr);
    tsu_ult_join(a, nullptr); tsu_ult_join(b, nullptr);
    double sw = (tcpu() - t0) / (2.0 * N);
    t0 = tcpu();
    for (long i = 0; i < N; ++i) { tsu_ult_t t; tsu_ult_create(&t, nullptr, e, nullptr); tsu_ult_join(t, nullptr); }
    double cj = (tcpu() - t0) / N;
    if (rep == 0 || sw < res[0]) res[0] = sw;
    if (rep == 0 || cj < res[1]) res[1] = cj;
  }
  return nullptr;
}
int main(int argc, char** argv) {
  N = argc > 1 ? atol(argv[1]) : 2000000;
  tsu_ult_config_t cfg{}; cfg.struct_size = sizeof cfg; cfg.field_mask = TSU_ULT_CONFIG_WORKERS; cfg.workers = 1;
  tsu_ult_init(&cfg);
  tsu_ult_t t; tsu_ult_create(&t, nullptr, driver, nullptr); tsu_ult_join(t, nullptr);
  std::printf("switch %.1f ns  create+join %.1f ns (thread CPU, best of 5)\n", res[0], res[1]);
  tsu_ult_finalize();
}
