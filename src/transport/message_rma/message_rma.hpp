// RMA and atomics over any message-capable transport: the default RmaProtocol
// (transport/rma.hpp) of a transport without native RMA (udp today), the
// request/reply protocol of handler ids 1..63.
//
// Origin (executor, progress context): a command whose target is reached
// only by messages becomes an Op; its requests are sent (a put streams its
// data in pieces of the transport's max message; a get asks for pieces; an
// atomic carries operand and compare) and the executor returns core::kStarted.
// Reply handlers write results (get data into the local buffer, atomic
// result) and finish the engine record when every piece is answered.
// Target (handlers, progress context): executes with the runtime's own
// memory code (RmaHost) against its own segment table and replies with the status.
// Bounds are checked here for the WHOLE request with every piece (each piece
// carries where the request ends), so a request that does not fit writes or
// returns nothing; the origin checks its own side whole before the first
// piece leaves.  Atomics are the same CPU atomics as intra-node ones.
// Third-party copy between two remote ranks is forwarded to the rank owning
// the source, which runs it as its own put (or local copy) and replies.
//
// Peer loss fails every op waiting on that rank with TSU_ERR_PEER_LOST; new
// ones fail the same way (the transport refuses to send).  Single-threaded:
// only the holder of the engine's consumer role calls in.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "core/command.hpp"
#include "core/message.hpp"
#include "core/vector_request.hpp"
#include "transport/rma.hpp"
#include "transport/messaging.hpp"
#include "transport/transport.hpp"

namespace tsu::transport {

using core::Command;
using core::MessageHeader;
using core::MessageHandlerTable;

enum RmaHandler : uint16_t {
  kRmaPutReq = core::kHandlerRmaFirst,
  kRmaPutRep,
  kRmaGetReq,
  kRmaGetRep,
  kRmaAtomicReq,
  kRmaAtomicRep,
  kRmaCopyReq,
  kRmaCopyRep,
  kRmaVecReq,  // a vector/strided put or get, or the bounds check before one
  kRmaVecRep,
};

class MessageRma final : public RmaProtocol {
 public:
  explicit MessageRma(RmaHost& host) : host_(host) {}
  // The target side's handlers (and the origin's reply handlers).
  void register_handlers(MessageHandlerTable& table);

  // Starts `cmd` (at least one side on a message-only route).  core::kStarted:
  // pending, the engine record `completion_id` is finished later.
  tsu_status_t start(const Command& cmd, uint32_t completion_id) noexcept override;
  // Continues ops and replies that waited for transport room.
  std::size_t pump() noexcept override;
  bool idle() const noexcept override { return backlog_.empty() && replies_.empty(); }
  void on_peer_lost(uint32_t rank) noexcept override;
  std::size_t in_flight() const noexcept { return ops_.size() - free_.size(); }

 private:
  enum class Kind : uint8_t { kPut, kGet, kAtomic, kForward, kVector };
  // A vector message's piece entry: remote offset, length, local offset.
  static constexpr std::size_t kVecEntry = 24;
  struct Op {
    uint32_t gen = 0;
    bool used = false;
    bool in_backlog = false;
    Kind kind = Kind::kPut;
    uint32_t peer = 0;     // rank the requests go to
    bool watched = false;  // holds a PeerLoss::watch_peer on peer until release
    Command cmd{};
    // Where the result goes: an engine record, or a forwarded copy's origin.
    bool forwarded = false;
    uint32_t completion_id = 0;
    uint32_t origin = 0;
    uint64_t origin_cookie = 0;
    uint64_t sent = 0;        // bytes requested so far
    bool first_sent = false;  // zero-length ops still send one request
    uint32_t outstanding = 0; // requests without a reply
    tsu_status_t status = TSU_OK;
    // kVector (message_rma_vector.cpp): a request too large for one message
    // first has every remote piece checked (vchecking), then moves data;
    // the cursor is the next piece and how much of it has been sent.
    bool vchecking = false;
    std::size_t vpiece = 0;
    uint64_t vwithin = 0;
  };
  struct Reply {
    uint32_t dst;
    MessageHeader h;
    std::vector<std::byte> payload;
  };

  uint64_t alloc(const Command& cmd) noexcept;
  Op* find(uint64_t cookie) noexcept;
  tsu_status_t start_op(uint64_t cookie) noexcept;
  void advance(uint64_t cookie) noexcept;
  bool send_next(Op& op, uint64_t cookie) noexcept;  // false: stop (room/err/done)
  bool send_next_vector(Op& op, uint64_t cookie, Messaging& t) noexcept;
  bool vector_sent(const Op& op) const noexcept;
  // While an op waits for its peer's replies, the peer's transport watches
  // it (PeerLoss::watch_peer), so its death fails the op; release ends it.
  void watch(Op& op) noexcept;
  void release(Op& op, uint64_t cookie) noexcept;  // frees the slot (and a vector)
  void fail(Op& op, tsu_status_t st) noexcept;
  void maybe_complete(uint64_t cookie) noexcept;
  void reply(uint32_t dst, const MessageHeader& h, const void* payload) noexcept;
  tsu_status_t check_local_side(const Op& op) const noexcept;
  tsu_status_t check_whole(const tsu_gaddr_t& piece, uint64_t end,
                           std::size_t piece_len) const noexcept;
  Messaging* transport_to(uint32_t rank) const noexcept;

  // Handlers (target side and origin side).
  static void on_put_req(void* ctx, uint32_t src, const MessageHeader& h, const std::byte* p) noexcept;
  static void on_get_req(void* ctx, uint32_t src, const MessageHeader& h, const std::byte* p) noexcept;
  static void on_atomic_req(void* ctx, uint32_t src, const MessageHeader& h, const std::byte* p) noexcept;
  static void on_copy_req(void* ctx, uint32_t src, const MessageHeader& h, const std::byte* p) noexcept;
  static void on_reply(void* ctx, uint32_t src, const MessageHeader& h, const std::byte* p) noexcept;
  static void on_vec_req(void* ctx, uint32_t src, const MessageHeader& h, const std::byte* p) noexcept;
  static void on_vec_rep(void* ctx, uint32_t src, const MessageHeader& h, const std::byte* p) noexcept;

  RmaHost& host_;
  std::vector<Op> ops_;
  std::vector<uint32_t> free_;
  std::deque<uint64_t> backlog_;  // ops waiting for transport room
  std::deque<Reply> replies_;     // replies waiting for transport room
};

}  // namespace tsu::transport
