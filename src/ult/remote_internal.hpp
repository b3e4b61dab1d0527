// The layer's wire format and shared state, for remote*.cpp only: the AM
// ids, the records of spawn and value batches, and the function table.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "remote.hpp"

namespace tsu::ult {

// (Named in remote.hpp.)
struct SpawnRecord {
  uint64_t token;
  uint32_t creator;
  uint32_t fn_id;
  uint16_t arg_len;
  uint16_t flags;       // kSpawnDetached | kSpawnMigratable
  uint32_t stack_size;  // bytes (at most 1 GiB); 0: the runner's default
};

enum : uint32_t {
  kAmSpawn = TSU_ULT_AM_FIRST,   // medium: args {count, load}; SpawnRecords
  kAmValues,                     // medium: args {count, load}; ValueRecords
  kAmLoad,                       // short: {runnable count}
  kAmAsk,                        // short: {max threads}: "give me work"
  kAmMoved,                      // (unused: moves are ValueRecords with kValueMoved)
  kAmNothing,                    // short: answer to kAmAsk with no work
  kAmReport,                     // medium: args {round}; sent[size], handled[size] (u32)
  kAmDone,                       // short: {round}: termination decided, stop
};

struct ValueRecord {
  uint64_t token;
  int32_t status;  // kValueMoved: the new runner's rank
  uint16_t len;
  uint16_t flags;  // kValueMoved
};
// Not a value: the thread was handed on to another rank (`status`), which
// will send its value; the creator's proxy follows it (watch, loss).  It
// travels in the values batch, so a full queue delays it (the batch retries)
// and never drops it.
constexpr uint16_t kValueMoved = 1;
constexpr uint16_t kSpawnDetached = 1;
constexpr uint16_t kSpawnMigratable = 2;
constexpr uint32_t kStackSizeMax = 1u << 30;  // as tsu_ult_attr_t.stack_size

inline uint16_t spawn_flags(const RemoteInfo& info) {
  return static_cast<uint16_t>((info.detached ? kSpawnDetached : 0) |
                               (info.migratable ? kSpawnMigratable : 0));
}
static_assert(sizeof(SpawnRecord) == 24 && sizeof(ValueRecord) == 16);

constexpr std::size_t pad8(std::size_t n) { return (n + 7) & ~std::size_t{7}; }

// Chunk buffers kept per destination for reuse (see Remote::Batch::spare):
// enough for the chunks that pile up while the destination's queue is full
// (up to 256 KiB each way), so a burst of spawns does not grow and trim
// malloc's arena over and over.
constexpr std::size_t kSpareChunks = 16;

// The registered functions, and the layer (for handlers and ending threads);
// defined in remote.cpp.
extern std::atomic<tsu_ult_remote_fn_t> g_fns[TSU_ULT_FN_MAX + 1];
extern std::atomic<Remote*> g_remote;

}  // namespace tsu::ult
