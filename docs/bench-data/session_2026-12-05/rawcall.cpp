// Probe (not built by the project): g++ -O2 rawcall.cpp -lboost_context; ./a.out KIND(0 jump,1 ontop) SAME(1,0)
// A yield-like library call around the raw jump: call sw(), which jumps; the
// resumed side returns out of its own sw() to its caller.
#include <boost/context/detail/fcontext.hpp>
#include <cfenv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
namespace b = boost::context::detail;
b::transfer_t ontop_fn(b::transfer_t t) { return t; }
static int kind;  // 0: sw jumps; 1: sw tail-calls ontop (ret from the on-top function)
__attribute__((noinline)) b::fcontext_t sw(b::fcontext_t c) {
  if (kind == 0) return b::jump_fcontext(c, nullptr).fctx;
  return b::ontop_fcontext(c, nullptr, ontop_fn).fctx;
}
__attribute__((noinline)) b::fcontext_t loop_a(b::fcontext_t c, long k) { for (long i = 0; i < k; ++i) c = sw(c); return c; }
__attribute__((noinline)) b::fcontext_t loop_b(b::fcontext_t c, long k) { for (long i = 0; i < k; ++i) { asm volatile("nop"); c = sw(c); } return c; }
static int same;
void other(b::transfer_t t) { for (;;) t.fctx = same ? loop_a(t.fctx, 1L << 62) : loop_b(t.fctx, 1L << 62); }
int main(int argc, char** argv) { kind = atoi(argv[1]); same = atoi(argv[2]); long N = 10000000;
  std::vector<char> st(65536); std::feclearexcept(FE_ALL_EXCEPT); auto c = b::make_fcontext(st.data() + st.size(), st.size(), other);
  for (int r = 0; r < 4; ++r) { std::feclearexcept(FE_ALL_EXCEPT); auto t0 = std::chrono::steady_clock::now(); c = loop_a(c, N);
    std::printf("%.1f ", std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / (2.0 * N)); }
  std::printf("ns/switch (%s, %s call site)\n", kind ? "ontop" : "jump", same ? "same" : "other"); }
