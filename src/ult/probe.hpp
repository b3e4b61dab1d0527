// TEMPORARY latency probe (not to be committed).
#pragma once
#include <time.h>
#include <unistd.h>
#include <atomic>
#include <cstdint>
#include <cstdio>
namespace tsu::ult::probe {
constexpr int kStages = 10, kN = 1 << 16;
inline uint64_t g_t[kStages][kN];
inline std::atomic<uint32_t> g_n[kStages];
inline void stamp(int s) {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint32_t i = g_n[s].fetch_add(1, std::memory_order_relaxed);
  if (i < kN) g_t[s][i] = uint64_t(ts.tv_sec) * 1000000000u + ts.tv_nsec;
}
struct Dumper {
  ~Dumper() {
    bool any = false;
    for (int s = 0; s < kStages; ++s) any |= g_n[s].load() != 0;
    if (!any) return;
    char name[64];
    std::snprintf(name, sizeof name, "/tmp/ult2probe_%d.txt", getpid());
    FILE* f = std::fopen(name, "w");
    for (int s = 0; s < kStages; ++s) {
      uint32_t n = g_n[s].load();
      if (n > kN) n = kN;
      std::fprintf(f, "S%d %u", s, n);
      for (uint32_t i = 0; i < n; ++i) std::fprintf(f, " %lu", (unsigned long)g_t[s][i]);
      std::fprintf(f, "\n");
    }
    std::fclose(f);
  }
};
inline Dumper g_dumper;
}  // namespace tsu::ult::probe
