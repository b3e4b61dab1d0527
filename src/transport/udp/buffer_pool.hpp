// Fixed-size datagram buffers, recycled through a free list.  Owned by the
// transport and used under its lock; grows in blocks, never shrinks, so the
// steady state does no allocation.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace tsu::transport::udp {

class BufferPool {
 public:
  explicit BufferPool(std::size_t buf_size) : size_(buf_size) {}
  std::size_t buffer_size() const noexcept { return size_; }
  std::byte* get() {
    if (free_.empty()) grow();
    std::byte* b = free_.back();
    free_.pop_back();
    return b;
  }
  void put(std::byte* b) noexcept {
    if (b) free_.push_back(b);  // capacity reserved in grow(): no allocation
  }
  std::size_t allocated() const noexcept { return blocks_.size() * kPerBlock; }

 private:
  static constexpr std::size_t kPerBlock = 256;
  void grow() {
    blocks_.push_back(std::make_unique<std::byte[]>(size_ * kPerBlock));
    free_.reserve(blocks_.size() * kPerBlock);
    for (std::size_t i = 0; i < kPerBlock; ++i) free_.push_back(blocks_.back().get() + i * size_);
  }
  std::size_t size_;
  std::vector<std::unique_ptr<std::byte[]>> blocks_;
  std::vector<std::byte*> free_;
};

}  // namespace tsu::transport::udp
