// Collectives and teams over the AM layer's send path.  Every collective is a
// schedule: a list of steps, each with sends (issued when the step starts),
// receives (filled as fragments arrive) and a local action (combine, copy)
// run when its receives are complete.  Messages name (team context, op
// sequence, round, source); messages that arrive before their op or step has
// started wait in a stash.  One mutex guards the layer's state (collectives
// are not the small-message fast path); callbacks run outside it.
//
// Allreduce picks its algorithm by size and team (same choice on every
// member): recursive doubling for small data; above TSU_COLL_LARGE_MIN
// reduce-scatter + allgather by recursive halving/doubling
// (allreduce_halving.cpp).  (A direct allreduce by Cross Memory Attach for
// teams on one node measured slower and was deleted: docs/design-decisions.md,
// "Deleted switches".)
//
// A team whose members all share this node (and that got a slot in their
// layer areas) runs every collective through shared memory instead
// (node_coll.hpp): no messages at all.  A team spread over several nodes,
// some with more than one member, runs barrier, broadcast, reduce and
// allreduce, gather, allgather and alltoall hierarchically (hierarchy.cpp):
// a node phase through shared memory, the inter-node algorithm among one
// leader per node over messages, and a node phase again.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "coll/node_coll.hpp"
#include "coll/scratch_pool.hpp"
#include "core/message.hpp"
#include "tsunagi/tsunagi.h"

namespace tsu::runtime {
class Runtime;
}
namespace tsu::am {
class AmLayer;
}

namespace tsu::coll {

struct HierOp;  // hierarchy.cpp
enum class HierKind : uint8_t;  // hierarchy.hpp

inline constexpr uint16_t kHandlerCollData = core::kHandlerCollFirst + 0;

// Message rounds (see CollLayer::Send): small numbers are algorithm steps
// (distance, mask, dissemination round); the tagged ranges below keep the
// phases of one allreduce apart.
inline constexpr uint32_t kRoundFoldIn = 1u << 30;        // extra rank -> partner
inline constexpr uint32_t kRoundFoldOut = (1u << 30) + 1;  // partner -> extra rank
inline constexpr uint32_t kRoundHalvingReduce = 1u << 29;  // | mask
inline constexpr uint32_t kRoundHalvingGather = 1u << 28;  // | mask

class CollLayer {
 public:
  // `area_id`: the slice of the layer area reserved for area_bytes() at init
  // (runtime/layer_area.hpp), where node teams keep their shared slots.
  CollLayer(runtime::Runtime& rt, am::AmLayer& am, uint32_t area_id);
  static std::size_t area_bytes() noexcept { return NodeColl::area_bytes(); }
  ~CollLayer();
  CollLayer(const CollLayer&) = delete;
  CollLayer& operator=(const CollLayer&) = delete;

  tsu_status_t split(tsu_team_t parent, int32_t color, uint32_t key, tsu_team_t& out) noexcept;
  tsu_status_t free_team(tsu_team_t team) noexcept;
  tsu_status_t team_info(tsu_team_t team, uint32_t* rank, uint32_t* size) noexcept;
  tsu_status_t team_job_rank(tsu_team_t team, uint32_t team_rank, uint32_t& out) noexcept;

  tsu_status_t barrier(tsu_team_t team, const tsu_cb_t& cb) noexcept;
  tsu_status_t broadcast(tsu_team_t team, void* buf, std::size_t bytes, uint32_t root,
                         const tsu_cb_t& cb) noexcept;
  tsu_status_t reduce(const char* fn, tsu_team_t team, const void* src, void* dst,
                      std::size_t count, tsu_dtype_t type, tsu_op_t op, int64_t root,
                      const tsu_cb_t& cb) noexcept;  // root -1: allreduce
  tsu_status_t gather(const char* fn, tsu_team_t team, const void* src, void* dst,
                      std::size_t bytes, int64_t root, const tsu_cb_t& cb) noexcept;  // -1: all
  tsu_status_t alltoall(tsu_team_t team, const void* src, void* dst, std::size_t bytes,
                        const tsu_cb_t& cb) noexcept;
  // Not a public collective: the root's src holds one block of `bytes` per
  // member, member j gets block j in dst (the last phase of a hierarchical
  // alltoall).
  tsu_status_t scatter(tsu_team_t team, const void* src, void* dst, std::size_t bytes,
                       uint32_t root, const tsu_cb_t& cb) noexcept;

  // `rank` is gone (progress context): collectives on teams that include it
  // complete with TSU_ERR_PEER_LOST, now and when started later.
  void on_peer_lost(uint32_t rank) noexcept;

  // The node teams' collectives (progress context or any thread).
  std::size_t poll() noexcept { return node_.poll(); }
  bool idle() const noexcept { return node_.idle(); }
  void print_stats(uint32_t rank) const noexcept { node_.print_stats(rank); }

 private:
  struct Team {
    uint64_t ctx;                  // same on every member
    std::vector<uint32_t> members;  // job ranks by team rank
    uint32_t me;                   // my team rank
    uint64_t next_seq = 0;         // collectives started on this team
    uint64_t splits = 0;           // splits of this team (context derivation)
    bool one_node = false;         // every member on this rank's node (CMA reaches them)
    int32_t node = -1;             // NodeColl handle: collectives through shared memory
    // Hierarchy (hierarchy.cpp), for a team spread over nodes: this rank's
    // node members of the team (team-rank order: its first one leads), the
    // leaders (one per node, leaders only), and per team rank: its node's
    // leader's rank among the leaders and its own rank in its node's team.
    bool hier = false;
    tsu_team_t node_team = TSU_TEAM_NULL, leaders = TSU_TEAM_NULL;
    std::vector<uint32_t> leader_of, local_of;
    // Per node (leader index): its members' team ranks in node-team order;
    // the largest node's size (leaders exchange blocks padded to it).
    std::vector<std::vector<uint32_t>> node_ranks;
    uint32_t max_local = 0;
    bool hier_busy = false;                      // mu_: a hierarchical op runs
    std::deque<HierOp*> hier_waiting;     // mu_: started after it, in order
  };
  // Messages are matched by (source, round): the round is chosen by the
  // algorithm so that sender and receiver agree on it (their step indices
  // may differ, e.g. ranks that fold in before recursive doubling).
  struct Send {
    uint32_t dst;  // team rank
    const std::byte* data;
    std::size_t len;
    uint32_t round;
  };
  struct Recv {
    uint32_t src;  // team rank
    std::byte* buf;
    std::size_t len;
    uint32_t round;
    std::size_t got = 0;
    bool any = false;  // a message arrived (zero-length receives)
    bool watched = false;  // holds a PeerLoss::watch_peer on src (end_watch ends it)
  };
  struct Step {
    std::vector<Send> sends;
    std::vector<Recv> recvs;
    std::function<void()> post;
  };
  struct Op {
    Team* team = nullptr;
    const char* name = "collective";  // the C entry point (timeline)
    uint64_t seq = 0;
    std::vector<Step> steps;
    std::size_t cur = 0;
    bool started = false;
    tsu_cb_t cb{};
    tsu_status_t status = TSU_OK;      // first local failure (the callback's status)
    ScratchBuffer tmp, tmp2;           // op-owned buffers (sized before steps are built)
    std::vector<tsu_status_t> heard;   // statuses received by a status-carrying barrier
    std::function<void()> finish;      // after the last step
  };
  using OpKey = std::pair<uint64_t, uint64_t>;                    // ctx, seq
  using StashKey = std::tuple<uint64_t, uint64_t, uint32_t, uint32_t>;  // ctx, seq, round, src
  struct Stash {
    ScratchBuffer data;
    std::size_t got = 0;
  };

  static void on_data(void* ctx, uint32_t src, const core::MessageHeader& h,
                      const std::byte* payload) noexcept;
  Team* team(tsu_team_t t) noexcept;  // mu_ held or setup
  // mu_ held: hands a finished op's buffers back to the pool.
  void retire(Op& op) noexcept;
  // Starts `op` (assigns its sequence number); runs callbacks of what completed.
  tsu_status_t start(std::unique_ptr<Op> op) noexcept;
  // mu_ held: runs steps while their receives are complete; true when done.
  bool advance(Op& op) noexcept;
  void send_data(Op& op, const Send& s) noexcept;
  // mu_ held: ends r's watch on its member, if it holds one (once per Recv).
  void end_watch(const Op& op, Recv& r) noexcept;
  // mu_ held: ends the watches of the op's current step (the op ends).
  void end_watches(Op& op) noexcept;
  bool on_one_node(const std::vector<uint32_t>& members) const noexcept;
  // Allreduce schedules (acc: this rank's dst, already holding its src).
  void build_allreduce_doubling(Op& op, std::byte* acc, std::byte* in, std::size_t count,
                                tsu_dtype_t type, tsu_op_t rop) noexcept;
  void build_allreduce_halving(Op& op, std::byte* acc, std::byte* in, std::size_t count,
                               tsu_dtype_t type, tsu_op_t rop) noexcept;
  // Non-power-of-two teams: the first 2*rem ranks pair up; the even one of
  // each pair hands its vector to the odd one (fold in) and gets the result
  // back at the end (fold out).  Sets p2 (the largest power of two <= size);
  // returns this rank's index among the p2 survivors, or -1 if folded away.
  static int64_t add_fold_in(Op& op, std::byte* acc, std::byte* in, std::size_t count,
                             tsu_dtype_t type, tsu_op_t rop, uint32_t& p2) noexcept;
  static void add_fold_out(Op& op, std::byte* acc, std::size_t bytes, uint32_t p2) noexcept;
  // Team rank of survivor `index` (see add_fold_in).
  static uint32_t survivor_rank(uint32_t index, uint32_t n, uint32_t p2) noexcept {
    const uint32_t rem = n - p2;
    return index < rem ? index * 2 + 1 : index + rem;
  }
  // Appends a dissemination barrier over op's team (rounds first_round + k).
  // carry_status: each message carries the sender's op status, so that a
  // failure anywhere becomes every member's callback status.
  static void add_barrier_steps(Op& op, uint32_t first_round, bool carry_status = false) noexcept;
  tsu_status_t wait_blocking(const std::function<tsu_status_t(tsu_cb_t)>& start_fn) noexcept;
  bool has_lost_member(const Team& t) const noexcept;  // mu_ held
  // Hierarchy (hierarchy.cpp).  mu_ held: gives team `t` (spread over
  // nodes) its node and leaders teams; node_slot: the NodeColl slot for the
  // node team (every member of this node chose it alike), or -1.
  void setup_hierarchy(Team& t, int32_t node_slot) noexcept;
  tsu_status_t start_hier(HierOp* h) noexcept;  // takes ownership
  void hier_step(HierOp* h) noexcept;
  // hier_step's steps.  hier_start starts h's current step where it applies
  // to this rank (true: started, its status in st), through the kind's own.
  struct HierPlace;
  HierPlace hier_place(HierOp* h) noexcept;  // takes mu_
  bool hier_start(HierOp* h, const HierPlace& at, tsu_status_t& st) noexcept;
  bool hier_barrier(HierOp* h, const HierPlace& at, tsu_status_t& st) noexcept;
  bool hier_allreduce(HierOp* h, const HierPlace& at, tsu_status_t& st) noexcept;
  bool hier_broadcast(HierOp* h, const HierPlace& at, tsu_status_t& st) noexcept;
  bool hier_reduce(HierOp* h, const HierPlace& at, tsu_status_t& st) noexcept;
  bool hier_gather(HierOp* h, const HierPlace& at, tsu_status_t& st) noexcept;  // and allgather
  bool hier_alltoall(HierOp* h, const HierPlace& at, tsu_status_t& st) noexcept;
  void hier_finish(HierOp* h) noexcept;  // h's callback, then the team's next op
  static void hier_done_step(tsu_status_t st, void* arg) noexcept;
  // The team's NodeColl handle (-1: not a node team; -2: no such team), its size
  // and this rank's place in it.
  // hier: the team runs barrier/broadcast/reduce/allreduce hierarchically.
  int32_t node_handle(tsu_team_t t, uint32_t& n, uint32_t& me, bool* hier = nullptr) noexcept;
  // The shared-memory routes of a collective described by `req`: the
  // hierarchy (HierOp of `hier_kind`) when the team spans nodes, the node's
  // shared area when it is on this node.  usable(team size, my place) says
  // whether they may take it.  True when one did (its status in `st`);
  // false: the message algorithms run it.
  template <typename Usable>
  bool shared_path(const char* fn, tsu_team_t team, HierKind hier_kind, const NodeColl::Request& req,
                   Usable&& usable, tsu_status_t& st) noexcept;

  runtime::Runtime& rt_;
  am::AmLayer& am_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Team>> teams_;      // handle = index; null when freed
  std::map<OpKey, std::unique_ptr<Op>> active_;   // mu_
  std::map<StashKey, Stash> stash_;               // mu_
  ScratchPool pool_;                              // mu_
  std::vector<uint32_t> lost_;                    // mu_: ranks declared lost
  NodeColl node_;
};

}  // namespace tsu::coll
