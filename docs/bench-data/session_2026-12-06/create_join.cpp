// create + join from a ULT (the inline path): min and median over reps of ns/op.
#include <tsunagi/ult.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>
static void* empty(void*) { return nullptr; }
static void* bench(void*) {
  std::vector<double> v;
  for (int rep = 0; rep < 15; ++rep) {
    const int n = 200000;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) { tsu_ult_t t; tsu_ult_create(&t, nullptr, empty, nullptr); tsu_ult_join(t, nullptr); }
    v.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / n);
  }
  std::sort(v.begin(), v.end());
  std::printf("create+join min %.1f median %.1f ns\n", v[0], v[v.size() / 2]);
  return nullptr;
}
int main() {
  tsu_ult_config_t c{}; c.struct_size = sizeof c; c.field_mask = TSU_ULT_CONFIG_WORKERS; c.workers = 1;
  tsu_ult_init(&c);
  tsu_ult_t t; tsu_ult_create(&t, nullptr, bench, nullptr); tsu_ult_join(t, nullptr);
  tsu_ult_finalize();
}
