// A thread's own command ring (issue 16, the engine path).  Every thread that
// hands memory-route requests to the progress engine gets one on its first
// such request.  Its pushes touch only lines the thread owns: the claim word
// is not shared with other issuers (so issuers do not bounce it between
// them, and the rate can grow with threads), and a command fits one cache
// line with its sequence number (the ring knows its issuer, so the command
// does not carry it; the engine's shared ring keeps the full 96-byte Command
// for requests handed over by another thread and for network requests).
//
// It is a CommandRing (command_ring.hpp: memory ordering and the sleep
// protocol) with one producer; only the slot layout is its own.
#pragma once

#include <cstdint>

#include "core/command.hpp"
#include "core/command_ring.hpp"

namespace tsu::core {

// A Command without its issuer, in 56 bytes; kind, op and type travel in the
// slot's tag word.
struct RingCommand {
  tsu_gaddr_t dst;
  union {
    struct {
      tsu_gaddr_t src;
      uint64_t len;
    } copy;
    struct {  // kAtomic; kVector uses `result` for its VectorRequest
      uint64_t operand;
      uint64_t compare;
      void* result;
    } atomic;
  };
  tsu_cb_t cb;
};
static_assert(sizeof(RingCommand) == 56);

inline uint32_t ring_tag(const Command& c) noexcept {
  return static_cast<uint32_t>(c.kind) | uint32_t{c.aop} << 8 | uint32_t{c.atype} << 16;
}

// Writes c into a ring entry in place, field by field (see try_push_with).
inline void pack_into(RingCommand& r, const Command& c) noexcept {
  r.dst.rank = c.dst.rank;
  r.dst.seg = c.dst.seg;
  r.dst.offset = c.dst.offset;
  if (c.kind == CommandKind::kCopy) {
    r.copy.src.rank = c.src.rank;
    r.copy.src.seg = c.src.seg;
    r.copy.src.offset = c.src.offset;
    r.copy.len = c.len;
  } else {
    r.atomic.operand = c.operand;
    r.atomic.compare = c.compare;
    r.atomic.result = c.result;
  }
  r.cb.fn = c.cb.fn;
  r.cb.arg = c.cb.arg;
}

inline RingCommand pack(const Command& c) noexcept {
  RingCommand r;
  pack_into(r, c);
  return r;
}

inline Command unpack(uint32_t tag, const RingCommand& r, ThreadContext* issuer) noexcept {
  Command c;
  c.dst = r.dst;
  c.kind = static_cast<CommandKind>(tag & 0xff);
  c.aop = static_cast<uint8_t>(tag >> 8);
  c.atype = static_cast<uint8_t>(tag >> 16);
  if (c.kind == CommandKind::kCopy) {
    c.src = r.copy.src;
    c.len = r.copy.len;
    c.operand = c.compare = 0;
    c.result = nullptr;
  } else {
    c.src = tsu_gaddr_t{};
    c.len = 0;
    c.operand = r.atomic.operand;
    c.compare = r.atomic.compare;
    c.result = r.atomic.result;
  }
  c.cb = r.cb;
  c.issuer = issuer;
  return c;
}

static_assert(CommandRing<RingCommand>::kSlotBytes == kCacheLine,
              "a thread ring's command and its sequence number fill one cache line");

struct ThreadRing {
  // Starts with the waiting bit set: the engine may be asleep when the ring
  // is made, and it does not know the ring yet, so the first push rings.
  ThreadRing(uint32_t capacity, ThreadContext* owner_ctx)
      : ring(capacity, /*consumer_waiting=*/true), owner(owner_ctx) {}

  PushResult try_push(const Command& cmd) noexcept {
    return ring.try_push_with(ring_tag(cmd), [&](RingCommand& r) { pack_into(r, cmd); });
  }

  // Consumer only: calls f(cmd) for up to `max` entries in order.
  template <typename F>
  std::size_t consume(std::size_t max, F&& f) {
    return ring.consume(max, [&](uint32_t tag, const RingCommand& rc) { f(unpack(tag, rc, owner)); });
  }

  CommandRing<RingCommand> ring;
  ThreadContext* const owner;
  // The engine's list of rings (immutable once the ring is published).
  ThreadRing* next = nullptr;
};

}  // namespace tsu::core
