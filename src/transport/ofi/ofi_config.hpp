// The ofi transport's settings (TSU_OFI_*), filled from the settings table in
// ofi_plugin.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/settings.hpp"

namespace tsu::transport::ofi {

using core::kFaultInjection;

// Testing: make native RMA fail as a provider that claims FI_RMA but cannot
// do it would (ENOSYS), at the call or in the completion, to exercise the
// fallback to the message emulation (TSU_OFI_TEST_FAULT).
// kAtStagedCall: only the calls made at batch_end for staged operations.
// kAtomic*: the same for NIC atomics (at the call, in the completion, or
// at the call for every NIC atomic after this rank's first).
enum class RmaFault : uint8_t {
  kNone,
  kAtCall,
  kInCompletion,
  kAtStagedCall,
  kAtomicAtCall,
  kAtomicInCompletion,
  kAtomicLate,
  kMessageLost,  // not an RMA fault: one message "sent" and never delivered
  // Not an RMA fault: every receive of a bulk transfer from the last rank is
  // refused at the post with -FI_EOTHER, as tcp;ofi_rxm refuses one that
  // matches a dead sender's rendezvous.
  kBulkRecvRefusedLast
};

struct OfiConfig {
  std::string provider = "tcp;ofi_rxm";  // fi_info's provider name
  std::string iface;                     // network interface to pin ("" : derived)
  bool iface_given = false;
  std::size_t max_message = 64u << 10;   // largest message payload
  uint32_t rx_buffers = 64;              // receive buffers posted
  uint32_t tx_buffers = 64;              // send buffers (sends in flight)
  bool native_rma = true;                // put/get by fi_write/fi_read where offered
  // Staged messages to one peer packed into one provider send (TSU_OFI_BUNDLE).
  bool bundle = true;
  // Puts and gets up to this size use messages even where native RMA works
  // (TSU_OFI_RMA_MESSAGE_MAX): bundled, they cost a fraction of a provider
  // operation each.
  std::size_t rma_message_max = 256;
  // A native put or get leaves in pieces of at most this, one at a time
  // (TSU_OFI_RMA_PIECE): each piece's completion shows the peer alive.
  std::size_t rma_piece = 4u << 20;
  // Large tagged messages' payloads by the provider's tagged send and
  // receive where it offers them (TSU_OFI_BULK; else DATA messages).
  bool bulk = true;
  // Tagged messages to ranks on other nodes up to this size go eager
  // (TSU_OFI_EAGER_MAX); kEagerAuto: what the provider sends in one piece.
  static constexpr std::size_t kEagerAuto = SIZE_MAX;
  std::size_t eager_max = kEagerAuto;
  // TSU_OFI_WAIT: fd (true): the completion queue has a wait descriptor and
  // an idle engine sleeps on it; none (false): no wait object (tcp;ofi_rxm
  // then signals nothing per completion) and the engine never sleeps.
  bool cq_wait = true;
  // TSU_OFI_TEST_FAULT: read only in builds with TSU_FAULT_INJECTION; in
  // others faulty() is false at compile time and no fault is tested for.
  RmaFault fault = RmaFault::kNone;
  constexpr bool faulty(RmaFault f) const noexcept { return kFaultInjection && fault == f; }
  // Watched peers (PeerLoss::watch_peer): one silent this long is pinged
  // (it answers), one silent for peer_timeout is lost.
  uint64_t keepalive_ns = 500'000'000;         // TSU_OFI_KEEPALIVE
  uint64_t peer_timeout_ns = 10'000'000'000;   // TSU_OFI_PEER_TIMEOUT
};

}  // namespace tsu::transport::ofi
