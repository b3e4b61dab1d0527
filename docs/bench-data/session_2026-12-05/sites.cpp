// Probe (not built by the project): g++ -O2 -std=c++20 -Iinclude sites.cpp -Lbuild/release/src/ult -Lbuild/release/src -ltsunagi-ult -ltsunagi; TSU_ULT_WORKERS=1 [ONESITE=1] ./a.out
#include <tsunagi/ult.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
static long N = 2000000;
struct A { int id; };
// One function; thread 0 yields from one call site, thread 1 from another.
__attribute__((noinline)) void* loop(void* p) {
  const int id = static_cast<A*>(p)->id;
  if (id == 0) { for (long i = 0; i < N; ++i) { tsu_ult_yield(); asm volatile(""); } }
  else { for (long i = 0; i < N; ++i) { asm volatile("nop"); tsu_ult_yield(); asm volatile("nop"); } }
  return nullptr;
}
__attribute__((noinline)) void* loop_same(void*) { for (long i = 0; i < N; ++i) tsu_ult_yield(); return nullptr; }
void* top(void* m) { A a0{0}, a1{getenv("ONESITE") ? 0 : 1}; tsu_ult_t a, b;
  tsu_ult_create(&a, nullptr, loop, &a0); tsu_ult_create(&b, nullptr, loop, &a1);
  tsu_ult_join(a, nullptr); tsu_ult_join(b, nullptr); return nullptr; }
int main() { tsu_ult_init(nullptr);
  for (int r = 0; r < 4; ++r) { auto t0 = std::chrono::steady_clock::now(); tsu_ult_t t; tsu_ult_create(&t, nullptr, top, nullptr); tsu_ult_join(t, nullptr);
    std::printf("%.1f ", std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / (2.0 * N)); }
  std::printf("ns/switch\n"); tsu_ult_finalize(); }
