#include <boost/context/detail/fcontext.hpp>
#include <time.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
namespace b = boost::context::detail;
static double tcpu() { timespec ts; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); return ts.tv_sec*1e9+ts.tv_nsec; }
static void bounce(b::transfer_t t) { for (;;) t = b::jump_fcontext(t.fctx, nullptr); }
int main(int argc, char** argv) {
  long N = argc > 1 ? atol(argv[1]) : 2000000;
  std::vector<char> st(65536);
  b::fcontext_t c = b::make_fcontext(st.data()+st.size(), st.size(), bounce);
  double best = 1e9;
  for (int r = 0; r < 5; ++r) { double t0 = tcpu(); for (long i = 0; i < N; ++i) c = b::jump_fcontext(c, nullptr).fctx; double x = (tcpu()-t0)/(2.0*N); if (x < best) best = x; }
  std::printf("raw switch %.1f ns\n", best);
}
