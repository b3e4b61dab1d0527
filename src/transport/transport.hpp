// The transport interface: a small required core, and optional parts a
// transport offers by capability.  A transport knows how to reach a set of
// ranks; it knows nothing of tags, AM handlers or collectives.  The router
// picks one per rank at init (the node transports in registry order, then the
// network transport) and never per call.
//
// Every transport implements the core below: its name, the parts it offers,
// progress (poll) and the engine's sleep protocol.  The parts, each one
// header, are interfaces a transport inherits only when it offers them:
//   MemoryAccess  (memory_access.hpp)  reach a rank's memory from this process
//                                       (self, shm: the operation runs here)
//   Messaging     (messaging.hpp)      ordered, exactly-once messages (AM,
//                                       tagged messages, the RMA emulation)
//   NativeRma     (rma.hpp)            the transport's own RMA and atomics
//                                       (ofi); without it a Messaging transport
//                                       gets the message emulation
//   BulkTransfer  (bulk_transfer.hpp)  large payloads moved by the transport
//   PeerLoss      (peer_loss.hpp)      detects dead peers (shm, udp, ofi)
// The next optimization lands in the part it belongs to, and a new transport
// implements only what it offers: docs/architecture.md, "Adding a transport".
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "core/message.hpp"

namespace tsu::transport {

class MemoryAccess;
class Messaging;
class NativeRma;
class BulkTransfer;
class PeerLoss;

// The optional parts a transport offers, each pointing into the transport
// itself (null: not offered).  Read once, when the runtime opens it.
struct Parts {
  MemoryAccess* memory = nullptr;
  Messaging* messages = nullptr;
  NativeRma* rma = nullptr;
  BulkTransfer* bulk = nullptr;
  PeerLoss* peer_loss = nullptr;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const noexcept = 0;
  virtual Parts parts() noexcept = 0;

  // ---- Progress (called by the engine holding the consumer role) ----------
  // Delivers arrived messages to `handlers` and advances protocol work
  // (acknowledgements, retransmissions, keep-alives).  Returns work done.
  virtual std::size_t poll(const core::MessageHandlerTable& handlers) noexcept = 0;

  // Before the engine sleeps: returns false if work is pending (do not
  // sleep).  A transport whose peers must wake us publishes "asleep" here, and
  // clears it in end_sleep().
  virtual bool prepare_sleep() noexcept { return true; }
  virtual void end_sleep() noexcept {}
  // True when prepare_sleep() always refuses (the transport is configured
  // for busy polling): the idle engine then yields its core at every pass
  // instead of spinning on it.
  virtual bool busy_polling() const noexcept { return false; }
  // A descriptor that becomes readable when the transport has work (or -1),
  // and how long the engine may sleep before poll() is needed again (timers).
  virtual int wait_fd() const noexcept { return -1; }
  virtual uint64_t max_sleep_ns() const noexcept { return UINT64_MAX; }

  // This rank has nothing in flight and enters finalize's barrier: a peer
  // that goes away from now on has finalized, not died, and is not reported
  // lost.  Any thread.
  virtual void finalizing() noexcept {}

  // TSU_STATS=1: the transport's own counters, at finalize.
  virtual void print_stats(std::FILE* f) const noexcept { (void)f; }
};

}  // namespace tsu::transport
