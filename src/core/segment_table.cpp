#include "core/segment_table.hpp"

#include <unistd.h>

#include <cstring>
#include <new>

namespace tsu::core {

SegmentTable::~SegmentTable() {
  for (auto& r : regions_) shared_region_destroy(r);
  shared_region_destroy(cb_region_);
}

tsu_status_t SegmentTable::init(uint32_t rank, std::size_t main_size, std::string& error) {
  tsu_status_t st = shared_region_create("tsu-control", sizeof(ControlBlock), cb_region_, error);
  if (st != TSU_OK) return st;
  cb_ = new (cb_region_.base) ControlBlock{};
  cb_->magic = kControlBlockMagic;
  cb_->rank = rank;
  cb_->pid = static_cast<int32_t>(getpid());
  tsu_seg_t seg;
  void* base;
  st = allocate(main_size, seg, base, error);
  if (st == TSU_OK && seg != TSU_SEG_MAIN) {
    error = "main segment did not get id 0";
    return TSU_ERR_SYSTEM;
  }
  return st;
}

tsu_status_t SegmentTable::claim_slot(tsu_seg_t& seg, std::string& error) {
  if (next_seg_ >= kMaxSegments) {
    error = "all " + std::to_string(kMaxSegments) + " segment ids of this rank are used";
    return TSU_ERR_LIMIT;
  }
  seg = next_seg_++;
  return TSU_OK;
}

tsu_status_t SegmentTable::allocate(std::size_t size, tsu_seg_t& seg, void*& base,
                                    std::string& error) {
  std::lock_guard lock(mu_);
  tsu_seg_t id;
  tsu_status_t st = claim_slot(id, error);
  if (st != TSU_OK) return st;
  SharedRegion region;
  st = shared_region_create("tsu-segment", size, region, error);
  if (st != TSU_OK) {
    --next_seg_;
    return st;
  }
  regions_[id] = region;
  SegmentSlot& slot = cb_->slots[id];
  slot.fd = region.fd;
  slot.size = size;
  slot.owner_addr = reinterpret_cast<uint64_t>(region.base);
  bases_[id].store(static_cast<std::byte*>(region.base), std::memory_order_relaxed);
  slot.state.store(kSegmentShared, std::memory_order_release);
  seg = id;
  base = region.base;
  return TSU_OK;
}

tsu_status_t SegmentTable::register_memory(void* base, std::size_t size, tsu_seg_t& seg,
                                           std::string& error) {
  std::lock_guard lock(mu_);
  tsu_seg_t id;
  tsu_status_t st = claim_slot(id, error);
  if (st != TSU_OK) return st;
  SegmentSlot& slot = cb_->slots[id];
  slot.fd = -1;
  slot.size = size;
  slot.owner_addr = reinterpret_cast<uint64_t>(base);
  bases_[id].store(static_cast<std::byte*>(base), std::memory_order_relaxed);
  slot.state.store(kSegmentRegistered, std::memory_order_release);
  seg = id;
  return TSU_OK;
}

tsu_status_t SegmentTable::free(tsu_seg_t seg, std::string& error) {
  std::lock_guard lock(mu_);
  if (seg == TSU_SEG_MAIN) {
    error = "the main segment (0) is freed by tsu_finalize, not tsu_segment_free";
    return TSU_ERR_INVALID_ARG;
  }
  if (seg >= kMaxSegments) {
    error = "segment " + std::to_string(seg) + " does not exist";
    return TSU_ERR_BAD_SEGMENT;
  }
  SegmentSlot& slot = cb_->slots[seg];
  const uint32_t state = slot.state.load(std::memory_order_acquire);
  if (state != kSegmentShared && state != kSegmentRegistered) {
    error = "segment " + std::to_string(seg) + (state == kSegmentRetired ? " was already freed"
                                                                        : " does not exist");
    return TSU_ERR_BAD_SEGMENT;
  }
  // Retire first so new requests fail; peers may still hold a mapping of a
  // shared segment, which keeps its pages alive, so nothing they do can touch
  // other memory.
  // bases_[seg] keeps its stale value: a racing translate() must not read null.
  slot.state.store(kSegmentRetired, std::memory_order_release);
  shared_region_destroy(regions_[seg]);
  return TSU_OK;
}

tsu_status_t SegmentTable::translate(tsu_seg_t seg, uint64_t offset, std::size_t len,
                                     std::byte*& out, uint32_t* state_out) const noexcept {
  if (seg >= kMaxSegments) return TSU_ERR_BAD_SEGMENT;
  const SegmentSlot& slot = cb_->slots[seg];
  const uint32_t state = slot.state.load(std::memory_order_acquire);
  if (state != kSegmentShared && state != kSegmentRegistered) return TSU_ERR_BAD_SEGMENT;
  if (offset > slot.size || len > slot.size - offset) return TSU_ERR_OUT_OF_BOUNDS;
  out = bases_[seg].load(std::memory_order_relaxed) + offset;
  if (state_out) *state_out = state;
  return TSU_OK;
}

bool SegmentTable::find(const void* ptr, tsu_seg_t& seg, uint64_t& offset) const noexcept {
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  for (uint32_t i = 0; i < kMaxSegments; ++i) {
    const SegmentSlot& slot = cb_->slots[i];
    const uint32_t state = slot.state.load(std::memory_order_acquire);
    if (state == kSegmentUnused) break;  // ids are handed out in order
    if (state == kSegmentRetired) continue;
    const auto base = reinterpret_cast<uintptr_t>(bases_[i].load(std::memory_order_relaxed));
    if (p >= base && p - base < slot.size) {
      seg = i;
      offset = p - base;
      return true;
    }
  }
  return false;
}

bool SegmentTable::info(tsu_seg_t seg, void*& base, std::size_t& size) const noexcept {
  if (seg >= kMaxSegments) return false;
  const SegmentSlot& slot = cb_->slots[seg];
  const uint32_t state = slot.state.load(std::memory_order_acquire);
  if (state != kSegmentShared && state != kSegmentRegistered) return false;
  base = bases_[seg].load(std::memory_order_relaxed);
  size = slot.size;
  return true;
}

}  // namespace tsu::core
