// Stacks for ULTs: mapped in slabs, pooled, touched on demand.
//
// A stack is [guard page (optional, PROT_NONE) | usable bytes] (pooled
// stacks: twice the default size, see map_slab); the usable
// part is mapped read-write but the kernel backs a page only when it is first
// touched, so a suspended thread costs the few pages it used.  A thread gets
// its stack when it first runs (not at create), so threads not yet started
// cost no stack at all.  Freed stacks of the default size go to the freeing
// worker's cache (no lock), which spills half to the shared pool (mutex) when
// full; other sizes are unmapped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace tsu::ult {

struct Stack {
  std::byte* base = nullptr;  // lowest usable address
  std::size_t size = 0;       // usable bytes
  bool guarded = false;       // a PROT_NONE page lies right under base
  bool pooled = false;        // of the default size: goes back to a pool
  std::byte* top() const noexcept { return base + size; }
};

class StackPool {
 public:
  StackPool(std::size_t default_size, bool guard) noexcept;
  ~StackPool();
  std::size_t default_size() const noexcept { return size_; }
  bool guard() const noexcept { return guard_; }
  // A stack of at least `size` bytes; base == nullptr when mapping failed.
  Stack take(std::size_t size) noexcept;
  void give(const Stack& s) noexcept;
  // Moves a batch between a worker cache and the shared pool.
  void take_batch(std::vector<Stack>& into, std::size_t n) noexcept;
  void give_batch(std::vector<Stack>& from, std::size_t n) noexcept;
  uint64_t mapped() const noexcept;

 private:
  bool map_slab() noexcept;  // under mu_
  Stack map_one(std::size_t size) noexcept;
  const std::size_t size_;
  const bool guard_;
  const std::size_t page_;
  mutable std::mutex mu_;
  std::vector<Stack> free_;                                 // guarded by mu_
  std::vector<std::pair<std::byte*, std::size_t>> slabs_;  // guarded by mu_
  uint64_t mapped_ = 0;                                     // guarded by mu_
};

// A worker's private cache in front of the pool (owner thread only).
class StackCache {
 public:
  static constexpr std::size_t kMax = 64;
  explicit StackCache(StackPool& pool) : pool_(pool) { cache_.reserve(kMax); }
  ~StackCache() { pool_.give_batch(cache_, cache_.size()); }
  Stack take(std::size_t size) noexcept {
    if (size > pool_.default_size()) return pool_.take(size);
    if (cache_.empty()) pool_.take_batch(cache_, kMax / 2);
    if (cache_.empty()) return Stack{};
    Stack s = cache_.back();
    cache_.pop_back();
    return s;
  }
  void give(const Stack& s) noexcept {
    if (!s.pooled) return pool_.give(s);
    if (cache_.size() == kMax) pool_.give_batch(cache_, kMax / 2);
    cache_.push_back(s);
  }

 private:
  StackPool& pool_;
  std::vector<Stack> cache_;
};

// Installs (once per process) the SIGSEGV/SIGBUS handler that reports an
// overflow into a guard page with the thread's name, and gives the calling
// pthread an alternate signal stack to run it on.
void install_overflow_reporter() noexcept;
void give_thread_altstack() noexcept;
void drop_thread_altstack() noexcept;

}  // namespace tsu::ult
