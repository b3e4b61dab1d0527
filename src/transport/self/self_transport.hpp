// The calling rank itself: its own segment table, plain pointers, and a local
// message queue so that a message to oneself runs its handler in progress
// context like any other (never inline in the sender).
// The smallest transport; the reference for writing a new one: this class, its
// plug-in (self_plugin.cpp: name, summary, open), its floor.cmake, and one
// line in transport/registry.cpp.
#pragma once

#include <cstdlib>
#include <new>

#include "core/doorbell.hpp"
#include "core/segment_table.hpp"
#include "transport/memory_access.hpp"
#include "transport/messaging.hpp"
#include "transport/msg_ring.hpp"
#include "transport/node.hpp"

namespace tsu::transport::self {

class SelfTransport final : public NodeTransport, public MemoryAccess, public Messaging {
 public:
  static constexpr const char* kSummary =
      "the rank itself: plain loads, stores and CPU atomics; a private message queue";
  explicit SelfTransport(const core::SegmentTable& segments) : segments_(segments) {}
  ~SelfTransport() override { std::free(ring_mem_); }
  SelfTransport(const SelfTransport&) = delete;
  SelfTransport& operator=(const SelfTransport&) = delete;

  const char* name() const noexcept override { return "self"; }
  Parts parts() noexcept override {
    Parts p;
    p.memory = this;
    p.messages = this;
    return p;
  }
  // The rank itself, and no other.
  tsu_status_t add_peer(const NodePeer& peer, std::string& error) noexcept override {
    if (peer.rank == my_rank_) return TSU_OK;
    error = "self reaches only its own rank";
    return TSU_ERR_UNSUPPORTED;
  }

  // ---- MemoryAccess: this rank's own segments ------------------------------
  tsu_status_t resolve(const tsu_gaddr_t& addr, std::size_t len, Access& out) noexcept override {
    std::byte* p;  // (the router sends only this rank's addresses here)
    uint32_t state = 0;
    const tsu_status_t st = segments_.translate(addr.seg, addr.offset, len, p, &state);
    if (st == TSU_OK)
      out = Access{Access::kDirect, p, 0, 0, state == core::kSegmentRegistered,
                   state == core::kSegmentSharedNic};
    return st;
  }
  bool direct_main(uint32_t, std::byte*& base, uint64_t& size) noexcept override {
    base = segments_.main_base();
    size = segments_.main_size();
    return base != nullptr;
  }
  tsu_status_t resolve_process_memory(uint32_t, uint64_t addr, std::size_t,
                                      Access& out) noexcept override {
    out = Access{Access::kDirect, reinterpret_cast<std::byte*>(addr), 0, 0};
    return TSU_OK;
  }
  std::byte* peer_layer_area(uint32_t, std::size_t& size) noexcept override {
    size = area_size_;
    return area_;
  }

  bool notify_peer(uint32_t) noexcept override {
    if (!ring_.valid()) return false;
    if (ring_.take_asleep()) doorbell_.ring();
    return true;
  }
  // ---- Messaging: a private ring (same code as the shared one) and the
  // rank's own doorbell, rung when the engine sleeps.  `area` is the rank's
  // layer area.
  bool init_messages(uint32_t my_rank, uint32_t slots, uint32_t slot_size, core::Doorbell doorbell,
                     std::byte* area, std::size_t area_size) noexcept {
    ring_mem_ = std::aligned_alloc(MsgRing::kAlign, MsgRing::bytes_for(slots, slot_size));
    if (!ring_mem_) return false;
    ring_ = MsgRing::format(ring_mem_, slots, slot_size);
    my_rank_ = my_rank;
    doorbell_ = doorbell;
    area_ = area;
    area_size_ = area_size;
    return true;
  }
  std::size_t max_message_payload() const noexcept override { return ring_.max_payload(); }
  tsu_status_t send_message(uint32_t, const core::MessageHeader& header,
                            const void* payload) noexcept override {
    if (header.payload_len > ring_.max_payload()) return TSU_ERR_INVALID_ARG;
    switch (ring_.try_push(my_rank_, header, payload)) {
      case MsgRing::Push::kFull: return TSU_EAGAIN;
      case MsgRing::Push::kPushedAsleep: doorbell_.ring(); return TSU_OK;
      case MsgRing::Push::kPushed: break;
    }
    return TSU_OK;
  }
  // ---- Progress ---------------------------------------------------------------
  std::size_t poll(const core::MessageHandlerTable& handlers) noexcept override {
    if (!ring_.valid()) return 0;
    return ring_.drain(32, [&](uint32_t src, const core::MessageHeader& h, const std::byte* p) {
      handlers.dispatch(src, h, p);
    });
  }
  bool prepare_sleep() noexcept override { return !ring_.valid() || ring_.prepare_sleep(); }
  void end_sleep() noexcept override {
    if (ring_.valid()) ring_.end_sleep();
  }

 private:
  const core::SegmentTable& segments_;
  void* ring_mem_ = nullptr;
  MsgRing ring_;
  uint32_t my_rank_ = 0;
  core::Doorbell doorbell_;
  std::byte* area_ = nullptr;
  std::size_t area_size_ = 0;
};

}  // namespace tsu::transport::self
