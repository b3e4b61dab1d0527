// Probe (not built by the project): g++ -O2 mxcsr.cpp -lboost_context && ./a.out
// A bare fcontext jump loop whose two contexts' saved MXCSR agree, or differ
// only in the sticky inexact flag (bit 5); and a plain ldmxcsr loop toggling
// the same two values, without a switch.
#include <boost/context/detail/fcontext.hpp>
#include <xmmintrin.h>
#include <chrono>
#include <cstdio>
#include <vector>
namespace b = boost::context::detail;
void bounce(b::transfer_t t) { for (;;) t = b::jump_fcontext(t.fctx, nullptr); }
template <typename F> double ns_per(long n, F f) {
  auto t0 = std::chrono::steady_clock::now(); f();
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / n; }
int main() {
  const long N = 5000000;
  for (int differ = 0; differ < 2; ++differ) {
    std::vector<char> st(65536);
    _mm_setcsr(0x1f80);                      // defaults, no flag
    auto c = b::make_fcontext(st.data() + st.size(), st.size(), bounce);  // saves 0x1f80 for it
    _mm_setcsr(differ ? 0x1fa0 : 0x1f80);    // this context: inexact raised, or not
    const double ns = ns_per(2 * N, [&] { for (long i = 0; i < N; ++i) c = b::jump_fcontext(c, nullptr).fctx; });
    const unsigned m = _mm_getcsr();
    std::printf("jump, saved MXCSR %s: %.1f ns per jump (MXCSR here after: %#x)\n",
                differ ? "0x1f80 there, 0x1fa0 here" : "0x1f80 in both", ns, m);
  }
  const double t = ns_per(2 * N, [] { for (long i = 0; i < N; ++i) { _mm_setcsr(0x1fa0); _mm_setcsr(0x1f80); } });
  std::printf("ldmxcsr loop toggling 0x1fa0/0x1f80, no switch: %.1f ns per ldmxcsr\n", t);
}
