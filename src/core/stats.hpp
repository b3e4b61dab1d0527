// Per-thread operation counters.  Only the owning thread writes its block
// (relaxed load+store: no atomic read-modify-write on the hot path, and no
// cache line shared between threads); tsu_stats_print sums all blocks.
#pragma once

#include <atomic>
#include <cstdint>

namespace tsu::core {

enum class Counter : uint32_t {
  kPut, kGet, kCopy, kAtomic, kBytesPut, kBytesGet, kBytesCopy,
  kBypassed, kQueued, kEagain, kRejected, kFailedAtTarget, kCount
};

struct ThreadStats {
  std::atomic<uint64_t> v[static_cast<uint32_t>(Counter::kCount)] = {};
  void add(Counter c, uint64_t n = 1) noexcept {
    auto& x = v[static_cast<uint32_t>(c)];
    x.store(x.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  uint64_t get(Counter c) const noexcept {
    return v[static_cast<uint32_t>(c)].load(std::memory_order_relaxed);
  }
};

const char* counter_name(Counter c) noexcept;

}  // namespace tsu::core
