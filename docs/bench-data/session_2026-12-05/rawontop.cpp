// Probe (not built by the project): g++ -O2 rawontop.cpp -lboost_context; ./a.out ONTOP(0,1) SAME(0,1): bare loops, no call around the switch
#include <boost/context/detail/fcontext.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cfenv>
namespace b = boost::context::detail;
b::transfer_t ontop_fn(b::transfer_t t) { return t; }
static int use_ontop = 0;
void bounce(b::transfer_t t) { for (;;) t = use_ontop ? b::ontop_fcontext(t.fctx, nullptr, ontop_fn) : b::jump_fcontext(t.fctx, nullptr); }
__attribute__((noinline)) b::fcontext_t hop(b::fcontext_t c, long k) { for (long i = 0; i < k; ++i) c = (use_ontop ? b::ontop_fcontext(c, nullptr, ontop_fn) : b::jump_fcontext(c, nullptr)).fctx; return c; }
void bounce_same(b::transfer_t t) { for (;;) t.fctx = hop(t.fctx, 1L << 62); }
int main(int argc, char** argv) { use_ontop = atoi(argv[1]); int same = atoi(argv[2]); long N = 10000000;
  std::vector<char> st(65536); auto c = b::make_fcontext(st.data() + st.size(), st.size(), same ? bounce_same : bounce);
  for (int r = 0; r < 4; ++r) { std::feclearexcept(FE_ALL_EXCEPT); auto t0 = std::chrono::steady_clock::now();
    if (same) c = hop(c, N); else for (long i = 0; i < N; ++i) c = (use_ontop ? b::ontop_fcontext(c, nullptr, ontop_fn) : b::jump_fcontext(c, nullptr)).fctx;
    std::printf("%.1f ", std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / (2.0 * N)); }
  std::printf("ns/jump (ontop=%d same=%d)\n", use_ontop, same); }
