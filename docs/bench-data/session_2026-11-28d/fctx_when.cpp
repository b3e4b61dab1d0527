// One-off probe: the raw jump loop of fctx_reps.cpp, the results kept and
// printed at the end; before repetition 3 one action runs (argument 1):
// none, snprintf of a double, memset of 1 MiB, strlen of 1 MiB, write(2)
// of one byte, sleep 1 ms.  Which one turns the loop slow on the Xeon?
#include <boost/context/detail/fcontext.hpp>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
namespace bctx = boost::context::detail;
static void bounce(bctx::transfer_t t) { for (;;) t = bctx::jump_fcontext(t.fctx, nullptr); }
int main(int argc, char** argv) {
  const std::string action = argc > 1 ? argv[1] : "none";
  const long n = 10000;
  const int reps = 8;
  std::vector<char> stack(64 * 1024), big(1 << 20, 'a');
  big.back() = 0;
  char text[64];
  double ns[reps];
  volatile std::size_t sink = 0;
  bctx::fcontext_t ctx = bctx::make_fcontext(stack.data() + stack.size(), stack.size(), bounce);
  for (long i = 0; i < 1000; ++i) ctx = bctx::jump_fcontext(ctx, nullptr).fctx;
  for (int r = 0; r < reps; ++r) {
    if (r == 3) {
      if (action == "snprintf") sink = sink + static_cast<std::size_t>(std::snprintf(text, sizeof text, "%.1f", 1.25 * r));
      else if (action == "memset") std::memset(big.data(), r, big.size() - 1);
      else if (action == "strlen") { big.back() = 0; std::memset(big.data(), 'b', big.size() - 1); sink = sink + std::strlen(big.data()); }
      else if (action == "write") sink = sink + static_cast<std::size_t>(write(2, " ", 1));
      else if (action == "sleep") usleep(1000);
    }
    auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < n; ++i) ctx = bctx::jump_fcontext(ctx, nullptr).fctx;
    ns[r] = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / n / 2;
  }
  std::printf("%-8s ns per jump by repetition (action before rep 3):", action.c_str());
  for (double v : ns) std::printf(" %.1f", v);
  std::printf("\n");
}
