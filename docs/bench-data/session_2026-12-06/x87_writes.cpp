#include <chrono>
#include <cstdio>
#include <cstdint>
#include <xmmintrin.h>
template <class F> double run(F f, int n) {
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) f();
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / n;
}
int main() {
  const int N = 10000000;
  static unsigned m = _mm_getcsr();
  static uint16_t cw; asm volatile("fnstcw %0" : "=m"(cw));
  for (int rep = 0; rep < 3; ++rep) {
    double a = run([] { _mm_setcsr(m); }, N);
    double b = run([] { asm volatile("fldcw %0" :: "m"(cw)); }, N);
    double c = run([] { unsigned x = _mm_getcsr(); if (x != m) _mm_setcsr(m); asm volatile("" ::: "memory"); }, N);
    double d = run([] { uint16_t s; asm volatile("fnstsw %0" : "=a"(s)); asm volatile("" :: "r"(s)); unsigned x = _mm_getcsr(); asm volatile("" :: "r"(x)); }, N);
    std::printf("ldmxcsr %.2f fldcw %.2f stmxcsr+cmp %.2f fnstsw+stmxcsr %.2f ns\n", a, b, c, d);
  }
}
