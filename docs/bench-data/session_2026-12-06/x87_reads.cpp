#include <chrono>
#include <cstdio>
#include <cstdint>
#include <xmmintrin.h>
template <class F> double run(F f, int n) {
  auto t0 = std::chrono::steady_clock::now();
  unsigned acc = 0;
  for (int i = 0; i < n; ++i) acc += f();
  auto t1 = std::chrono::steady_clock::now();
  asm volatile("" :: "r"(acc));
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / n;
}
int main() {
  const int N = 10000000;
  for (int rep = 0; rep < 3; ++rep) {
    double e = run([] { asm volatile(""); return 1u; }, N);
    double a = run([] { uint16_t s; asm volatile("fnstsw %0" : "=a"(s)); return (unsigned)s; }, N);
    double b = run([] { return _mm_getcsr(); }, N);
    double c = run([] { uint16_t s; asm volatile("fnstcw %0" : "=m"(s)); return (unsigned)s; }, N);
    double d = run([] { uint16_t s; asm volatile("fnstsw %0" : "=m"(s)); return (unsigned)s; }, N);
    std::printf("empty %.2f fnstsw-ax %.2f stmxcsr %.2f fnstcw %.2f fnstsw-mem %.2f ns\n", e, a, b, c, d);
  }
}
