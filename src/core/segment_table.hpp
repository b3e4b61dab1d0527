// The calling rank's own segments: the main segment (id 0), segments allocated
// later in shared memory, and registered user memory.  Allocation and free take
// a mutex (slow path); translation is an array index and two loads.
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <string>

#include "core/control_block.hpp"
#include "core/shared_memory.hpp"
#include "tsunagi/tsunagi.h"

namespace tsu::core {

class SegmentTable {
 public:
  SegmentTable() = default;
  ~SegmentTable();
  SegmentTable(const SegmentTable&) = delete;
  SegmentTable& operator=(const SegmentTable&) = delete;

  // Creates the control block and the main segment.
  tsu_status_t init(uint32_t rank, std::size_t main_size, std::string& error);

  tsu_status_t allocate(std::size_t size, tsu_seg_t& seg, void*& base, std::string& error);
  tsu_status_t register_memory(void* base, std::size_t size, tsu_seg_t& seg, std::string& error);
  tsu_status_t free(tsu_seg_t seg, std::string& error);

  // Bounds-checked translation of [offset, offset+len) of one of our segments.
  // Writes `out` only on success.
  tsu_status_t translate(tsu_seg_t seg, uint64_t offset, std::size_t len, std::byte*& out,
                         uint32_t* state = nullptr) const noexcept;

  // Finds the segment containing [ptr, ptr+1).
  bool find(const void* ptr, tsu_seg_t& seg, uint64_t& offset) const noexcept;

  bool info(tsu_seg_t seg, void*& base, std::size_t& size) const noexcept;

  int control_block_fd() const noexcept { return cb_region_.fd; }
  std::size_t control_block_size() const noexcept { return sizeof(ControlBlock); }
  const ControlBlock* control_block() const noexcept { return cb_; }
  ControlBlock* control_block() noexcept { return cb_; }
  int main_segment_fd() const noexcept { return regions_[0].fd; }
  std::size_t main_segment_size() const noexcept { return regions_[0].size; }

 private:
  tsu_status_t claim_slot(tsu_seg_t& seg, std::string& error);

  SharedRegion cb_region_;
  ControlBlock* cb_ = nullptr;
  mutable std::mutex mu_;  // serializes allocate/register/free
  uint32_t next_seg_ = 0;
  SharedRegion regions_[kMaxSegments];       // owned memfd regions (shared segments)
  std::atomic<std::byte*> bases_[kMaxSegments] = {};  // local base of every live segment
};

}  // namespace tsu::core
