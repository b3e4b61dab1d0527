// Tagged two-sided messages over the AM layer's send path and core RMA:
// matching, the unexpected queue, eager / rendezvous / single-copy eager
// (seed 004).  Knows nothing of sockets or shared memory: the posted-receive
// queue lives in the rank's layer area, which node peers reach through
// Transport::peer_layer_area (network transports have none: no single-copy
// eager), and the rendezvous copy uses the memory route (resolve /
// resolve_process_memory + Runtime::copy_access), or, for a peer whose
// memory is not reachable (another node), a CTS/DATA message exchange.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "core/message.hpp"
#include "msg/posted_queue.hpp"
#include "tsunagi/tsunagi.h"

namespace tsu::core {
class Runtime;
}
namespace tsu::am {
class AmLayer;
}

namespace tsu::msg {

inline constexpr uint16_t kHandlerMsgEager = core::kHandlerMsgFirst + 0;
inline constexpr uint16_t kHandlerMsgRts = core::kHandlerMsgFirst + 1;
inline constexpr uint16_t kHandlerMsgFin = core::kHandlerMsgFirst + 2;
inline constexpr uint16_t kHandlerMsgScDone = core::kHandlerMsgFirst + 3;
// Rendezvous with a peer whose memory this process cannot reach (another
// node, udp): the receiver asks for the data (CTS), the sender sends it in
// message-sized pieces (DATA) and completes; no FIN.
inline constexpr uint16_t kHandlerMsgCts = core::kHandlerMsgFirst + 4;
inline constexpr uint16_t kHandlerMsgData = core::kHandlerMsgFirst + 5;

class MsgLayer {
 public:
  MsgLayer(core::Runtime& rt, am::AmLayer& am);
  ~MsgLayer();
  MsgLayer(const MsgLayer&) = delete;
  MsgLayer& operator=(const MsgLayer&) = delete;

  tsu_status_t send(uint32_t dst, uint64_t tag, const void* buf, std::size_t len,
                    const tsu_cb_t& cb) noexcept;
  tsu_status_t recv(uint32_t src, uint64_t tag, uint64_t mask, void* buf, std::size_t cap,
                    tsu_msg_status_t* status, const tsu_cb_t& cb, tsu_recv_t* handle) noexcept;
  tsu_status_t probe(uint32_t src, uint64_t tag, uint64_t mask, tsu_msg_status_t* status) noexcept;
  tsu_status_t cancel(tsu_recv_t handle) noexcept;
  void counters(tsu_msg_counters_t& out) const noexcept;

  // Tests: hold this rank's posted-queue lock (senders then fall back to eager).
  void test_hold_lock(bool hold) noexcept;

 private:
  struct Local;       // a posted receive, owner side
  struct Unexpected;  // an arrived, unmatched message
  struct SendReq;     // a rendezvous send waiting for its FIN (or CTS)
  struct NetPull;     // a rendezvous receive fed by DATA messages (off-node)

  static void on_eager(void* ctx, uint32_t src, const core::MessageHeader& h,
                       const std::byte* payload) noexcept;
  static void on_rts(void* ctx, uint32_t src, const core::MessageHeader& h,
                     const std::byte* payload) noexcept;
  static void on_fin(void* ctx, uint32_t src, const core::MessageHeader& h,
                     const std::byte* payload) noexcept;
  static void on_sc_done(void* ctx, uint32_t src, const core::MessageHeader& h,
                         const std::byte* payload) noexcept;
  static void on_cts(void* ctx, uint32_t src, const core::MessageHeader& h,
                     const std::byte* payload) noexcept;
  static void on_data(void* ctx, uint32_t src, const core::MessageHeader& h,
                      const std::byte* payload) noexcept;

  // Owner side, queue lock held: the first posted receive matching (src,
  // tag), removed from the posted lists; nullptr if none.
  std::unique_ptr<Local> take_posted(uint32_t src, uint64_t tag) noexcept;
  void free_entry(uint32_t slot) noexcept;  // lock held
  // Lock held: l goes into the free shared entry `slot`, last in order.
  void post_entry(uint16_t slot, std::unique_ptr<Local> l) noexcept;
  void complete(Local& l, uint32_t src, uint64_t tag, std::size_t len, tsu_status_t st) noexcept;
  // Rendezvous: copies from the sender into l's buffer, sends FIN.
  void pull(std::unique_ptr<Local> l, uint32_t src, uint64_t tag, std::size_t len, uint16_t flags,
            uint64_t addr, uint64_t cookie) noexcept;
  bool try_single_copy(uint32_t dst, uint64_t tag, const void* buf, std::size_t len,
                       bool& busy) noexcept;

  core::Runtime& rt_;
  am::AmLayer& am_;
  std::size_t eager_max_;
  std::size_t sceager_min_;
  bool sceager_;
  PostedQueue mine_;  // this rank's queue (owner)
  std::vector<std::unique_ptr<Local>> slots_;    // per entry (lock held)
  std::vector<uint16_t> free_slots_;             // lock held
  std::deque<std::unique_ptr<Local>> overflow_;  // posted after the shared entries (lock held)
  std::deque<std::unique_ptr<Unexpected>> unexpected_;  // arrival order (lock held)
  uint64_t next_id_ = 1;                                // lock held
  std::unique_ptr<std::atomic<uint64_t>[]> sent_;       // pushed to each rank
  std::unique_ptr<std::atomic<uint32_t>[]> peer_capacity_;  // 0: not checked yet
  struct Counters {
    std::atomic<uint64_t> eager{0}, sceager{0}, busy{0}, miss{0}, rndv{0}, unexpected{0};
  } counters_;
};

}  // namespace tsu::msg
