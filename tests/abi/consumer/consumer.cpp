// An outside program built against the installed tsunagi only: concurrent
// puts and atomics from several threads, every byte checked.
#include <tsunagi/tsunagi.h>

#include <cstdio>
#include <thread>
#include <vector>

int main() {
  if (tsu_init(nullptr) != TSU_OK) return 1;
  uint32_t me, n;
  tsu_rank(&me);
  tsu_size(&n);
  void* base;
  size_t size;
  tsu_segment_info(TSU_SEG_MAIN, &base, &size);
  auto* mem = static_cast<unsigned char*>(base);
  constexpr unsigned kThreads = 3, kBlock = 1000;
  // My source block: bytes 0..kBlock.
  for (unsigned i = 0; i < kBlock; ++i) mem[i] = static_cast<unsigned char>(me + i);
  tsu_barrier();
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < kThreads; ++t)
    threads.emplace_back([=] {
      for (uint32_t r = 0; r < n; ++r) {
        // Into rank r at block (me, t).
        const uint64_t off = 4096 + (uint64_t{me} * kThreads + t) * kBlock;
        while (tsu_try_put(tsu_gaddr(r, TSU_SEG_MAIN, off), tsu_laddr(TSU_SEG_MAIN, 0), kBlock,
                           tsu_cb_none()) == TSU_EAGAIN)
          tsu_progress();
        while (tsu_try_add_u64(tsu_gaddr(r, TSU_SEG_MAIN, 2048), 1, tsu_cb_none()) == TSU_EAGAIN)
          tsu_progress();
      }
      tsu_quiet();
    });
  for (auto& t : threads) t.join();
  tsu_barrier();
  int bad = 0;
  for (uint32_t src = 0; src < n; ++src)
    for (unsigned t = 0; t < kThreads; ++t)
      for (unsigned i = 0; i < kBlock; ++i)
        bad += mem[4096 + (src * kThreads + t) * kBlock + i] != static_cast<unsigned char>(src + i);
  bad += *reinterpret_cast<uint64_t*>(mem + 2048) != uint64_t{n} * kThreads;
  tsu_finalize();
  std::printf("consumer rank %u: %s\n", me, bad ? "BAD" : "ok");
  return bad ? 1 : 0;
}
