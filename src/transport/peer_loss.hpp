// Part of the transport seam (transport.hpp): detecting dead peers.  shm
// watches its node peers' processes; network transports watch their peers'
// keep-alives (docs/udp.md, docs/ofi.md).
#pragma once

#include <cstdint>

namespace tsu::transport {

class PeerLoss {
 public:
  // The transport calls `fn(ctx, rank)` once per dead peer, from poll()
  // (progress context), after which sends to that rank return
  // TSU_ERR_PEER_LOST.  Set before the engine starts.
  using LostFn = void (*)(void* ctx, uint32_t rank) noexcept;
  virtual void set_peer_lost_handler(LostFn fn, void* ctx) noexcept = 0;
  virtual bool is_peer_lost(uint32_t rank) const noexcept = 0;

  // This rank waits for a message from `rank` (a collective step, a posted
  // receive, an RMA over messages awaiting replies): the transport starts
  // watching it if it does not already, so that the wait ends with
  // TSU_ERR_PEER_LOST rather than never when `rank` dies before sending.
  // Any thread, any lock held: must not block (the transport may finish the
  // job in its next poll).  Watches are counted: each call is paired with one
  // unwatch_peer(rank) when that wait ends (satisfied, cancelled or failed),
  // and the guarantee holds while any is open.  Once none is, the transport
  // may stop spending keep-alives on the rank (ofi does).
  virtual void watch_peer(uint32_t rank) noexcept = 0;
  // Ends one watch_peer(rank).  Same rules: any thread, any lock, no block.
  virtual void unwatch_peer(uint32_t rank) noexcept = 0;

 protected:
  ~PeerLoss() = default;
};

}  // namespace tsu::transport
