// The calling rank's own segments: the main segment (id 0), segments allocated
// later in shared memory, and registered user memory.  Allocation and free take
// a mutex (slow path); translation is an array index and a seqlock read of the
// slot (control_block.hpp).
//
// Ids are reused: an id is (generation << 14) | index, freed indices are
// reused in FIFO order once kSegQuarantine of them wait, and each reuse bumps
// the generation, so a stale id fails with TSU_ERR_BAD_SEGMENT.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
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

  // nic_atomics: the slot says kSegmentSharedNic (TSU_SEG_NIC_ATOMICS).
  tsu_status_t allocate(std::size_t size, tsu_seg_t& seg, void*& base, std::string& error,
                        bool nic_atomics = false);
  // A kSegmentSharedNic segment whose first NIC atomic the provider refused
  // becomes kSegmentShared (CPU atomics).  Only before its id left the
  // allocating call: a reader comparing the word twice would otherwise see
  // it change under a live id.
  void make_cpu_atomics(tsu_seg_t seg) noexcept;
  tsu_status_t register_memory(void* base, std::size_t size, tsu_seg_t& seg, std::string& error);
  // keep_memory: the mapping stays until the table is destroyed (a NIC
  // segment: the adapter may still be handed its stale key by a peer).
  tsu_status_t free(tsu_seg_t seg, std::string& error, bool keep_memory = false);

  // Bounds-checked translation of [offset, offset+len) of one of our segments.
  // Writes `out` only on success.  Safe against a concurrent free/reuse: a
  // stale id fails with TSU_ERR_BAD_SEGMENT.
  tsu_status_t translate(tsu_seg_t seg, uint64_t offset, std::size_t len, std::byte*& out,
                         uint32_t* state = nullptr) const noexcept {
    // The main segment, inline: every put and get names one local side.
    if (seg == TSU_SEG_MAIN) [[likely]] {
      if (offset > main_size_ || len > main_size_ - offset) return TSU_ERR_OUT_OF_BOUNDS;
      out = main_base_ + offset;
      if (state) *state = kSegmentShared;
      return TSU_OK;
    }
    return translate_other(seg, offset, len, out, state);
  }
  // The main segment (fixed from init to the destructor).
  std::byte* main_base() const noexcept { return main_base_; }
  uint64_t main_size() const noexcept { return main_size_; }

  // Finds the segment containing [ptr, ptr+1).
  bool find(const void* ptr, tsu_seg_t& seg, uint64_t& offset) const noexcept;

  bool info(tsu_seg_t seg, void*& base, std::size_t& size) const noexcept;

  // Segments live now, the main one included.
  uint32_t live() const noexcept;

  int control_block_fd() const noexcept { return cb_region_.fd; }
  const ControlBlock* control_block() const noexcept { return cb_; }
  ControlBlock* control_block() noexcept { return cb_; }

 private:
  struct Local {
    SharedRegion region;                // owned memfd region (shared segments), guarded by mu_
    std::atomic<std::byte*> base{nullptr};  // local base; rewritten on reuse (seqlock, see cb)
  };
  struct Range {
    uint64_t size;
    tsu_seg_t seg;
  };

  tsu_status_t translate_other(tsu_seg_t seg, uint64_t offset, std::size_t len, std::byte*& out,
                               uint32_t* state) const noexcept;
  // Picks an index and the id it gets next; TSU_ERR_LIMIT when none is free.
  tsu_status_t claim_index(uint32_t& index, tsu_seg_t& id, std::string& error);
  void unclaim_index(uint32_t index) noexcept;
  // Writes a claimed slot and publishes it.
  void publish(uint32_t index, tsu_seg_t id, uint32_t state, int fd, uint64_t size,
               std::byte* base) noexcept;

  std::deque<SharedRegion> kept_;    // freed with keep_memory; destroyed last (under mu_)
  SharedRegion cb_region_;
  ControlBlock* cb_ = nullptr;
  std::unique_ptr<Local[]> locals_;  // kMaxSegments entries
  // The main segment (id 0) lives from init to the destructor and is never
  // freed: translate answers it without the slot's seqlock read.
  std::byte* main_base_ = nullptr;
  uint64_t main_size_ = 0;
  mutable std::mutex mu_;            // serializes allocate/register/free; guards below
  uint32_t next_fresh_ = 0;          // indices [next_fresh_, kMaxSegments) never used
  std::deque<uint32_t> free_;        // retired indices, oldest first
  uint32_t live_ = 0;
  bool fresh_claim_ = false;         // the last claim took a fresh index (for unclaim)
  // Live ranges by base address (for find), and the largest size ever seen,
  // which bounds how far below a pointer a containing range can start.
  std::multimap<uintptr_t, Range> ranges_;
  uint64_t max_range_ = 0;
};

}  // namespace tsu::core
