// Byte buffers that collectives reuse from one operation to the next.  A
// fresh large std::vector per operation meant an mmap, a page fault per 4 KiB
// and a zero fill every time (measured: most of a 256 KiB allreduce's time
// went to page faults); pooled buffers keep their pages and are not cleared.
// Not thread-safe: CollLayer's mutex guards the pool.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

namespace tsu::coll {

class ScratchBuffer {
 public:
  std::byte* data() noexcept { return data_.get(); }
  const std::byte* data() const noexcept { return data_.get(); }
  std::size_t size() const noexcept { return size_; }
  // New bytes are uninitialized; existing ones are kept.
  void resize(std::size_t n) {
    if (n > cap_) {
      const std::size_t cap = std::max(n, cap_ * 2);
      std::unique_ptr<std::byte[]> bigger(new std::byte[cap]);  // default-init: no zero fill
      if (size_) std::memcpy(bigger.get(), data_.get(), size_);
      data_ = std::move(bigger);
      cap_ = cap;
    }
    size_ = n;
  }
  std::size_t capacity() const noexcept { return cap_; }

 private:
  std::unique_ptr<std::byte[]> data_;
  std::size_t size_ = 0, cap_ = 0;
};

class ScratchPool {
 public:
  ScratchBuffer take() {
    if (free_.empty()) return {};
    ScratchBuffer b = std::move(free_.back());
    free_.pop_back();
    b.resize(0);
    return b;
  }
  void give(ScratchBuffer&& b) {
    // Bounded: a burst of overlapped collectives does not pin its memory.
    if (b.capacity() && free_.size() < kMaxKept) free_.push_back(std::move(b));
  }

 private:
  static constexpr std::size_t kMaxKept = 16;
  std::vector<ScratchBuffer> free_;
};

}  // namespace tsu::coll
