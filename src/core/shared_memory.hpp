// Shared-memory regions that node peers can map: a memfd, mapped by its
// owner, and opened by peers through /proc/<pid>/fd/<fd>.  memfd (rather than
// shm_open) leaves nothing behind in /dev/shm when a rank crashes.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

#include "tsunagi/tsunagi.h"

namespace tsu::core {

struct SharedRegion {
  void* base = nullptr;
  std::size_t size = 0;
  int fd = -1;
};

// Whether a mapping's pages are faulted in when it is made: for memory every
// message passes through (the message rings), so that no page fault lands
// on a message's path; other regions fill on first touch.
enum class Populate : bool { kOnTouch = false, kNow = true };

// Creates and maps a zero-filled region of `size` bytes (rounded up to pages).
tsu_status_t shared_region_create(const char* name, std::size_t size, SharedRegion& out,
                                  std::string& error, Populate populate = Populate::kOnTouch);

// Maps the region that process `pid` holds open as descriptor `fd`.
tsu_status_t shared_region_map_peer(pid_t pid, int fd, std::size_t size, void*& base,
                                    std::string& error, Populate populate = Populate::kOnTouch);

// Unmaps (and closes, for owned regions) a region; safe on an empty one.
void shared_region_destroy(SharedRegion& region);
void shared_region_unmap(void* base, std::size_t size);

std::size_t page_round_up(std::size_t size);

}  // namespace tsu::core
