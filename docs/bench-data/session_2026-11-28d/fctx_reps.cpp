// One-off probe: every repetition of a raw Boost.Context jump pair loop (the
// other stack a 64 KiB heap vector, as tsu-bench ult's limit row), not only
// the best: is the loop itself bimodal per repetition on the Xeon?
// Argument 2 (mode): 0 plain; 1 a vzeroupper before each repetition; 2 a
// vzeroupper before every jump of the main side (AVX's upper register
// halves marked clean: does a dirty upper state make the jump slow?); 3 a
// 20 ms sleep before the first repetition (is it time, or jumps?).
// Argument 3: pairs per repetition (200000, as tsu-bench).
#include <boost/context/detail/fcontext.hpp>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
namespace bctx = boost::context::detail;
static void bounce(bctx::transfer_t t) { for (;;) t = bctx::jump_fcontext(t.fctx, nullptr); }
int main(int argc, char** argv) {
  const long n = argc > 3 ? std::atol(argv[3]) : 200000;  // tsu-bench ult --iters 200000
  const int reps = argc > 1 ? std::atoi(argv[1]) : 15;
  const int mode = argc > 2 ? std::atoi(argv[2]) : 0;
  std::vector<char> stack(64 * 1024);
  bctx::fcontext_t ctx = bctx::make_fcontext(stack.data() + stack.size(), stack.size(), bounce);
  for (long i = 0; i < n / 10 + 1; ++i) ctx = bctx::jump_fcontext(ctx, nullptr).fctx;
  if (mode == 3) usleep(20000);
  std::printf("mode %d, ns per jump, %d reps of %ld pairs:", mode, reps, n);
  for (int r = 0; r < reps; ++r) {
    if (mode == 1) asm volatile("vzeroupper");
    auto t0 = std::chrono::steady_clock::now();
    if (mode == 2) {
      for (long i = 0; i < n; ++i) {
        asm volatile("vzeroupper");
        ctx = bctx::jump_fcontext(ctx, nullptr).fctx;
      }
    } else {
      for (long i = 0; i < n; ++i) ctx = bctx::jump_fcontext(ctx, nullptr).fctx;
    }
    std::printf(" %.1f", std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / n / 2);
  }
  std::printf("\n");
}
