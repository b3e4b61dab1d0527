#include "core/segment_table.hpp"

#include <unistd.h>

#include <cstring>
#include <new>

namespace tsu::core {

SegmentTable::~SegmentTable() {
  if (locals_)
    for (uint32_t i = 0; i < kMaxSegments; ++i) shared_region_destroy(locals_[i].region);
  for (SharedRegion& r : kept_) shared_region_destroy(r);
  shared_region_destroy(cb_region_);
}

tsu_status_t SegmentTable::init(uint32_t rank, std::size_t main_size, std::string& error) {
  locals_.reset(new (std::nothrow) Local[kMaxSegments]);
  if (!locals_) {
    error = "out of memory for the segment table";
    return TSU_ERR_NO_MEMORY;
  }
  tsu_status_t st = shared_region_create("tsu-control", sizeof(ControlBlock), cb_region_, error);
  if (st != TSU_OK) return st;
  // The memfd is zero-filled, which is the initial state of every field
  // (atomics included): no constructor runs, so the slot pages stay untouched
  // until used -- node peers treat the mapping the same way.
  cb_ = static_cast<ControlBlock*>(cb_region_.base);
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
  if (st == TSU_OK) {
    main_base_ = static_cast<std::byte*>(base);
    main_size_ = main_size;
  }
  return st;
}

tsu_status_t SegmentTable::claim_index(uint32_t& index, tsu_seg_t& id, std::string& error) {
  // Fresh indices first, then the oldest freed one -- but only while at least
  // kSegQuarantine freed ones wait (see kSegQuarantine for why).
  if (next_fresh_ < kMaxSegments) {
    index = next_fresh_++;
    id = seg_make_id(0, index);
    fresh_claim_ = true;
    return TSU_OK;
  }
  if (free_.size() >= kSegQuarantine) {
    index = free_.front();
    free_.pop_front();
    const uint64_t w = cb_->slots[index].word.load(std::memory_order_relaxed);
    id = seg_make_id(seg_generation(slot_word_id(w)) + 1, index);
    fresh_claim_ = false;
    return TSU_OK;
  }
  error = std::to_string(live_) + " segments of this rank are live, the most there can be (" +
          std::to_string(kMaxLiveSegments) + " with the main segment); free some first";
  return TSU_ERR_LIMIT;
}

void SegmentTable::unclaim_index(uint32_t index) noexcept {
  if (fresh_claim_)
    --next_fresh_;
  else
    free_.push_front(index);  // the slot still holds its retired word
}

void SegmentTable::publish(uint32_t index, tsu_seg_t id, uint32_t state, int fd, uint64_t size,
                           std::byte* base) noexcept {
  SegmentSlot& slot = cb_->slots[index];
  // Seqlock writer (control_block.hpp): the slot was retired (or is unused)
  // before; release stores carry that to a reader that sees a new value.
  slot.fd.store(fd, std::memory_order_release);
  slot.size.store(size, std::memory_order_release);
  slot.owner_addr.store(reinterpret_cast<uint64_t>(base), std::memory_order_release);
  locals_[index].base.store(base, std::memory_order_release);
  slot.word.store(slot_word(id, state), std::memory_order_release);
  ranges_.emplace(reinterpret_cast<uintptr_t>(base), Range{size, id});
  if (size > max_range_) max_range_ = size;
  ++live_;
}

tsu_status_t SegmentTable::allocate(std::size_t size, tsu_seg_t& seg, void*& base,
                                    std::string& error, bool nic_atomics) {
  std::lock_guard lock(mu_);
  uint32_t index;
  tsu_seg_t id;
  tsu_status_t st = claim_index(index, id, error);
  if (st != TSU_OK) return st;
  SharedRegion region;
  st = shared_region_create("tsu-segment", size, region, error);
  if (st != TSU_OK) {
    unclaim_index(index);
    return st;
  }
  locals_[index].region = region;
  publish(index, id, nic_atomics ? kSegmentSharedNic : kSegmentShared, region.fd, size,
          static_cast<std::byte*>(region.base));
  seg = id;
  base = region.base;
  return TSU_OK;
}

// The seqlock's one exception to "the word never returns to an earlier
// value under a live id" (control_block.hpp): kSegmentSharedNic ->
// kSegmentShared keeps the id and changes the state.  Done only before the
// id has left tsu_segment_alloc_ex, when no reader can hold it; the fields
// stay as they are, so even a reader that raced it reads consistent fields
// (it would see the word change and report the id stale, nothing worse).
void SegmentTable::make_cpu_atomics(tsu_seg_t seg) noexcept {
  std::lock_guard lock(mu_);
  SegmentSlot& slot = cb_->slots[seg_index(seg)];
  const uint64_t w = slot.word.load(std::memory_order_relaxed);  // only we write it
  if (slot_word_id(w) == seg && slot_word_state(w) == kSegmentSharedNic)
    slot.word.store(slot_word(seg, kSegmentShared), std::memory_order_release);
}

tsu_status_t SegmentTable::register_memory(void* base, std::size_t size, tsu_seg_t& seg,
                                           std::string& error) {
  std::lock_guard lock(mu_);
  uint32_t index;
  tsu_seg_t id;
  tsu_status_t st = claim_index(index, id, error);
  if (st != TSU_OK) return st;
  publish(index, id, kSegmentRegistered, -1, size, static_cast<std::byte*>(base));
  seg = id;
  return TSU_OK;
}

tsu_status_t SegmentTable::free(tsu_seg_t seg, std::string& error, bool keep_memory) {
  std::lock_guard lock(mu_);
  if (seg == TSU_SEG_MAIN) {
    error = "the main segment (0) is freed by tsu_finalize, not tsu_segment_free";
    return TSU_ERR_INVALID_ARG;
  }
  const uint32_t index = seg_index(seg);
  SegmentSlot& slot = cb_->slots[index];
  const uint64_t w = slot.word.load(std::memory_order_relaxed);  // only we write it
  if (slot_word_id(w) != seg || !slot_state_live(slot_word_state(w))) {
    error = "segment " + std::to_string(seg) + " does not exist (freed already, or never allocated)";
    return TSU_ERR_BAD_SEGMENT;
  }
  // Retire first so new requests fail; peers may still hold a mapping of a
  // shared segment, which keeps its pages alive, so nothing they do can touch
  // other memory.  The fields keep their values until the index is reused.
  slot.word.store(slot_word(seg, kSegmentRetired), std::memory_order_release);
  const auto base = reinterpret_cast<uintptr_t>(locals_[index].base.load(std::memory_order_relaxed));
  for (auto [it, end] = ranges_.equal_range(base); it != end; ++it)
    if (it->second.seg == seg) {
      ranges_.erase(it);
      break;
    }
  if (keep_memory) {
    try {
      kept_.push_back(locals_[index].region);
    } catch (...) {
      // Out of memory: leaked rather than unmapped under the adapter's key.
    }
    locals_[index].region = SharedRegion{};
  }
  shared_region_destroy(locals_[index].region);
  free_.push_back(index);
  --live_;
  return TSU_OK;
}

tsu_status_t SegmentTable::translate_other(tsu_seg_t seg, uint64_t offset, std::size_t len,
                                           std::byte*& out, uint32_t* state_out) const noexcept {
  const uint32_t index = seg_index(seg);
  const SegmentSlot& slot = cb_->slots[index];
  // Seqlock reader (control_block.hpp).
  const uint64_t w = slot.word.load(std::memory_order_acquire);
  const uint32_t state = slot_word_state(w);
  if (slot_word_id(w) != seg || !slot_state_live(state)) return TSU_ERR_BAD_SEGMENT;
  const uint64_t size = slot.size.load(std::memory_order_acquire);
  std::byte* const base = locals_[index].base.load(std::memory_order_acquire);
  if (slot.word.load(std::memory_order_relaxed) != w) return TSU_ERR_BAD_SEGMENT;
  if (offset > size || len > size - offset) return TSU_ERR_OUT_OF_BOUNDS;
  out = base + offset;
  if (state_out) *state_out = state;
  return TSU_OK;
}

bool SegmentTable::find(const void* ptr, tsu_seg_t& seg, uint64_t& offset) const noexcept {
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard lock(mu_);
  // Ranges may overlap (memory registered twice, or inside another segment):
  // of those containing p, the lowest id wins.  Only ranges starting within max_range_ below p can contain it.
  bool found = false;
  for (auto it = ranges_.upper_bound(p); it != ranges_.begin();) {
    --it;
    const uintptr_t d = p - it->first;
    if (d >= max_range_) break;
    if (d < it->second.size && (!found || it->second.seg < seg)) {
      seg = it->second.seg;
      offset = d;
      found = true;
    }
  }
  return found;
}

bool SegmentTable::info(tsu_seg_t seg, void*& base, std::size_t& size) const noexcept {
  const uint32_t index = seg_index(seg);
  const SegmentSlot& slot = cb_->slots[index];
  const uint64_t w = slot.word.load(std::memory_order_acquire);
  if (slot_word_id(w) != seg || !slot_state_live(slot_word_state(w))) return false;
  const uint64_t s = slot.size.load(std::memory_order_acquire);
  std::byte* const b = locals_[index].base.load(std::memory_order_acquire);
  if (slot.word.load(std::memory_order_relaxed) != w) return false;
  base = b;
  size = static_cast<std::size_t>(s);
  return true;
}

uint32_t SegmentTable::live() const noexcept {
  std::lock_guard lock(mu_);
  return live_;
}

}  // namespace tsu::core
