// remote create+join latency, printed every 50k ops (rank 0), for `secs` seconds
#include <tsunagi/tsunagi.h>
#include <tsunagi/ult.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
using Clock = std::chrono::steady_clock;
static void empty_fn(const void*, size_t, void*, size_t*) {}
struct Ctx { int secs; };
static void body(void* a) {
  int secs = static_cast<Ctx*>(a)->secs;
  auto start = Clock::now();
  std::vector<double> v; v.reserve(50000);
  while (Clock::now() - start < std::chrono::seconds(secs)) {
    auto t0 = Clock::now();
    tsu_ult_t t;
    tsu_ult_spawn(&t, 1, 7, nullptr, 0, nullptr);
    tsu_ult_join_value(t, nullptr, 0, nullptr);
    v.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count());
    if (v.size() == 50000) {
      std::sort(v.begin(), v.end());
      std::printf("%.2f s: median %.0f ns p90 %.0f\n", std::chrono::duration<double>(Clock::now() - start).count(), v[v.size()/2], v[v.size()*9/10]);
      std::fflush(stdout);
      v.clear();
    }
  }
}
int main(int argc, char** argv) {
  tsu_init(nullptr);
  uint32_t me; tsu_rank(&me);
  tsu_ult_init(nullptr);
  tsu_ult_register(7, empty_fn);
  tsu_barrier();
  Ctx c{argc > 1 ? atoi(argv[1]) : 10};
  if (me == 0) {
    tsu_ult_t t;
    tsu_ult_create(&t, nullptr, [](void* a) -> void* { body(a); return nullptr; }, &c);
    tsu_ult_join(t, nullptr);
  }
  tsu_barrier();
  tsu_ult_finalize();
  tsu_finalize();
}
