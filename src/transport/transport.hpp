// The transport interface.  A transport knows how to reach a set of ranks; it
// knows nothing of tags, AM handlers or collectives.  The router picks one per
// rank at init (self, then shm for node peers, then a network transport) and
// never per call.
//
// Memory transports (self, shm) reach the target's memory from this process:
// `resolve` turns a global address into a pointer or a Cross Memory Attach
// handle after checking it against the target's own segment table, and the
// operation is executed here (in the caller with bypass, or by the executor).
// Network transports (later) instead carry commands to the target, which
// executes them with the same code.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "tsunagi/tsunagi.h"

namespace tsu::transport {

// How this process reaches a range of some rank's memory.
struct Access {
  enum Kind : uint8_t { kDirect, kCrossMemory };
  Kind kind = kDirect;
  std::byte* ptr = nullptr;    // kDirect: mapped in this process
  pid_t pid = 0;               // kCrossMemory: owner process
  uint64_t remote_addr = 0;    // kCrossMemory: address in the owner
};

enum Capability : uint32_t {
  kCapMemoryAccess = 1u << 0,  // resolve() works: RMA/atomics run in this process
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const noexcept = 0;
  virtual uint32_t capabilities() const noexcept = 0;

  // Checks [addr.offset, +len) against the target rank's segment table and
  // describes how to reach it.  Writes `out` only on success; errors are
  // TSU_ERR_BAD_SEGMENT or TSU_ERR_OUT_OF_BOUNDS (or UNSUPPORTED).
  virtual tsu_status_t resolve(const tsu_gaddr_t& addr, std::size_t len,
                               Access& out) noexcept = 0;
};

}  // namespace tsu::transport
