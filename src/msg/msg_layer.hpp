// Tagged two-sided messages over the AM layer's send path and core RMA:
// matching, the unexpected queue, eager / rendezvous / single-copy eager
// (seed 004).  Knows nothing of sockets or shared memory: the posted-receive
// queue lives in the rank's layer area, which node peers reach through
// MemoryAccess::peer_layer_area (network transports have none: no single-copy
// eager), and the rendezvous copy uses the memory route (resolve /
// resolve_process_memory + Runtime::copy_access), or, for a peer whose
// memory is not reachable (another node), a CTS/DATA message exchange, or
// the route's own bulk payloads where it has them (BulkTransfer::bulk_send).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/config.hpp"
#include "core/settings.hpp"
#include "core/message.hpp"
#include "msg/posted_queue.hpp"
#include "tsunagi/tsunagi.h"

namespace tsu::runtime {
class Runtime;
}
namespace tsu::am {
class AmLayer;
}
namespace tsu::transport {
class BulkTransfer;
}

namespace tsu::msg {

inline constexpr uint16_t kHandlerMsgEager = core::kHandlerMsgFirst + 0;
inline constexpr uint16_t kHandlerMsgRts = core::kHandlerMsgFirst + 1;
inline constexpr uint16_t kHandlerMsgFin = core::kHandlerMsgFirst + 2;
// "A single-copy record waits in your posted queue": only where the route
// cannot wake the receiver's engine itself (MemoryAccess::notify_peer).
inline constexpr uint16_t kHandlerMsgScPoke = core::kHandlerMsgFirst + 3;
// Rendezvous with a peer whose memory this process cannot reach (another
// node, over the network transport): the receiver asks for the data (CTS), the sender sends it in
// message-sized pieces (DATA) and completes; no FIN.
inline constexpr uint16_t kHandlerMsgCts = core::kHandlerMsgFirst + 4;
inline constexpr uint16_t kHandlerMsgData = core::kHandlerMsgFirst + 5;

class MsgLayer {
 public:
  // `area_id`: the slice of the layer area reserved for area_bytes() at init
  // (runtime/layer_area.hpp), which holds this rank's posted-receive queue.
  MsgLayer(runtime::Runtime& rt, am::AmLayer& am, uint32_t area_id);
  static std::size_t area_bytes(const core::Config& cfg, uint32_t ranks) noexcept;
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

  // Progress (the layers' poller): completes a receive a node peer filled by
  // single-copy eager.  idle(): none waits (checked before the engine sleeps).
  // Inline: every progress pass runs it, and the pass is on the latency path.
  std::size_t poll() noexcept {
    return sceager_ && mine_.filled_pending() ? take_waiting_record() : 0;
  }
  bool idle() const noexcept;

  // Test hooks, only in builds with TSU_FAULT_INJECTION (CMake option, ON
  // in the presets the tests use); tests/messaging/msg_test.cpp skips the
  // tests that need them otherwise.
#if TSU_FAULT_INJECTION
  // Tests: hold this rank's posted-queue lock as a sender would (senders then
  // fall back to eager).
  void test_hold_lock(bool hold) noexcept;
  // Tests: forget the "skip single-copy for the next sends" hints left by
  // earlier traffic, so the next send to a posted receive tries it.
  void test_reset_hints() noexcept {
    for (uint32_t r = 0; r < ranks_; ++r) sc_skip_[r].store(0, std::memory_order_relaxed);
  }
  // Tests: progress leaves a filled record alone (so a message arriving next
  // finds it pending: the owner's matching takes it first).
  void test_defer_filled(bool defer) noexcept {
    test_defer_filled_.store(defer, std::memory_order_relaxed);
  }
#endif

  // `rank` is gone (progress context): rendezvous sends to it, receives fed
  // by it and receives naming it as source complete with TSU_ERR_PEER_LOST.
  void on_peer_lost(uint32_t rank) noexcept;

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
  static void on_sc_poke(void* ctx, uint32_t src, const core::MessageHeader& h,
                         const std::byte* payload) noexcept;
  static void on_cts(void* ctx, uint32_t src, const core::MessageHeader& h,
                     const std::byte* payload) noexcept;
  static void on_data(void* ctx, uint32_t src, const core::MessageHeader& h,
                      const std::byte* payload) noexcept;
  // Bulk payloads (BulkTransfer::bulk_send): the sender's side of a rendezvous
  // to a route that moves the payload itself, and the completion of either
  // side.
  tsu_status_t send_bulk(uint32_t dst, core::MessageHeader& rts, uint64_t cookie,
                         transport::BulkTransfer* route) noexcept;
  static void on_bulk_done(void* ctx, uint32_t peer, uint64_t cookie,
                           tsu_status_t status) noexcept;

  // A receive a sender filled (single-copy eager), completed after unlock.
  struct Filled {
    std::unique_ptr<Local> l;
    uint32_t src = 0;
    uint64_t tag = 0;
    std::size_t len = 0;
  };
  // Owner side: takes the shared queue's lock.  Only the thread running the
  // progress pass takes a record a sender left there (into `f`); another
  // thread finding one lets progress take it first.  unlock_queue releases
  // the lock and completes f's receive (before any the caller completes
  // next: that message was matched first).
  void lock_queue(Filled& f) noexcept;
  void unlock_queue(Filled& f) noexcept;
  void take_filled(Filled& f) noexcept;  // lock held, record pending
  std::size_t take_waiting_record() noexcept;  // progress pass, record pending

  // Owner side, queue lock held: the first posted receive matching (src,
  // tag), removed from the posted lists; nullptr if none.
  std::unique_ptr<Local> take_posted(uint32_t src, uint64_t tag) noexcept;
  void free_entry(uint32_t slot) noexcept;  // lock held
  // One more message from `src` handled (lock held: its only writer, so a
  // plain increment; senders read it to see nothing of theirs in flight).
  void count_processed(uint32_t src) noexcept {
    std::atomic<uint64_t>& c = mine_.processed(src);
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }
  // Lock held: l goes into the free shared entry `slot`, last in order.
  void post_entry(uint16_t slot, std::unique_ptr<Local> l) noexcept;
  void complete(Local& l, uint32_t src, uint64_t tag, std::size_t len, tsu_status_t st) noexcept;
  // Rendezvous: copies from the sender into l's buffer, sends FIN.
  void pull(std::unique_ptr<Local> l, uint32_t src, uint64_t tag, std::size_t len, uint16_t flags,
            uint64_t addr, uint64_t cookie) noexcept;
  // Off-node rendezvous, receiver side (a CTS, or a bulk receive): ask(pull
  // cookie) asks for the data; a failure fails the receive and FINs the sender.
  template <typename Ask>
  void start_pull(std::unique_ptr<NetPull> np, std::unique_ptr<Local> lp, uint32_t src,
                  uint64_t tag, std::size_t len, uint64_t cookie, const char* what,
                  Ask&& ask) noexcept;
  bool skip_single_copy(uint32_t dst) noexcept;
  bool try_single_copy(uint32_t dst, uint64_t tag, const void* buf, std::size_t len,
                       bool& busy) noexcept;
  // Tells a rendezvous sender its transfer ended with `st` (FIN).
  void send_fin(uint32_t dst, uint64_t cookie, tsu_status_t st) noexcept;
  // Rendezvous bookkeeping, by cookie (net_mu_).  take_* removes the entry
  // when it belongs to `peer`, so each request completes exactly once.
  uint64_t add_send(std::unique_ptr<SendReq>& req) noexcept;  // 0: out of memory (kept)
  std::unique_ptr<SendReq> take_send(uint64_t cookie, uint32_t peer) noexcept;
  uint64_t add_pull(std::unique_ptr<NetPull>& np) noexcept;  // 0: out of memory (kept)
  std::unique_ptr<NetPull> take_pull(uint64_t cookie, uint32_t peer) noexcept;
  bool source_lost(uint32_t src) const noexcept;

  runtime::Runtime& rt_;
  am::AmLayer& am_;
  std::size_t eager_max_;
  std::size_t sceager_min_;
  bool sceager_;
  PostedQueue mine_;  // this rank's queue (owner)
  struct alignas(64) AreaLine {
    std::byte bytes[64];
  };
  std::unique_ptr<AreaLine[]> private_area_;  // mine_'s area when no transport shares one
  std::atomic<bool> test_defer_filled_{false};  // test_defer_filled (fault-injection builds)
  std::vector<std::unique_ptr<Local>> slots_;    // per entry (lock held)
  std::vector<uint16_t> free_slots_;             // lock held
  std::deque<std::unique_ptr<Local>> overflow_;  // posted after the shared entries (lock held)
  std::deque<std::unique_ptr<Unexpected>> unexpected_;  // arrival order (lock held)
  uint64_t next_id_ = 1;                                // lock held
  std::unique_ptr<std::atomic<uint64_t>[]> sent_;       // pushed to each rank
  static constexpr uint32_t kScSkipAfterBusy = 16;
  uint32_t ranks_;
  std::unique_ptr<std::atomic<uint32_t>[]> sc_skip_;    // sends left to go eager untried
  // Per peer: its posted-receive queue mapped here and its capacity, found
  // once (null / 0: not looked up yet).
  std::unique_ptr<std::atomic<std::byte*>[]> peer_queue_;
  std::unique_ptr<std::atomic<uint32_t>[]> peer_capacity_;
  const uint32_t area_id_;
  // Rendezvous in flight: sends waiting for FIN/CTS, off-node receives
  // waiting for DATA.  Cookies, not pointers, travel (a late or forged
  // message finds nothing).
  std::mutex net_mu_;
  std::unordered_map<uint64_t, std::unique_ptr<SendReq>> sends_;  // net_mu_
  std::unordered_map<uint64_t, std::unique_ptr<NetPull>> pulls_;  // net_mu_
  uint64_t next_cookie_ = 1;                                      // net_mu_
  struct Counters {
    std::atomic<uint64_t> eager{0}, sceager{0}, busy{0}, miss{0}, rndv{0}, unexpected{0};
  } counters_;
};

}  // namespace tsu::msg
