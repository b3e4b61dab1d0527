// Threads across ranks (seed 003): spawn by function id, exit values sent
// back to the creator, batching per destination, load exchange and work
// requests between ranks, and termination at finalize.  Uses only the public
// API: active messages carry spawns, exit values and load counts; a tagged
// receive posted towards each rank we wait on reports that rank's loss.
#pragma once

#include <array>
#include <atomic>
#include <deque>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "settings.hpp"
#include "spinlock.hpp"
#include "thread.hpp"
#include "tsunagi/ult.h"

namespace tsu::ult {

class Scheduler;
class Worker;
struct CreateArgs;   // scheduler.hpp
struct SpawnRecord;  // remote_internal.hpp

// A spawned thread's details, kept by its creator (in the handle, a "proxy"
// record that never runs) and by its runner (in the running record).
struct RemoteInfo {
  uint64_t token = 0;         // the creator's key of the proxy (0: none)
  uint32_t creator = 0;       // creating rank
  std::atomic<uint32_t> runner{0};  // running rank (as the creator knows it; moves)
  uint32_t fn_id = 0;
  uint32_t stack_size = 0;    // the thread's stack (bytes; 0: the running rank's default)
  bool detached = false;
  bool migratable = false;    // the balancer may move it ("any", or attr->migratable)
  bool home = false;          // spawned here for here: the running record is the handle
  uint16_t arg_len = 0;
  uint16_t value_len = 0;
  // One buffer: the argument until the function has returned, then the exit
  // value (the function writes it into a buffer of its own, run_spawned's).
  // A proxy's record holds only the value: the argument goes to the batch
  // from the caller's buffer (or a copy taken before the proxy is
  // published), so no read of it can race with the value's arrival.
  union {
    unsigned char arg[TSU_ULT_ARG_MAX];
    unsigned char value[TSU_ULT_VALUE_MAX];
  };
};


// The proxies of our spawns that wait for their exit value, by token: a
// slot table (no allocation per spawn once it has grown to the peak number
// outstanding).  A token is generation << 32 | slot; a slot is reused once
// its proxy is taken out, under the next generation (never 0), so a late or
// repeated value for an old token finds another generation and is ignored;
// token 0 is never given.  Not thread-safe: the owner's lock guards it.
class ProxyTable {
 public:
  // The proxy's token, or 0 when out of memory.
  uint64_t insert(Ult* p) noexcept;
  Ult* find(uint64_t token) const noexcept;
  // Takes the proxy out (nullptr: unknown, or taken already).
  Ult* take(uint64_t token) noexcept;
  template <typename F>
  void for_each(F&& f) const {
    for (uint32_t i = 0; i < slots_.size(); ++i)
      if (slots_[i].proxy) f(token_of(i), slots_[i].proxy);
  }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  struct Slot {
    Ult* proxy = nullptr;
    uint32_t gen = 1;
    uint32_t next_free = kNone;
  };
  uint64_t token_of(uint32_t i) const noexcept { return uint64_t{slots_[i].gen} << 32 | i; }
  std::vector<Slot> slots_;
  uint32_t free_ = kNone;  // free slots: a stack through Slot::next_free
};

// TSU_ULT_LB, TSU_ULT_LB_PERIOD (e.g. 500us, 2ms), TSU_ULT_LB_THRESHOLD.
bool load_lb_settings(LbSettings& out, const char*& error) noexcept;

class Remote {
 public:
  Remote(Scheduler& s, uint32_t rank, uint32_t size, const LbSettings& lb);
  ~Remote();
  // Collective: registers the layer's handlers.
  tsu_status_t start();
  // attr: what read_attr made of the caller's tsu_ult_attr_t (fn, arg unused).
  tsu_status_t spawn(tsu_ult_t* out, uint32_t rank, uint32_t fn_id, const void* arg,
                     std::size_t len, const CreateArgs& attr);
  // The scheduler's pass: sends batched messages, exchanges load, asks for
  // work when idle, drives progress when idle.  Any worker, any time; does
  // nothing once closed.
  void poll(Worker& w, bool idle) noexcept;
  // tsu_finalize's hook (tsu_add_finalize_hook): the workers stop calling
  // tsunagi, and joins of threads elsewhere fail with TSU_ERR_NOT_INITIALIZED.
  static void on_tsunagi_finalize(void* remote) noexcept;
  bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }
  bool has_outgoing() const noexcept {
    return outgoing_.load(std::memory_order_acquire) != 0 ||
           has_orphans_.load(std::memory_order_relaxed);
  }
  // Sends every batch that can leave now; true when nothing is left.
  bool flush() noexcept;
  // Collective: returns when no surviving rank has spawned threads or
  // messages left (copes with ranks lost before or during it).
  tsu_status_t finish();
  uint64_t migrated() const noexcept { return migrated_.load(std::memory_order_relaxed); }
  uint32_t rank() const noexcept { return rank_; }

  static tsu_status_t register_fn(uint32_t id, tsu_ult_remote_fn_t fn);
  static void* run_spawned(void* ult_record);

 private:
  // One message's worth of records (at most batch_max() bytes).
  struct Chunk {
    std::vector<unsigned char> data;  // records, each 8-aligned
    uint32_t count = 0;
  };
  // What waits to leave for one rank: chunks of spawn records and of exit
  // value records, oldest first (a chunk that could not leave stays first).
  struct Batch {
    std::mutex mu;
    std::deque<Chunk> spawns;  // guarded by mu
    std::deque<Chunk> values;  // guarded by mu
    // Buffers of chunks that left, kept for the next ones (their capacity:
    // no malloc and regrowth per message), guarded by mu.
    std::vector<std::vector<unsigned char>> spare;
    bool empty() const noexcept { return spawns.empty() && values.empty(); }
  };
  struct Watch {
    std::atomic<int> state{0};  // 0 none, 1 posted, 2 completed
    tsu_recv_t handle = 0;
    tsu_msg_status_t status{};
    Remote* self = nullptr;
    uint32_t peer = 0;
  };
  // Termination (finish): one rank's report for one round, sent when it
  // runs nothing and has nothing to send: how many layer messages it sent
  // to and handled from each rank (low 32 bits; compared for equality only).
  struct Report {
    uint32_t round = 0;  // 0: none
    std::vector<uint32_t> sent, handled;
  };
  static constexpr uint32_t kReportSlots = 4;  // rounds k-1, k, k+1 are ever needed
  friend struct Handlers;

  void count_sent(uint32_t dst) noexcept { sent_to_[dst].fetch_add(1, std::memory_order_relaxed); }
  void count_handled(uint32_t src) noexcept {
    handled_from_[src].fetch_add(1, std::memory_order_relaxed);
  }
  tsu_status_t finish_by_allreduce();  // jobs too large for the reports (no loss tolerance)
  bool store_report(uint32_t src, uint32_t round, const uint32_t* sent, const uint32_t* handled,
                    uint32_t n) noexcept;
  bool have_reports(uint32_t round) noexcept;
  bool terminated(uint32_t round) noexcept;
  bool send_to_survivors(uint32_t am, const uint64_t* args, uint32_t nargs, const void* payload,
                         std::size_t len) noexcept;

  // The record's fields and `arg` (info.arg_len bytes) into dst's batch.
  void queue_spawn(uint32_t dst, const RemoteInfo& info, const void* arg,
                   bool flush_now) noexcept;
  // A prepared record (give_work): leaves when full or at the next pass.
  void queue_spawn(uint32_t dst, const SpawnRecord& rec, const void* arg) noexcept;
  // flush_now: the batch leaves at once (else when full or at the next pass).
  void queue_value(uint32_t dst, uint64_t token, tsu_status_t st, const void* v,
                   std::size_t len, bool flush_now = false, uint16_t flags = 0) noexcept;
  // Appends one record (header + body) to the chunks (under b.mu).
  void append(Batch& b, std::deque<Chunk>& q, const void* head, std::size_t head_len,
              const void* body, std::size_t body_len) noexcept;
  // Sends the chunks of one kind, oldest first (under b.mu); false when one
  // had to stay (queue full).
  bool send_chunks(uint32_t dst, Batch& b, bool spawns) noexcept;
  // A chunk of spawns to dst that cannot leave: their joiners get `st`
  // (ours at once; creators elsewhere by a value record, see orphans_).
  void fail_chunk(uint32_t dst, const Chunk& spawns, tsu_status_t st) noexcept;
  // Fails every spawn chunk waiting for dst (under b.mu).
  void fail_spawns(uint32_t dst, Batch& b, tsu_status_t st) noexcept;
  // A creator's proxy learns that its thread moved to `runner`.
  void proxy_moved(uint64_t token, uint32_t runner) noexcept;
  // After a proxy's runner was set (under proxies_lock_): watch it, and end
  // the proxies on it if it is lost already.
  void follow_runner(uint32_t runner) noexcept;
  void watch(uint32_t peer) noexcept;
  void on_peer_lost(uint32_t peer) noexcept;
  void complete_proxy(uint64_t token, tsu_status_t st, const void* v, std::size_t len) noexcept;
  // Runs a spawned thread here: `home` for our own spawns (the record is the
  // handle), else for a creator elsewhere (or our own thread coming back).
  void start_local(RemoteInfo* info, bool home, const char* name, Ult** out) noexcept;
  void poll_open(bool idle) noexcept;  // poll's body
  void close() noexcept;
  uint32_t pick_any() noexcept;
  uint32_t runnable() const noexcept;
  void give_work(uint32_t thief, uint32_t max) noexcept;

  Scheduler& sched_;
  const uint32_t rank_, size_;
  const LbSettings lb_;
  std::vector<std::unique_ptr<Batch>> out_;
  std::atomic<uint32_t> outgoing_{0};  // batches with data (a hint for poll)
  // Errors for creators elsewhere of threads whose hand-over failed
  // (fail_chunk), queued to them by flush().
  struct Orphan {
    uint64_t token;
    uint32_t creator;
    tsu_status_t status;
  };
  std::mutex orphans_mu_;
  std::vector<Orphan> orphans_;  // guarded by orphans_mu_
  std::atomic<bool> has_orphans_{false};
  Spinlock proxies_lock_;
  ProxyTable proxies_;  // guarded by proxies_lock_
  std::vector<std::unique_ptr<Watch>> watches_;
  std::vector<std::atomic<uint32_t>> load_;      // last count each rank sent
  std::vector<std::atomic<bool>> lost_;
  // Layer messages sent to / handled from each rank (termination counts).
  std::unique_ptr<std::atomic<uint32_t>[]> sent_to_, handled_from_;
  std::mutex reports_mu_;
  std::vector<std::array<Report, kReportSlots>> reports_;  // [rank][round % slots], guarded
  std::atomic<bool> terminated_{false};  // a rank decided: every survivor is done
  std::atomic<uint64_t> migrated_{0};
  std::atomic<uint64_t> last_lb_ns_{0};
  std::atomic<uint32_t> last_sent_load_{0};
  std::atomic<bool> asking_{false};  // a work request is out
  // Closing (tsu_finalize's hook) against the layer's own tsunagi calls
  // (the workers' passes, batches sent from a ULT), Dekker-style: a caller
  // counts itself in (Gate), then reads closed_; close() sets closed_, then
  // waits for the count to drain (all seq_cst).  So every such call either
  // sees closed_ and is not made, or close() waits for it to end.
  std::atomic<bool> closed_{false};
  std::atomic<uint32_t> in_calls_{0};
  class Gate {
   public:
    explicit Gate(Remote& r) noexcept : r_(r) {
      // Once closed, not counted at all: idle workers pass here all the
      // time, and counting them would keep close() from seeing 0.
      if (r_.closed_.load(std::memory_order_acquire)) return;
      r_.in_calls_.fetch_add(1, std::memory_order_seq_cst);
      counted_ = true;
      open_ = !r_.closed_.load(std::memory_order_seq_cst);
    }
    ~Gate() {
      if (counted_) r_.in_calls_.fetch_sub(1, std::memory_order_seq_cst);
    }
    Gate(const Gate&) = delete;
    Gate& operator=(const Gate&) = delete;
    explicit operator bool() const noexcept { return open_; }

   private:
    Remote& r_;
    bool counted_ = false;
    bool open_ = false;
  };
  std::atomic<uint64_t> asked_ns_{0};
};

}  // namespace tsu::ult
