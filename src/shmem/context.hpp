// A communication context: the requests it issued and their completion.
// Completion is counted per context, not per calling thread, so a quiet of
// the default context covers what every thread issued on it.
#pragma once

#include "shmem_internal.hpp"

#include <atomic>
#include <cstdint>

namespace tsu::shmem {

struct Context {
  // Invariant: issued >= completions counted on `done`; a quiet waits until
  // done reaches the value of issued it read.  Requests count themselves in
  // `issued` before they are handed to tsunagi.
  std::atomic<uint64_t> issued{0};
  tsu_counter_t done{};
  // Atomics on static data travel as active messages: outstanding ones.
  std::atomic<uint64_t> am_pending{0};
  long options = 0;
  Team* team = nullptr;  // PE numbers are this team's (nullptr: the world's)
  bool live = true;

  // The world PE of `pe` as this context names it (fail()s when out of range).
  int world_pe(int pe, const char* fn) noexcept;
  // A callback that counts one completion of this context.
  tsu_cb_t count_one() noexcept {
    issued.fetch_add(1, std::memory_order_relaxed);
    return tsu_counter_cb(&done);
  }
};

// A bounce buffer: a piece of the library's own segment standing in for a
// local side that is not in any segment.
inline constexpr size_t kBounceBytes = size_t{64} << 10;
struct Bounce {
  char* ptr;
  tsu_laddr_t laddr;
  uint32_t index;
};
// Waits (driving progress) until a buffer is free.
Bounce bounce_take() noexcept;
void bounce_give(uint32_t index) noexcept;

// A request whose completion must also release a bounce buffer and, for a
// get into memory outside the segments, copy the data out.
struct BounceRequest {
  Context* ctx;
  uint32_t bounce;
  void* copy_to;  // nullptr: nothing to copy
  size_t bytes;
};
// Counts the request on ctx (issued + 1) and returns its callback.
tsu_cb_t bounce_callback(Context* c, uint32_t bounce, void* copy_to, size_t bytes) noexcept;

// Retries a tsunagi call while it answers TSU_EAGAIN, pausing in between.
template <typename Issue>
tsu_status_t issue_retrying(Issue&& issue) noexcept {
  unsigned spins = 0;
  for (;;) {
    const tsu_status_t st = issue();
    if (st != TSU_EAGAIN) return st;
    wait_pause(&spins);
  }
}

}  // namespace tsu::shmem
