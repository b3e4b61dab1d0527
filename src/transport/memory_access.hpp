// Part of the transport seam (transport.hpp): reaching a rank's memory from
// this process.  Node transports (self, shm) offer it: `resolve` turns a
// global address into a pointer or a Cross Memory Attach handle after
// checking it against the target's own segment table, and the operation is
// executed here (in the caller with bypass, or by the executor).
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
  // Registered user memory (tsu_mem_register): reached by copies only.  Node
  // peers reach it through Cross Memory Attach, which is not atomic with CPU
  // atomics, so tsunagi atomics on it fail with TSU_ERR_UNSUPPORTED on every
  // route, the owner's own included (seed 002: one way per word).
  bool copies_only = false;
  // A TSU_SEG_NIC_ATOMICS segment: its atomics go to the network transport's
  // RMA protocol from every issuer, never to a CPU here (AtomicSite::kNic).
  bool nic_atomics = false;
};

class MemoryAccess {
 public:
  // Checks [addr.offset, +len) against the target rank's segment table and
  // describes how to reach it.  Writes `out` only on success; errors are
  // TSU_ERR_BAD_SEGMENT, TSU_ERR_OUT_OF_BOUNDS or TSU_ERR_UNREACHABLE.
  virtual tsu_status_t resolve(const tsu_gaddr_t& addr, std::size_t len,
                               Access& out) noexcept = 0;

  // `rank`'s main segment when this process maps it for the whole job (its
  // base and size never change): the bypass put/get reach it without
  // resolve().  False where it is not mapped.
  virtual bool direct_main(uint32_t rank, std::byte*& base, uint64_t& size) noexcept = 0;

  // Any memory of `rank`'s process by its address there (the tagged layer's
  // rendezvous reads a sender's buffer by pointer): Cross Memory Attach, or
  // kDirect for the caller itself.
  virtual tsu_status_t resolve_process_memory(uint32_t rank, uint64_t addr, std::size_t len,
                                              Access& out) noexcept = 0;

  // The layer area of `rank` (a shared region each rank creates at init for
  // the layers above core; runtime/layer_area.hpp) mapped in this process,
  // or nullptr.
  virtual std::byte* peer_layer_area(uint32_t rank, std::size_t& size) noexcept = 0;

  // A layer changed state in `rank`'s layer area that its progress must see
  // (a filled single-copy record): wakes its engine if it sleeps.  Called
  // after a seq_cst store there.  False where the transport cannot (the
  // caller then sends a message instead).
  virtual bool notify_peer(uint32_t rank) noexcept = 0;

 protected:
  ~MemoryAccess() = default;
};

}  // namespace tsu::transport
