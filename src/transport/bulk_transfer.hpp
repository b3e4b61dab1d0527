// Part of the transport seam (transport.hpp): bulk payloads, for network
// transports that move a large payload themselves.
//
// A large tagged message's payload moved by the transport, from the sender's
// buffer straight into the receiver's (ofi: the provider's tagged send and
// receive, whose own rendezvous reads the data in place; a NIC with tag
// matching does it without a CPU copy).  The layer above matches the message
// itself (its RTS) and only then posts the receive, so a payload is paired by
// nothing but (sender rank, `key`): no wildcard, no order between payloads.
// `done(ctx, peer, cookie, status)` runs once, in progress context, for every
// call that returned TSU_OK: TSU_OK when the payload left (send: the buffer
// is free again) or arrived whole (receive: the caller knows its length from
// the RTS and receives all of it; providers differ on truncated receives);
// TSU_ERR_PEER_LOST or another error otherwise.  A receive whose peer is
// declared lost is cancelled first.  Any thread; never TSU_EAGAIN (the
// transport queues what it has no room for).
#pragma once

#include <cstddef>
#include <cstdint>

#include "tsunagi/tsunagi.h"

namespace tsu::transport {

class BulkTransfer {
 public:
  using Done = void (*)(void* ctx, uint32_t peer, uint64_t cookie, tsu_status_t status) noexcept;
  // The largest payload bulk_send takes to `peer` (0: none, the layer above
  // uses messages).
  virtual std::size_t bulk_max(uint32_t peer) const noexcept = 0;
  virtual tsu_status_t bulk_send(uint32_t dst, uint32_t key, const void* buf, std::size_t len,
                                 Done done, void* ctx, uint64_t cookie) noexcept = 0;
  virtual tsu_status_t bulk_recv(uint32_t src, uint32_t key, void* buf, std::size_t len,
                                 Done done, void* ctx, uint64_t cookie) noexcept = 0;

 protected:
  ~BulkTransfer() = default;
};

}  // namespace tsu::transport
