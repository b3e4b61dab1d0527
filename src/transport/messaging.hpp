// Part of the transport seam (transport.hpp): messages.  A transport that
// offers it carries the active messages, tagged messages, collectives' steps
// and (without NativeRma) the RMA emulation to the ranks it reaches.
// Arrived messages are delivered from Transport::poll.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/message.hpp"
#include "tsunagi/tsunagi.h"

namespace tsu::transport {

class Messaging {
 public:
  // Largest payload send_message accepts (larger ones are the caller's to split).
  virtual std::size_t max_message_payload() const noexcept = 0;

  // Sends one message to `dst`.  Header and payload are copied before the call
  // returns.  Delivered exactly once, in order per (sender, receiver) pair.
  // TSU_EAGAIN when there is no room now; any thread may call.
  virtual tsu_status_t send_message(uint32_t dst, const core::MessageHeader& header,
                                    const void* payload) noexcept = 0;

  // The largest tagged payload best sent to `peer` as one eager message
  // (copied once at the receiver) rather than by rendezvous; 0: no opinion,
  // the job's TSU_EAGER_MAX applies.  ofi: what the provider sends in one
  // piece (above it tcp;ofi_rxm adds round trips of its own); udp: 32 KiB
  // (one message of a few datagrams saves the rendezvous' round trip).
  virtual std::size_t eager_max(uint32_t peer) const noexcept {
    (void)peer;
    return 0;
  }

  // The executor brackets each batch of commands with these (called by the
  // engine holding the consumer role): a transport may stage the messages
  // sent in between and hand them to the network in one go at batch_end()
  // (sendmmsg).  Sends outside a batch go out at once.
  virtual void batch_begin() noexcept {}
  virtual void batch_end() noexcept {}

 protected:
  ~Messaging() = default;
};

}  // namespace tsu::transport
