// Collectives of a team whose members share this node, through shared
// memory: flags and small data in each member's slot of its layer area
// (coll/node_area.hpp), large data staged there and copied out behind the
// writer, chunk by chunk, and beyond the stage's size read straight out of
// the peers' user buffers by Cross Memory Attach (one copy per byte).
//
//   barrier      every member raises its ready flag and waits for all others'
//   broadcast    the root publishes (data in its slot, or its buffer's
//                address); the others copy once out of it
//   reduce,      small: every member publishes its vector in its slot; each
//   allreduce    reader combines all of them in team-rank order (the same
//                order everywhere: bit-identical results).  Large: member j
//                reduces slice j out of every peer's src, chunk by chunk
//                (the chunk stays in cache between the read and the
//                combine), publishes it, and the others copy the slices
//   gather, allgather, alltoall   one copy of each block, from the peer's slot
//                or its user buffer
//   scatter      (hierarchical alltoall's last phase) each member copies its
//                block once out of the root's slot or buffer
//
// A team's collectives run in the order they were started (as every member
// starts them); each is a small state machine advanced by start() and poll().
// The waits never block: an op records the flag it waits for, poll() checks
// it again, and idle() tells the engine it may sleep when no recorded flag
// changed (the writer wakes a sleeping engine: MemoryAccess::notify_peer).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "coll/node_area.hpp"
#include "coll/scratch_pool.hpp"
#include "tsunagi/tsunagi.h"

namespace tsu::runtime {
class Runtime;
}

namespace tsu::coll {

class NodeColl {
 public:
  // kScatter (not a public collective): the root's src holds a block of
  // `bytes` per member; member j copies block j into its dst.
  enum class Kind : uint8_t { kBarrier, kBroadcast, kReduce, kAllreduce, kGather, kAllgather, kAlltoall, kScatter };
  struct Request {
    Kind kind = Kind::kBarrier;
    const std::byte* src = nullptr;
    std::byte* dst = nullptr;  // broadcast: the buffer
    std::size_t bytes = 0;      // per member block (gather, alltoall) or vector bytes
    std::size_t count = 0;      // reductions: elements
    tsu_dtype_t type = TSU_DT_UINT8;
    tsu_op_t rop = TSU_OP_SUM;
    uint32_t root = 0;
    tsu_cb_t cb{};
  };

  // `area_id`: the collectives' slice of the layer area (area_bytes() of it,
  // reserved at init; runtime/layer_area.hpp).
  NodeColl(runtime::Runtime& rt, uint32_t area_id);
  static std::size_t area_bytes() noexcept;
  ~NodeColl();
  NodeColl(const NodeColl&) = delete;
  NodeColl& operator=(const NodeColl&) = delete;

  // This rank's slots not yet taken (bit k: slot k).
  uint32_t free_slots() const noexcept;
  // A team over `members` (job ranks, all on this node, this rank among them
  // at `me`) in `slot`, which every member chose alike from their free slots.
  // Returns its handle, or -1 where a member's area cannot be mapped (the
  // team then uses messages).  Slots are not reused after free_team: a peer
  // may still be finishing the last collective that used one.
  int32_t add_team(const std::vector<uint32_t>& members, uint32_t me, uint32_t slot,
                   uint64_t ctx) noexcept;
  void free_team(int32_t handle) noexcept;  // no collective of it in flight

  // Starts a collective; runs the callbacks of what completed.
  void start(int32_t handle, const Request& req) noexcept;
  // The empty check inline: every progress pass runs it.
  std::size_t poll() noexcept {
    return pending_.load(std::memory_order_relaxed) ? drive_teams() : 0;
  }
  bool idle() const noexcept;
  // Fails the queued collectives of every team with `rank` in it, and the
  // teams' later ones, with TSU_ERR_PEER_LOST (progress context).
  void on_peer_lost(uint32_t rank) noexcept;
  // TSU_STATS: staged collectives, and how their stores were chosen.
  void print_stats(uint32_t rank) const noexcept;

 private:
  std::size_t drive_teams() noexcept;  // poll() with collectives in flight
  struct Team;
  struct Op;
  // mu_ held: advances `op`; true when complete.
  bool advance(Team& t, Op& op) noexcept;
  bool advance_staged(Team& t, Op& op) noexcept;
  // advance's steps (node_coll_advance.cpp): small data through the slots,
  // large data read out of the peers' buffers.  Each is false while it waits
  // (the wait recorded in op); those of stage 1 set the next stage.
  bool publish_inputs(Team& t, Op& op) noexcept;        // stage 0
  bool read_inputs(Team& t, Op& op) noexcept;           // stage 1, by kind:
  bool read_from_root(Team& t, Op& op) noexcept;        //   broadcast, scatter
  bool reduce_own_slice(Team& t, Op& op) noexcept;      //   large reductions (stage 2 next)
  bool combine_small_inputs(Team& t, Op& op) noexcept;  //   small reductions
  bool read_blocks(Team& t, Op& op) noexcept;           //   gather, allgather, alltoall
  bool copy_reduced_slices(Team& t, Op& op) noexcept;   // stage 2
  // Small inputs: member j's, waiting for them, and this rank's published.
  const std::byte* small_input(Team& t, const Op& op, uint32_t j) noexcept;
  bool wait_small_input(Team& t, Op& op, uint32_t j) noexcept;
  bool wait_small_inputs(Team& t, Op& op) noexcept;  // every peer's
  void put_small(Team& t, Op& op, const std::byte* from, std::size_t len) noexcept;
  // advance_staged's steps (node_coll_staged.cpp), alike.
  bool stage_own_data(Team& t, Op& op) noexcept;       // stage 0
  bool read_stages(Team& t, Op& op) noexcept;          // stage 1, by kind:
  bool copy_staged_blocks(Team& t, Op& op) noexcept;   //   gather, allgather, alltoall
  bool combine_pair_stage(Team& t, Op& op) noexcept;   //   a reduce of two members
  bool reduce_staged_slice(Team& t, Op& op) noexcept;  //   other reductions (stage 2 next)
  bool copy_staged_slices(Team& t, Op& op) noexcept;   // stage 2
  void finish_staged(Team& t, Op& op) noexcept;        // the cost recorded, done said
  bool wait_staged(Team& t, Op& op, uint32_t j, std::size_t bytes) noexcept;
  bool copy_staged(Team& t, Op& op, uint32_t j, std::size_t from, std::byte* to,
                   std::size_t m) noexcept;
  // mu_ held: advances t's queue head(s); moves completed ones to `done`.
  // Callbacks of completed ops, run after mu_ is released (no allocation).
  struct Completed {
    struct Item {
      tsu_cb_t cb;
      tsu_status_t status;
    };
    std::array<Item, 16> items;
    std::size_t count = 0;
  };
  std::size_t drive(Team& t, Completed& done) noexcept;
  // Waits (records the wait) until member j's flag `which` reaches count.
  bool wait_for(Team& t, Op& op, uint32_t j, bool ready, uint64_t count) noexcept;
  bool wait_all(Team& t, Op& op, bool ready, uint64_t count, int64_t only = -1) noexcept;
  // Whether `line` reached count (this team's tag); else records the wait.
  bool wait_line(Team& t, Op& op, const std::atomic<uint64_t>& line, uint64_t count,
                 uint64_t* seen) noexcept;
  void publish(Team& t, bool ready, uint64_t count) noexcept;
  // A flag store: release (readers acquire); seq_cst where engines sleep, so
  // that it is ordered before the notify_peer that follows (the sleeper
  // publishes "asleep", then idle() loads the flag: one of them sees the other).
  // (Two stores, not one with a computed order: GCC compiles an order known
  // only at run time as seq_cst, an xchg that waits for the line's
  // ownership on every flag of the manual-progress path.)
  void store_flag(std::atomic<uint64_t>& line, uint64_t v) const noexcept {
    if (notify_)
      line.store(v, std::memory_order_seq_cst);
    else
      line.store(v, std::memory_order_release);
  }
  tsu_status_t read_peer(Team& t, uint32_t j, uint64_t addr, std::byte* to, std::size_t n) noexcept;
  void reduce_slice(Team& t, Op& op, std::byte* acc) noexcept;
  static void finish(const Completed& done) noexcept;

  runtime::Runtime& rt_;
  const uint32_t area_id_;
  const bool notify_;  // engines may sleep (thread progress): wake them after a store
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Team>> teams_;  // handle = index; null when freed
  node::SlotArea* mine_ = nullptr;            // this rank's slots
  uint32_t used_ = 0;                         // slots taken (never given back)
  std::atomic<uint32_t> pending_{0};          // ops started, not complete (written with mu_ held)
  ScratchPool pool_;                          // mu_
  struct StageStats {  // mu_
    uint64_t staged = 0, streamed = 0, probes = 0, switches = 0;
  } stage_stats_;
  static constexpr std::size_t kKeptOps = 64;
  std::vector<std::unique_ptr<Op>> free_ops_;  // mu_: finished ops, reused
};

}  // namespace tsu::coll
