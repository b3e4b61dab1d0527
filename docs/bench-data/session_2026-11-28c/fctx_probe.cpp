// One-off probe: cost of a raw Boost.Context jump pair by where the other
// context's stack lies (heap vector as tsu-bench's limit row, mmap'd pages,
// and mmap'd with the stack top moved by OFF bytes within its page).
#include <boost/context/detail/fcontext.hpp>
#include <sys/mman.h>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
namespace bctx = boost::context::detail;
static void bounce(bctx::transfer_t t) { for (;;) t = bctx::jump_fcontext(t.fctx, nullptr); }
static double run(char* top, size_t size, long n) {
  bctx::fcontext_t ctx = bctx::make_fcontext(top, size, bounce);
  for (long i = 0; i < n / 10; ++i) ctx = bctx::jump_fcontext(ctx, nullptr).fctx;
  double best = 1e9;
  for (int r = 0; r < 5; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < n; ++i) ctx = bctx::jump_fcontext(ctx, nullptr).fctx;
    double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / n;
    best = std::min(best, ns);
  }
  return best;
}
int main() {
  const long n = 5000000;
  char here; std::printf("main rsp page offset %lu\n", (unsigned long)((uintptr_t)&here & 4095));
  std::vector<char> v(64 * 1024);
  std::printf("heap vector (tsu-bench): top off %4lu  %.2f ns/pair\n",
              (unsigned long)((uintptr_t)(v.data() + v.size()) & 4095), run(v.data() + v.size(), v.size(), n));
  const size_t sz = 64 * 1024 + 4096;
  char* m = static_cast<char*>(mmap(nullptr, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  for (size_t off : {0ul, 64ul, 256ul, 1024ul, 2048ul, 3072ul, 3584ul}) {
    char* top = m + 64 * 1024 + 4096 - off;
    std::printf("mmap, top off %4lu:               %.2f ns/pair\n", (unsigned long)((uintptr_t)top & 4095),
                run(top, 64 * 1024, n));
  }
}
