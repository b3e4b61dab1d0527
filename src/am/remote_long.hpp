// Long active messages to a rank whose memory this process cannot reach (a
// rank on another node, over the network transport).  The payload travels as DATA messages of
// the route's largest payload, then a NOTICE; the target writes each piece
// (after checking the whole destination range against its own segment
// table), runs the handler on the notice and answers with an ACK carrying
// the status, which completes the sender's request.  Messages between two
// ranks are delivered exactly once and in order, so the notice finds every
// piece applied.  Pieces are self-describing (no target state): a bad
// destination writes nothing and the notice reports the error.
//
// Wire format (MessageHeader):
//   data    args[0] segment, [1] destination offset, [2] total length,
//           [3] offset of this piece; payload = the piece
//   notice  flags = argument count, args = the user's arguments;
//           payload = NoticeBody
//   ack     args[0] sender cookie, [1] status (target -> sender)
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "core/message.hpp"
#include "tsunagi/tsunagi.h"

namespace tsu::am {

class AmLayer;

inline constexpr uint16_t kHandlerAmLongData = core::kHandlerAmFirst + 1;
inline constexpr uint16_t kHandlerAmLongNotice = core::kHandlerAmFirst + 2;
inline constexpr uint16_t kHandlerAmLongAck = core::kHandlerAmFirst + 3;

class RemoteLong {
 public:
  explicit RemoteLong(AmLayer& am);
  RemoteLong(const RemoteLong&) = delete;
  RemoteLong& operator=(const RemoteLong&) = delete;

  // Sends `notice` (user handler id and arguments filled in) after
  // payload[0, len) for `addr` on `dst`.  TSU_EAGAIN when nothing could be
  // sent now (nothing was); TSU_OK once everything is sent or queued: the
  // callback then runs exactly once, with the target's status or with the
  // error that stopped the transfer (TSU_ERR_PEER_LOST).
  tsu_status_t send(uint32_t dst, uint32_t id, const core::MessageHeader& notice,
                    const void* payload, std::size_t len, const tsu_gaddr_t& addr,
                    const tsu_cb_t& cb) noexcept;

  // Completes every transfer to `rank` with TSU_ERR_PEER_LOST.
  void on_peer_lost(uint32_t rank) noexcept;
  bool none_in_flight() const noexcept;

 private:
  struct Pending {
    uint32_t dst;
    tsu_cb_t cb;
  };
  uint64_t add_pending(uint32_t dst, const tsu_cb_t& cb) noexcept;  // 0: out of memory
  // Removes the transfer and runs its callback (once: a second call finds
  // nothing).  `from` >= 0: only if the transfer went to that rank (an ack).
  void complete(uint64_t cookie, tsu_status_t st, int64_t from = -1) noexcept;
  // Removes it without a callback; false when it was completed already.
  bool forget(uint64_t cookie) noexcept;

  static void on_data(void* ctx, uint32_t src, const core::MessageHeader& h,
                      const std::byte* payload) noexcept;
  static void on_notice(void* ctx, uint32_t src, const core::MessageHeader& h,
                        const std::byte* payload) noexcept;
  static void on_ack(void* ctx, uint32_t src, const core::MessageHeader& h,
                     const std::byte* payload) noexcept;

  AmLayer& am_;
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, Pending> pending_;  // guarded by mu_
  uint64_t next_cookie_ = 1;                       // guarded by mu_
};

}  // namespace tsu::am
