// The library's process-wide state: what shmem_init set up.
#pragma once

#include <tsunagi/tsunagi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tsu::shmem {

inline constexpr size_t kHeapAlign = size_t{2} << 20;
// Bytes at the start of the heap the library keeps for itself (the
// barrier's words, a cache line each).
inline constexpr size_t kHeapReserved = 128;

// Active-message handler ids the library reserves (tsunagi's id space; a
// program that also uses tsunagi's AM API must leave these free).
inline constexpr uint32_t kAmAtomicRequest = 65200;
inline constexpr uint32_t kAmAtomicReply = 65201;
inline constexpr uint32_t kAmGlobalExit = 65202;

struct State {
  std::atomic<int> phase{0};  // 0 never initialized, 1 running, 2 finalized
  bool owns_tsunagi = false;  // shmem_init started tsunagi (and finalize stops it)
  int my_pe = -1;
  int n_pes = 0;
  int thread_level = 3;       // SHMEM_THREAD_MULTIPLE: every level is provided
  bool debug = false;         // SHMEM_DEBUG
  bool direct = true;         // loads/stores on node peers' heap (tsunagi's bypass)

  // The symmetric heap: one tsunagi segment per PE, the same size everywhere.
  char* heap_base = nullptr;
  size_t heap_size = 0;
  std::vector<tsu_seg_t> heap_seg;  // per PE
  // Where each PE's heap starts in its segment: the heap is aligned to
  // kHeapAlign in every process, so an aligned offset is an aligned address
  // everywhere (shmem_align).
  std::vector<uint64_t> heap_skew;   // per PE
  std::vector<char*> heap_direct;   // per PE: its heap mapped here, or nullptr

  // The program's global and static data, registered as a segment.
  char* static_base = nullptr;
  size_t static_size = 0;
  std::vector<tsu_seg_t> static_seg;  // per PE
  // The page-aligned part of it that lives in shared memory (everything but
  // the read-only-after-relocation head), and each node peer's mapped here.
  char* shared_static_base = nullptr;
  size_t shared_static_size = 0;
  std::vector<char*> static_direct;  // per PE: its shared static part, or nullptr
  // The shared static pages' file name while it is still on /dev/shm (from
  // its creation until every peer mapped it); fail() removes it too.
  char static_file[64] = {0};

  // Every PE's heap is mapped here: the world's barrier runs on two words at
  // the start of PE 0's heap (symmetric_heap.cpp keeps them out of the
  // allocator) instead of tsunagi's collectives.
  bool shared_barrier = false;
  uint64_t barrier_generation = 0;

  // Bounce buffers for local sides outside any segment (context.cpp).
  char* bounce_base = nullptr;
  tsu_seg_t bounce_seg = 0;
};

State& state() noexcept;

// Blocking barrier of every PE, without quiet (tsunagi's world team).
void world_sync(const char* fn) noexcept;
// Fails the job with tsunagi's error text when `st` is not TSU_OK.
void check_tsu(tsu_status_t st, const char* fn, const char* what) noexcept;

// symmetric_map.cpp
void map_symmetric(size_t heap_size, const char* fn) noexcept;
void unmap_symmetric() noexcept;
// symmetric_heap.cpp
void heap_reset(size_t size) noexcept;
// context.cpp
void contexts_init(const char* fn) noexcept;
void contexts_finalize() noexcept;
// atomics.cpp
void atomics_init(const char* fn) noexcept;

}  // namespace tsu::shmem
