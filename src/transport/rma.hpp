// RMA and atomics in the transport seam.
//
// A rank's memory is reached one of two ways, chosen per rank at init:
//   - by a transport offering MemoryAccess (self, shm): resolve maps the
//     range, and the operation runs in this process (runtime);
//   - by an RMA protocol (RmaProtocol): a transport offering NativeRma (a
//     NIC: ofi) makes its own (NativeRma::make_rma); a transport offering
//     only Messaging gets the reusable message emulation
//     (transport/message_rma/), which carries requests as messages and has
//     the target's CPU execute them.
//
// Who executes atomics on a segment (seed 002) is one decision per segment,
// made when the segment is registered (MemoryRegion::atomics): every atomic
// on that segment, local or remote, goes the same way, so CPU atomics and
// NIC atomics are never mixed on one word.  A segment says kNic only when it
// was allocated with TSU_SEG_NIC_ATOMICS and the network transport accepted
// every atomic (NativeRma::nic_atomics); then the runtime hands its atomics
// to the network transport's RmaProtocol from every issuer, the owner and
// its node peers included (core::kSegmentSharedNic in the slot tells them).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/command.hpp"
#include "core/message.hpp"
#include "transport/memory_access.hpp"
#include "tsunagi/tsunagi.h"

namespace tsu::transport {

class Messaging;

// Who executes the atomics aimed at a segment.
enum class AtomicSite : uint8_t {
  kCpu,  // the owner's CPU (directly, or a handler at the target for message routes)
  kNic,  // the network adapter, for every issuer, the owner included
};

// A segment as the transport sees it when it is registered.
struct MemoryRegion {
  tsu_seg_t seg = 0;
  void* base = nullptr;
  std::size_t size = 0;
  bool user_memory = false;  // tsu_mem_register (copies only), not tsu_mem_alloc
  AtomicSite atomics = AtomicSite::kCpu;
};

// What a peer needs to address a registered segment over a transport with
// native RMA (a provider key and the base the NIC expects).  Opaque to the
// runtime; empty (len 0) for transports that need nothing.
struct MemoryKey {
  uint32_t len = 0;
  std::array<std::byte, 60> bytes{};
};

// What the runtime offers an RMA protocol.  Every call runs in the progress
// context (the holder of the engine's consumer role).
class RmaHost {
 public:
  virtual uint32_t host_rank() const noexcept = 0;
  virtual uint32_t host_size() const noexcept = 0;
  // Whether this process reaches `rank`'s memory (MemoryAccess), and the
  // messages to `rank` (null: no transport carries any).
  virtual bool memory_route(uint32_t rank) const noexcept = 0;
  virtual Messaging* message_route(uint32_t rank) const noexcept = 0;
  // PeerLoss (transport/peer_loss.hpp) of the transport reaching `rank`,
  // where it has one: a wait on `rank`'s reply starts and ends a watch.
  virtual void watch_peer(uint32_t rank) noexcept = 0;
  virtual void unwatch_peer(uint32_t rank) noexcept = 0;
  virtual bool peer_lost(uint32_t rank) const noexcept = 0;
  // Memory this process reaches (its own, node peers'), checked against the
  // owner's segment table: TSU_ERR_BAD_SEGMENT / OUT_OF_BOUNDS on a bad range.
  virtual tsu_status_t resolve(const tsu_gaddr_t& addr, std::size_t len,
                               Access& out) const noexcept = 0;
  virtual tsu_status_t read_memory(const tsu_gaddr_t& src, void* dst,
                                   std::size_t len) noexcept = 0;
  virtual tsu_status_t write_memory(const tsu_gaddr_t& dst, const void* src,
                                    std::size_t len) noexcept = 0;
  // A copy between two ranges this process reaches, and an atomic on one, with
  // the segment's own atomic executor (AtomicSite).
  virtual tsu_status_t execute_copy(const tsu_gaddr_t& dst, const tsu_gaddr_t& src,
                                    std::size_t len) noexcept = 0;
  virtual tsu_status_t execute_atomic(const tsu_gaddr_t& target, tsu_aop_t op, tsu_atype_t type,
                                      uint64_t operand, uint64_t compare,
                                      void* result) noexcept = 0;
  // Finishes the engine record of a request start() left pending.
  virtual void complete(uint32_t completion_id, tsu_status_t status) noexcept = 0;
  // The key registration gave this rank's segment `seg` (peers ask for it):
  // copied to `out`; false when the segment has none (not live).
  virtual bool memory_key(tsu_seg_t seg, MemoryKey& out) const noexcept = 0;
  // Who executes atomics on this rank's segment `seg` (peers learn it with
  // the key); false when `seg` is not live.
  virtual bool atomic_site(tsu_seg_t seg, AtomicSite& out) const noexcept = 0;
  // Where a protocol registers its message handlers (handler ids 1..63 are
  // the RMA protocols'; the message emulation uses 1..8).
  virtual core::MessageHandlerTable& handler_table() noexcept = 0;

 protected:
  ~RmaHost() = default;
};

// RMA and atomics to the ranks one transport reaches (not those reached by
// MemoryAccess).
// Single-threaded: only the progress context calls in.
class RmaProtocol {
 public:
  virtual ~RmaProtocol() = default;
  // Starts `cmd` (a copy with at least one side behind the transport, or an
  // atomic).  TSU_OK or an error: done now; core::kStarted: pending, finished
  // later through RmaHost::complete(completion_id, status).
  virtual tsu_status_t start(const core::Command& cmd, uint32_t completion_id) noexcept = 0;
  // Continues requests and replies that waited for transport room.
  virtual std::size_t pump() noexcept = 0;
  virtual bool idle() const noexcept = 0;
  // Every request waiting on `rank` fails with TSU_ERR_PEER_LOST.
  virtual void on_peer_lost(uint32_t rank) noexcept = 0;
};

// Part of the transport seam (transport.hpp): the transport's own RMA and
// atomics (a NIC), with the memory registration they need.
class NativeRma {
 public:
  // The protocol the runtime uses for RMA and atomics to this transport's
  // ranks (called once, at init).
  virtual std::unique_ptr<RmaProtocol> make_rma(RmaHost& host) noexcept = 0;
  // Memory registration: every segment this rank creates or registers (the
  // main segment at init included) is announced here before any peer can
  // address it, and withdrawn before its memory goes away.  The transport
  // registers it with the NIC and fills `key` with what a peer needs to
  // address it (RmaHost::memory_key hands it out later).  An error refuses
  // the segment (the caller sees it).
  virtual tsu_status_t register_memory(const MemoryRegion& region, MemoryKey& key,
                                       std::string& error) noexcept = 0;
  virtual void deregister_memory(tsu_seg_t seg) noexcept = 0;
  // Whether this transport can execute atomics of `type`/`op` in the NIC
  // (AtomicSite::kNic); a segment chooses its site once.
  virtual bool nic_atomics(tsu_atype_t type, tsu_aop_t op) const noexcept = 0;

 protected:
  ~NativeRma() = default;
};

}  // namespace tsu::transport
