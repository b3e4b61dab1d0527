// Active messages on top of the transports' message interface (core routes):
// user handlers, short/medium/long payloads, request/reply, and the send
// path every layer above uses (tagged messages, collectives), including the
// queue behind a full ring.  Knows nothing of sockets or shared memory.
//
// Wire format of a user AM (MessageHeader):
//   handler      kFirstUserHandler + user id
//   flags        bits 0-2 argument count, kLong, kReply
//   args[0..3]   the user's arguments
//   payload      medium: the payload; long: a LongRef naming where it was put
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "am/remote_long.hpp"
#include "core/message.hpp"
#include "tsunagi/tsunagi.h"

// What a handler's token points to (opaque in the C API).
struct tsu_am_token_s {
  uint32_t src;
  bool can_reply;  // a request (not a reply)
  bool replied;
};

namespace tsu::runtime {
class Runtime;
}
namespace tsu::transport {
class Transport;
}

namespace tsu::am {

class AmLayer {
 public:
  static constexpr uint16_t kFlagArgsMask = 0x7;
  static constexpr uint16_t kFlagLong = 1u << 3;
  static constexpr uint16_t kFlagReply = 1u << 4;

  explicit AmLayer(runtime::Runtime& rt);
  ~AmLayer();
  AmLayer(const AmLayer&) = delete;
  AmLayer& operator=(const AmLayer&) = delete;

  // ---- Sending (all layers) -------------------------------------------------
  // Largest payload one message to `dst` carries (0: no message route).
  std::size_t max_payload(uint32_t dst) const noexcept;
  // Never queues: TSU_EAGAIN when the ring is full or earlier messages to
  // `dst` wait in the queue (per-pair order).
  tsu_status_t try_send(uint32_t dst, const core::MessageHeader& h, const void* payload) noexcept;
  // Sends now, or queues a copy to send in order from progress (protocol
  // messages from handlers, replies).  Fails only for an unreachable rank or
  // an oversized payload.
  tsu_status_t send_or_queue(uint32_t dst, const core::MessageHeader& h,
                             const void* payload) noexcept;

  // ---- User active messages -------------------------------------------------
  tsu_status_t set_user_handler(uint32_t id, tsu_am_handler_t fn, void* ctx) noexcept;
  std::size_t medium_max() const noexcept { return medium_max_; }
  // Sets the message of an error that came from the transport (lost peer,
  // no route) and returns it.
  static tsu_status_t transport_error(const char* fn, uint32_t dst, tsu_status_t st) noexcept;
  tsu_status_t send_user(const char* fn, uint32_t dst, uint32_t id, const uint64_t* args,
                         uint32_t nargs, const void* payload, std::size_t len,
                         const tsu_gaddr_t* long_addr, const tsu_cb_t& cb) noexcept;
  tsu_status_t reply(tsu_am_token_t* token, uint32_t id, const uint64_t* args, uint32_t nargs,
                     const void* payload, std::size_t len) noexcept;
  // Runs user handler `id` for a long payload already in place (the off-node
  // protocol's notice, progress context).  TSU_ERR_INVALID_ARG when no
  // handler is registered under `id`.
  tsu_status_t run_user_handler(uint32_t src, uint32_t id, const core::MessageHeader& h,
                                void* payload, std::size_t len) noexcept;

  // ---- Synchronization -------------------------------------------------------
  // Collective, blocking, drives progress: a dissemination barrier over all
  // ranks (internal handler kHandlerAmSync).  Used by collective setup calls
  // (handler registration, team split) so that no rank waits without making
  // progress (manual mode).  Not from progress context.
  tsu_status_t sync_all() noexcept;

  // ---- Progress -------------------------------------------------------------
  // Sends queued messages.  The empty check is inline: every progress pass
  // runs it, and the pass is on every message's latency path.
  std::size_t poll() noexcept { return idle() ? 0 : send_queued(); }
  bool idle() const noexcept { return queued_total_.load(std::memory_order_acquire) == 0; }
  // No off-node long AM waits for its target's answer (finalize waits for it).
  bool no_long_in_flight() const noexcept { return remote_long_.none_in_flight(); }
  // Drops queued messages to `rank` and fails its long AMs (TSU_ERR_PEER_LOST).
  void on_peer_lost(uint32_t rank) noexcept;

  runtime::Runtime& runtime() noexcept { return rt_; }

 private:
  std::size_t send_queued() noexcept;  // poll() with messages queued
  struct UserEntry {
    AmLayer* layer;
    uint32_t id;
    // Written by (re-)registration while the progress thread may dispatch
    // the id: ctx is stored before fn (release) and read after it (acquire),
    // so a dispatch that sees a handler sees the ctx registered with it.
    std::atomic<tsu_am_handler_t> fn;
    std::atomic<void*> ctx;
  };
  struct Queued {
    uint32_t dst;
    core::MessageHeader header;
    std::vector<std::byte> payload;
  };
  static void on_sync(void* ctx, uint32_t src, const core::MessageHeader& h,
                      const std::byte* payload) noexcept;
  static void dispatch_user(void* ctx, uint32_t src, const core::MessageHeader& h,
                            const std::byte* payload) noexcept;

  runtime::Runtime& rt_;
  std::size_t medium_max_;
  std::mutex reg_mu_;
  std::vector<std::unique_ptr<UserEntry>> entries_;  // guarded by reg_mu_
  // Queue behind full rings (slow path): FIFO per destination.
  std::mutex q_mu_;
  std::deque<Queued> queue_;                        // guarded by q_mu_
  std::unique_ptr<std::atomic<uint32_t>[]> queued_;  // per destination
  std::atomic<uint64_t> queued_total_{0};
  // sync_all: epochs are numbered alike on every rank (collective order).
  std::mutex sync_mu_;
  uint64_t sync_epoch_ = 0;                                  // caller of sync_all only
  std::vector<std::pair<uint64_t, uint32_t>> sync_arrived_;  // (epoch, round), guarded
  // A parked sync_all round (keyed in the wait table by &sync_arrived_):
  // still waiting while (epoch, round) has not arrived and `from` is not lost.
  struct SyncWait {
    AmLayer* self;
    uint64_t epoch;
    uint32_t round;
    uint32_t from;
  };
  static bool sync_pending(const void* arg) noexcept;
  RemoteLong remote_long_{*this};  // long AMs to ranks on other nodes
};

// Internal handler ids of this layer (message.hpp's AM range).
inline constexpr uint16_t kHandlerAmSync = core::kHandlerAmFirst + 0;

}  // namespace tsu::am
