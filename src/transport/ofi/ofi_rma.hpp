// Native RMA over libfabric: the ofi transport's RmaProtocol
// (transport/rma.hpp), overriding the message emulation where the NIC can do
// the work.
//
// Put and get between memory this process holds and a rank's main segment
// behind ofi become one fi_write / fi_read.  (Only the main segment, which
// lives as long as the job, is registered with the NIC: tcp;ofi_rxm drops
// the connection on an access under a closed key, so segments that can be
// freed are reached by messages and their stale ids refused by the target's
// CPU.)  The target's
// key, base and size come from the target itself on first use of a
// (rank, segment): a key request answered from RmaHost::memory_key, cached
// by the segment id (which carries its generation, so a freed segment's id
// never finds a newer segment's key).  The range is checked against the
// size the target gave before anything leaves, and the target's NIC checks
// it again; a segment freed meanwhile is refused by the NIC (no such key).
//
// A provider that lists FI_RMA and then refuses it (ENOSYS / EOPNOTSUPP, at
// the call or in the completion) is not an error: that request and every
// later one go to the message emulation.
//
// Atomics: on a TSU_SEG_NIC_ATOMICS segment (AtomicSite::kNic) one
// fi_atomicmsg / fi_fetch_atomicmsg / fi_compare_atomicmsg under the
// segment's key, whoever issues it: remote ranks, node peers and the owner
// itself (through its own address; the runtime hands this protocol those
// too).  The site comes with the key: the key reply carries the owner's
// AtomicSite for every live segment (CPU segments have no key), cached by
// (rank, id) like keys (a segment never changes site once its id is out).
// A NIC atomic the provider refuses (ENOSYS) fails with TSU_ERR_UNSUPPORTED:
// the only switch to CPU atomics is at allocation (api/nic_probe.hpp).
// Atomics on the main segment and on CPU segments go to the message
// emulation (the target's CPU executes them).
//
// Everything else goes to the message emulation it falls back on: copies
// with both sides behind ofi (forwarded), zero-length requests, and sides
// reached by Cross Memory Attach (a node peer's registered memory).
//
// Single-threaded: the progress context only (start, pump, handlers and the
// transport's completions).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

#include "transport/message_rma/message_rma.hpp"
#include "transport/ofi/ofi_transport.hpp"
#include "transport/rma.hpp"

namespace tsu::transport::ofi {

enum OfiRmaHandler : uint16_t {
  kOfiKeyReq = core::kHandlerRmaFirst + 16,
  kOfiKeyRep,
};

class OfiRma final : public RmaProtocol {
 public:
  OfiRma(RmaHost& host, OfiTransport& transport);

  tsu_status_t start(const core::Command& cmd, uint32_t completion_id) noexcept override;
  std::size_t pump() noexcept override;
  bool idle() const noexcept override;
  void on_peer_lost(uint32_t rank) noexcept override;

 private:
  struct Op : RmaContext {
    OfiRma* owner = nullptr;
    bool used = false;
    bool put = true;
    bool abandoned = false;  // failed by peer loss while the provider held it
    bool watched = false;    // counts in the transport's watch of `rank` until released
    bool atomic = false;     // a NIC atomic (cmd holds op, type, result pointer)
    // A NIC atomic's operand, compare value and result, one value of the
    // type each (the low bytes: x86 is little-endian), alive until done.
    uint64_t operand = 0, compare = 0, result = 0;
    uint32_t rank = 0;       // the remote side's rank
    tsu_gaddr_t remote{};    // the remote side
    std::byte* local = nullptr;
    std::size_t len = 0;
    // A put or get leaves in pieces of at most TSU_OFI_RMA_PIECE, one at a
    // time: bytes whose pieces completed, the piece in flight, the key.
    std::size_t done_len = 0;
    std::size_t piece = 0;
    WireKey key{};
    uint32_t completion_id = 0;
    core::Command cmd{};     // the request, for the fallback to messages
  };
  struct KeyState {
    bool known = false;
    bool requested = false;
    bool has_key = false;  // false: a CPU segment (no registration)
    AtomicSite site = AtomicSite::kCpu;
    WireKey key{};
    std::vector<Op*> waiting;  // ops parked until the key arrives
  };
  struct PendingMessage {
    uint32_t dst;
    core::MessageHeader h;
    std::vector<std::byte> payload;
  };

  static uint64_t key_of(uint32_t rank, tsu_seg_t seg) { return (uint64_t{rank} << 32) | seg; }
  Op* alloc() noexcept;
  void release(Op* op) noexcept;
  void issue(Op* op, const WireKey& key) noexcept;
  tsu_status_t start_atomic(const core::Command& cmd, uint32_t completion_id) noexcept;
  // An op whose key state is known: a NIC atomic, the target CPU's (the
  // message emulation), or a put/get.
  void dispatch(Op* op, bool has_key, AtomicSite site, WireKey key) noexcept;
  // Dispatches `op` (remote set) now if its segment's key state is known,
  // else queues it until the owner answers (asking once).  core::kStarted: the
  // op completes later; TSU_ERR_NO_MEMORY: released, not started.
  tsu_status_t dispatch_when_keyed(Op* op) noexcept;
  void issue_atomic(Op* op, const WireKey& key) noexcept;
  // Hands an op to the message emulation (its request completes there).
  void to_messages(Op* op) noexcept;
  // The provider refused a NIC atomic: TSU_ERR_UNSUPPORTED to its caller.
  void refused(Op* op) noexcept;
  void finish(Op* op, tsu_status_t st) noexcept;
  // The provider cannot do native RMA after all (ENOSYS): this op and every
  // later request go to the message emulation.
  void fall_back(Op* op) noexcept;
  void send(uint32_t dst, const core::MessageHeader& h, const void* payload) noexcept;
  static void on_done(RmaContext* ctx, tsu_status_t st) noexcept;
  static void on_key_req(void* ctx, uint32_t src, const core::MessageHeader& h,
                         const std::byte* p) noexcept;
  static void on_key_rep(void* ctx, uint32_t src, const core::MessageHeader& h,
                         const std::byte* p) noexcept;

  RmaHost& host_;
  OfiTransport& t_;
  MessageRma fallback_;
  bool native_ok_ = true;  // false once the provider refused native RMA
  bool atomic_refusal_logged_ = false;
  std::vector<std::unique_ptr<Op>> ops_;
  std::vector<Op*> free_;
  std::unordered_map<uint64_t, KeyState> keys_;
  std::deque<std::pair<Op*, WireKey>> backlog_;  // waiting for transport room
  std::deque<PendingMessage> messages_;          // key requests/replies waiting for room
};

}  // namespace tsu::transport::ofi
