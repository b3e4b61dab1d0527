// tsunagi.hpp compiled alone as C++20 and used: futures, lambdas, typed atomics.
#include <tsunagi/tsunagi.hpp>

#include <cstdio>
#include <cstring>

#define EXPECT(cond)                                                                        \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      std::fprintf(stderr, "%s:%d: %s failed (%s)\n", __FILE__, __LINE__, #cond,            \
                   tsu_last_error());                                                       \
      return 1;                                                                             \
    }                                                                                       \
  } while (0)

int main() {
  try {
    tsu::runtime rt;
    const uint32_t me = tsu::runtime::rank(), n = tsu::runtime::size();
    const uint32_t right = (me + 1) % n;
    void* base;
    size_t size;
    EXPECT(tsu_segment_info(TSU_SEG_MAIN, &base, &size) == TSU_OK);
    auto* mem = static_cast<unsigned char*>(base);
    for (int i = 0; i < 64; ++i) mem[i] = static_cast<unsigned char>(me * 64 + i);
    tsu::runtime::barrier();

    // Put my bytes into my right neighbour's segment at 4096 + 64*me.
    int calls = 0;
    EXPECT(tsu::try_put(tsu_gaddr(right, TSU_SEG_MAIN, 4096 + 64 * me), tsu_laddr(TSU_SEG_MAIN, 0),
                        64, [&](tsu_status_t st) { calls += st == TSU_OK; }) == TSU_OK);
    EXPECT(tsu::quiet() == TSU_OK && calls == 1);
    // Every rank adds to rank 0's counter; the returned old values are distinct.
    const uint64_t old = tsu::fetch_add<uint64_t>(tsu_gaddr(0, TSU_SEG_MAIN, 8192), 1).get();
    EXPECT(old < n);
    tsu::atomic<double>(tsu_gaddr(0, TSU_SEG_MAIN, 8200), TSU_AOP_ADD, 0.25).get();
    {
      // A segment of this rank, freed at scope end; CPU atomics by default.
      tsu::segment seg(4096);
      EXPECT(seg.base() != nullptr && seg.atomic_site() == TSU_ATOMIC_SITE_CPU);
    }
    tsu::runtime::barrier();

    const uint32_t left = (me + n - 1) % n;
    for (int i = 0; i < 64; ++i) EXPECT(mem[4096 + 64 * left + i] == (left * 64 + i) % 256);
    EXPECT(tsu::load<uint64_t>(tsu_gaddr(0, TSU_SEG_MAIN, 8192)).get() == n);
    EXPECT(tsu::load<double>(tsu_gaddr(0, TSU_SEG_MAIN, 8200)).get() == 0.25 * n);
    // get into my own memory through a future
    tsu::get(tsu_laddr(TSU_SEG_MAIN, 12288), tsu_gaddr(left, TSU_SEG_MAIN, 0), 64).get();
    for (int i = 0; i < 64; ++i) EXPECT(mem[12288 + i] == (left * 64 + i) % 256);
    // A failed request surfaces as tsu::error from get().
    bool threw = false;
    try {
      tsu::load<uint64_t>(tsu_gaddr(0, TSU_SEG_MAIN, 3)).get();
    } catch (const tsu::error& e) {
      threw = e.code() == TSU_ERR_MISALIGNED;
    }
    EXPECT(threw);
    tsu::runtime::barrier();
    if (me == 0) std::printf("header_cxx: OK on %u ranks\n", n);
  } catch (const tsu::error& e) {
    std::fprintf(stderr, "header_cxx: %s\n", e.what());
    return 1;
  }
  return 0;
}
