// The layer area: shared memory each rank creates at init for the layers
// above the runtime (the tagged layer's posted-receive queue, the
// collectives' node region), mapped by its node peers.  The runtime knows
// nothing of what the layers keep there: before the transports open, each
// layer reserves a slice under an id of its choosing (LayerAreaPlan), and
// later finds its slice, in its own area or in a node peer's, by that id.
//
// The area starts with a directory of its slices, written by its owner
// before the init barrier, so a rank reads a peer's layout from the peer's
// own area and never assumes the peer sized its slices the same way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tsu::runtime {

struct LayerAreaSlice {
  uint32_t id = 0;      // the reserving layer's id (0: unused entry)
  uint32_t reserved = 0;
  uint64_t offset = 0;  // from the area's start, page aligned
  uint64_t size = 0;
};

// The directory at offset 0 of every layer area (its first page).
struct LayerAreaDirectory {
  static constexpr uint64_t kMagic = 0x7473752d61726561ull;  // "tsu-area"
  static constexpr uint32_t kMaxSlices = 8;
  uint64_t magic = 0;
  uint32_t count = 0;
  uint32_t reserved = 0;
  LayerAreaSlice slice[kMaxSlices];
};

// The slices the layers ask for, laid out one after the other, each page
// aligned, after the directory's page.
class LayerAreaPlan {
 public:
  static constexpr std::size_t kPage = 4096;
  static_assert(sizeof(LayerAreaDirectory) <= kPage);

  // False when `id` is 0 or taken, or the directory is full.
  bool reserve(uint32_t id, std::size_t bytes) {
    if (id == 0 || slices_.size() == LayerAreaDirectory::kMaxSlices) return false;
    for (const LayerAreaSlice& s : slices_)
      if (s.id == id) return false;
    slices_.push_back({id, 0, end_, bytes});
    end_ += (bytes + kPage - 1) / kPage * kPage;
    return true;
  }
  const std::vector<LayerAreaSlice>& slices() const noexcept { return slices_; }
  std::size_t total_bytes() const noexcept { return end_; }

 private:
  std::vector<LayerAreaSlice> slices_;
  std::size_t end_ = kPage;  // the directory's page
};

// Writes the directory of `plan` at the start of a fresh area.
inline void write_layer_directory(std::byte* area, const LayerAreaPlan& plan) noexcept {
  auto* dir = reinterpret_cast<LayerAreaDirectory*>(area);
  dir->count = static_cast<uint32_t>(plan.slices().size());
  for (uint32_t i = 0; i < dir->count; ++i) dir->slice[i] = plan.slices()[i];
  dir->magic = LayerAreaDirectory::kMagic;
}

// The slice `id` of an area of `size` bytes (its owner's layout), checked
// against the area's bounds; nullptr where there is none.
inline std::byte* find_layer_slice(std::byte* area, std::size_t size, uint32_t id,
                                   std::size_t& slice_size) noexcept {
  slice_size = 0;
  if (!area || size < sizeof(LayerAreaDirectory)) return nullptr;
  const auto* dir = reinterpret_cast<const LayerAreaDirectory*>(area);
  if (dir->magic != LayerAreaDirectory::kMagic || dir->count > LayerAreaDirectory::kMaxSlices)
    return nullptr;
  for (uint32_t i = 0; i < dir->count; ++i) {
    const LayerAreaSlice& s = dir->slice[i];
    if (s.id != id) continue;
    if (s.offset > size || s.size > size - s.offset) return nullptr;
    slice_size = s.size;
    return area + s.offset;
  }
  return nullptr;
}

}  // namespace tsu::runtime
