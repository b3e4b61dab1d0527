// The transport interface.  A transport knows how to reach a set of ranks; it
// knows nothing of tags, AM handlers or collectives.  The router picks one per
// rank at init (self, then shm for node peers, then a network transport) and
// never per call.
//
// Memory transports (self, shm) reach the target's memory from this process:
// `resolve` turns a global address into a pointer or a Cross Memory Attach
// handle after checking it against the target's own segment table, and the
// operation is executed here (in the caller with bypass, or by the executor).
// Other transports provide an RMA protocol (transport/rma.hpp): their own, for
// native RMA, or by default the message emulation, which carries requests to
// the target and has it execute them with the same code.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>

#include <memory>
#include <string>

#include "core/message.hpp"
#include "transport/rma.hpp"
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

enum Capability : uint32_t {
  kCapMemoryAccess = 1u << 0,  // resolve() works: RMA/atomics run in this process
  kCapMessages = 1u << 1,      // send_message()/poll() work
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
                               Access& out) noexcept {
    (void)addr, (void)len, (void)out;
    return TSU_ERR_UNSUPPORTED;
  }

  // `rank`'s main segment when this process maps it for the whole job (its
  // base and size never change): the bypass put/get reach it without
  // resolve().  False where the transport does not map it.
  virtual bool direct_main(uint32_t rank, std::byte*& base, uint64_t& size) noexcept {
    (void)rank, (void)base, (void)size;
    return false;
  }

  // Any memory of `rank`'s process by its address there (the tagged layer's
  // rendezvous reads a sender's buffer by pointer).  Memory transports answer
  // with Cross Memory Attach (or kDirect for the caller itself); others say
  // TSU_ERR_UNSUPPORTED and the layer above falls back to a message protocol.
  virtual tsu_status_t resolve_process_memory(uint32_t rank, uint64_t addr, std::size_t len,
                                              Access& out) noexcept {
    (void)rank, (void)addr, (void)len, (void)out;
    return TSU_ERR_UNSUPPORTED;
  }

  // The layer area of `rank` (a shared region each rank creates at init for
  // the layers above core: the tagged layer's posted-receive queue) mapped in
  // this process, or nullptr where the transport cannot map it (network).
  virtual std::byte* peer_layer_area(uint32_t rank, std::size_t& size) noexcept {
    (void)rank, (void)size;
    return nullptr;
  }

  // A layer changed state in `rank`'s layer area that its progress must see
  // (a filled single-copy record): wakes its engine if it sleeps.  Called
  // after a seq_cst store there.  False where the transport cannot (the
  // caller then sends a message instead).
  virtual bool notify_peer(uint32_t rank) noexcept {
    (void)rank;
    return false;
  }

  // ---- RMA and atomics to ranks behind this transport (not kCapMemoryAccess)
  // The transport's own RMA protocol (native RMA and atomics).  nullptr, the
  // default: the runtime gives it the message emulation
  // (transport/message_rma/), which any kCapMessages transport supports.
  virtual std::unique_ptr<RmaProtocol> make_rma(RmaHost& host) noexcept {
    (void)host;
    return nullptr;
  }
  // Memory registration: every segment this rank creates or registers (the
  // main segment at init included) is announced here before any peer can
  // address it, and withdrawn before its memory goes away.  A transport with
  // native RMA registers it with the NIC and fills `key` with what a peer
  // needs to address it (RmaHost::memory_key hands it out later); others
  // leave `key` empty.  An error refuses the segment (the caller sees it).
  virtual tsu_status_t register_memory(const MemoryRegion& region, MemoryKey& key,
                                       std::string& error) noexcept {
    (void)region, (void)key, (void)error;
    return TSU_OK;
  }
  virtual void deregister_memory(tsu_seg_t seg) noexcept { (void)seg; }
  // Whether this transport can execute atomics of `type`/`op` in the NIC
  // (AtomicSite::kNic); a segment chooses its site once (transport/rma.hpp).
  virtual bool nic_atomics(tsu_atype_t type, tsu_aop_t op) const noexcept {
    (void)type, (void)op;
    return false;
  }

  // ---- Messages (kCapMessages) ----------------------------------------------
  // Largest payload send_message accepts (larger ones are the caller's to split).
  virtual std::size_t max_message_payload() const noexcept { return 0; }
  // The largest tagged payload best sent to `peer` as one eager message
  // (copied once at the receiver) rather than by rendezvous; 0: no opinion,
  // the job's TSU_EAGER_MAX applies.  ofi: what the provider sends in one
  // piece (above it tcp;ofi_rxm adds round trips of its own); udp: 32 KiB
  // (one message of a few datagrams saves the rendezvous' round trip).
  virtual std::size_t eager_max(uint32_t peer) const noexcept {
    (void)peer;
    return 0;
  }

  // Sends one message to `dst`.  Header and payload are copied before the call
  // returns.  Delivered exactly once, in order per (sender, receiver) pair.
  // TSU_EAGAIN when there is no room now; any thread may call.
  virtual tsu_status_t send_message(uint32_t dst, const core::MessageHeader& header,
                                    const void* payload) noexcept {
    (void)dst, (void)header, (void)payload;
    return TSU_ERR_UNSUPPORTED;
  }

  // ---- Bulk payloads (optional; network transports) --------------------------
  // A large tagged message's payload moved by the transport itself, from the
  // sender's buffer straight into the receiver's (ofi: the provider's tagged
  // send and receive, whose own rendezvous reads the data in place; a NIC
  // with tag matching does it without a CPU copy).  The layer above matches
  // the message itself (its RTS) and only then posts the receive, so a
  // payload is paired by nothing but (sender rank, `key`): no wildcard, no
  // order between payloads.  `done(ctx, peer, cookie, status)` runs once, in
  // progress context, for every call that returned TSU_OK: TSU_OK when the
  // payload left (send: the buffer is free again) or arrived whole (receive:
  // the caller knows its length from the RTS and receives all of it;
  // providers differ on truncated receives); TSU_ERR_PEER_LOST or another
  // error otherwise.
  // A receive whose peer is declared lost is cancelled first.  Any thread;
  // never TSU_EAGAIN (the transport queues what it has no room for).
  using BulkDone = void (*)(void* ctx, uint32_t peer, uint64_t cookie,
                            tsu_status_t status) noexcept;
  // The largest payload bulk_send takes to `peer` (0: none, the layer above
  // uses messages).
  virtual std::size_t bulk_max(uint32_t peer) const noexcept {
    (void)peer;
    return 0;
  }
  virtual tsu_status_t bulk_send(uint32_t dst, uint32_t key, const void* buf, std::size_t len,
                                 BulkDone done, void* ctx, uint64_t cookie) noexcept {
    (void)dst, (void)key, (void)buf, (void)len, (void)done, (void)ctx, (void)cookie;
    return TSU_ERR_UNSUPPORTED;
  }
  virtual tsu_status_t bulk_recv(uint32_t src, uint32_t key, void* buf, std::size_t len,
                                 BulkDone done, void* ctx, uint64_t cookie) noexcept {
    (void)src, (void)key, (void)buf, (void)len, (void)done, (void)ctx, (void)cookie;
    return TSU_ERR_UNSUPPORTED;
  }

  // ---- Progress (called by the engine holding the consumer role) ----------
  // Delivers arrived messages to `handlers` and advances protocol work
  // (acknowledgements, retransmissions, keep-alives).  Returns work done.
  virtual std::size_t poll(const core::MessageHandlerTable& handlers) noexcept {
    (void)handlers;
    return 0;
  }

  // Before the engine sleeps: returns false if work is pending (do not
  // sleep).  A transport whose peers must wake us publishes "asleep" here, and
  // clears it in end_sleep().
  virtual bool prepare_sleep() noexcept { return true; }
  virtual void end_sleep() noexcept {}
  // True when prepare_sleep() always refuses (the user asked for busy
  // polling, TSU_OFI_WAIT=none): the idle engine then yields its core at
  // every pass instead of spinning on it.
  virtual bool busy_polling() const noexcept { return false; }
  // A descriptor that becomes readable when the transport has work (or -1),
  // and how long the engine may sleep before poll() is needed again (timers).
  virtual int wait_fd() const noexcept { return -1; }
  virtual uint64_t max_sleep_ns() const noexcept { return UINT64_MAX; }

  // ---- Batching (called by the engine holding the consumer role) ------------
  // The executor brackets each batch of commands with these: a transport may
  // stage the messages sent in between and hand them to the network in one
  // go at batch_end() (sendmmsg).  Sends outside a batch go out at once.
  virtual void batch_begin() noexcept {}
  virtual void batch_end() noexcept {}

  // ---- Peer loss (network transports) ---------------------------------------
  // A transport that detects a dead peer calls `fn(ctx, rank)` once, from
  // poll() (progress context), after which send_message to that rank returns
  // TSU_ERR_PEER_LOST.  Set before the engine starts.
  using PeerLostFn = void (*)(void* ctx, uint32_t rank) noexcept;
  virtual void set_peer_lost_handler(PeerLostFn fn, void* ctx) noexcept { (void)fn, (void)ctx; }
  virtual bool is_peer_lost(uint32_t rank) const noexcept {
    (void)rank;
    return false;
  }
  // This rank waits for a message from `rank` (a collective step, a posted
  // receive, an RMA over messages awaiting replies): a transport that detects dead peers starts watching it if it
  // does not already, so that the wait ends with TSU_ERR_PEER_LOST rather
  // than never when `rank` dies before sending.  Any thread, any lock held:
  // must not block (the transport may finish the job in its next poll).
  // Watches are counted: each call is paired with one unwatch_peer(rank)
  // when that wait ends (satisfied, cancelled or failed), and the guarantee
  // holds while any is open.  Once none is, the transport may stop spending
  // keep-alives on the rank (ofi does; see docs/ofi.md, docs/udp.md).
  virtual void watch_peer(uint32_t rank) noexcept { (void)rank; }
  // Ends one watch_peer(rank).  Same rules: any thread, any lock, no block.
  virtual void unwatch_peer(uint32_t rank) noexcept { (void)rank; }
  // This rank has nothing in flight and enters finalize's barrier: a peer
  // that goes away from now on has finalized, not died, and is not reported
  // lost.  Any thread.
  virtual void finalizing() noexcept {}

  // TSU_STATS=1: the transport's own counters, at finalize.
  virtual void print_stats(std::FILE* f) const noexcept { (void)f; }
};

}  // namespace tsu::transport
