// Messages between ranks: what active messages, tagged messages, collectives
// and (over network transports) RMA and atomics travel as.  A transport with
// kCapMessages carries header + payload opaquely and delivers each message
// exactly once, in order per (sender, receiver) pair, to the receiver's
// progress context, which dispatches it by handler id.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace tsu::core {

struct MessageHeader {
  uint16_t handler;      // MessageHandlerTable id
  uint16_t flags;        // meaning chosen by the handler
  uint32_t payload_len;  // bytes that follow the header
  uint64_t args[4];      // small arguments (AM arguments, offsets, cookies)
};
static_assert(sizeof(MessageHeader) == 40);

// Handler ids below kFirstUserHandler belong to the library's own protocols;
// user AM handler h travels as kFirstUserHandler + h.
enum InternalHandler : uint16_t {
  kHandlerNone = 0,
  // 1..63: remote RMA and atomics (network transports)
  kHandlerRmaFirst = 1,
  kHandlerRmaLast = 63,
  // 64..127: active-message protocol (replies, long-payload notices)
  kHandlerAmFirst = 64,
  kHandlerAmLast = 127,
  // 128..191: tagged messages (eager, rendezvous)
  kHandlerMsgFirst = 128,
  kHandlerMsgLast = 191,
  // 192..255: collectives
  kHandlerCollFirst = 192,
  kHandlerCollLast = 255,
};
inline constexpr uint32_t kFirstUserHandler = 256;
inline constexpr uint32_t kMaxHandlers = 65536;

// Runs in the receiver's progress context: must not block.  `payload` is valid
// only during the call.
using MessageHandlerFn = void (*)(void* ctx, uint32_t src_rank, const MessageHeader& header,
                                  const std::byte* payload) noexcept;

// Dispatch table: an array index per message.  Entries are set during init or
// collective registration, before any message for them can arrive.  `set` may
// run in a user thread while the progress thread dispatches other ids: ctx is
// written first and fn published with release (an acquire load in dispatch is a
// plain load on x86).
class MessageHandlerTable {
 public:
  void set(uint32_t id, MessageHandlerFn fn, void* ctx) noexcept {
    if (id >= kMaxHandlers) return;
    entries_[id].ctx.store(ctx, std::memory_order_relaxed);
    entries_[id].fn.store(fn, std::memory_order_release);
  }
  bool has(uint32_t id) const noexcept {
    return id < kMaxHandlers && entries_[id].fn.load(std::memory_order_acquire);
  }
  // False when nobody handles `header.handler` (the caller counts and drops it).
  bool dispatch(uint32_t src_rank, const MessageHeader& header,
                const std::byte* payload) const noexcept {
    const Entry& e = entries_[header.handler];
    const MessageHandlerFn fn = e.fn.load(std::memory_order_acquire);
    if (!fn) return false;
    fn(e.ctx.load(std::memory_order_relaxed), src_rank, header, payload);
    return true;
  }

 private:
  struct Entry {
    std::atomic<MessageHandlerFn> fn{nullptr};
    std::atomic<void*> ctx{nullptr};
  };
  std::array<Entry, kMaxHandlers> entries_{};
};

}  // namespace tsu::core
