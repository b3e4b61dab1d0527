// Collectives of a team spread over several nodes, by hierarchy: a phase
// inside each node (the node team: NodeColl through shared memory), one
// among the node leaders (over messages), a phase inside each node again.
//
//   barrier     node reduce of nothing to the leader; leaders' barrier;
//               node broadcast of nothing from the leader
//   allreduce   node reduce to the leader; leaders' allreduce (in place);
//               node broadcast from the leader (every member gets the
//               leaders' result: bit-identical everywhere)
//   broadcast   on the root's node, node broadcast from the root; leaders'
//               broadcast from the root's leader; node broadcast from the
//               leader on the other nodes
//   reduce      node reduce to the leader; leaders' reduce to the root's
//               leader; on the root's node, node broadcast from the leader
//               when the root does not lead
//   gather      node gather to the leader; leaders' gather to the root's
//               leader; it puts the blocks in team-rank order, and node
//               broadcasts them when the root does not lead
//   allgather   node gather to the leader; leaders' allgather; each leader
//               puts the blocks in team-rank order in its dst; node broadcast
//   alltoall    node gather of whole src vectors to the leader; the leader
//               packs, per other node, the blocks its members send to that
//               node's members; leaders' alltoall; the leader sorts what came
//               per member of its node; node scatter
// Leaders exchange blocks padded to the largest node's size (nodes may hold
// different numbers of members; the collectives' blocks are equal): a
// node's part of a gathered vector is max_local blocks, of an alltoall
// max_local^2 blocks.
//
// Failures: after the leaders' phase (step 1) each node leader broadcasts its
// status to the members that take part in the last phase (step 2); step 3,
// the data phase of the list above, runs only when that status is TSU_OK, so
// a lost node or a failed leaders' collective fails the op on every member of
// the node instead of handing its non-leaders stale data with TSU_OK.  The
// barrier's closing broadcast carries the status itself (no extra step).
//
// The steps are collectives of the node and leaders teams, each started from
// the previous one's callback.  A team's hierarchical collectives run one at
// a time, in the order they were started (the node and leaders teams then
// see their collectives in the same order on every member).
#include <algorithm>
#include <map>
#include <cstring>

#include "coll/hierarchy.hpp"
#include "coll/reduce_ops.hpp"
#include "core/log.hpp"
#include "runtime/progress_engine.hpp"
#include "runtime/runtime.hpp"

namespace tsu::coll {

namespace {
uint64_t mix(uint64_t x) noexcept {  // splitmix64 finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Whether the members of this rank's node take part in the data phase after
// the leaders' phase (and so need the leader's status first).  Depends only
// on what is the same on every member of a node.
bool status_reaches_node(HierKind kind, bool root_here, uint32_t root_local) noexcept {
  switch (kind) {
    case HierKind::kBarrier:
    case HierKind::kAllreduce:
    case HierKind::kAllgather:
    case HierKind::kAlltoall: return true;
    case HierKind::kBroadcast: return !root_here;
    case HierKind::kReduce:
    case HierKind::kGather: return root_here && root_local != 0;
  }
  return true;
}
}  // namespace

void CollLayer::setup_hierarchy(Team& t, int32_t node_slot) noexcept {
  try {
    const uint32_t n = static_cast<uint32_t>(t.members.size());
    const uint32_t my_node = rt_.node_of(rt_.rank());
    std::vector<uint32_t> node_members, leader_ranks, leader_node;
    t.leader_of.assign(n, 0);
    t.local_of.assign(n, 0);
    std::map<uint32_t, uint32_t> seen;  // node -> members so far
    bool shared = false;                // some node holds two members or more
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t nd = rt_.node_of(t.members[i]);
      auto [it, fresh] = seen.try_emplace(nd, 0);
      if (fresh) {
        leader_node.push_back(nd);
        leader_ranks.push_back(t.members[i]);
      }
      t.local_of[i] = it->second++;
      shared |= it->second > 1;
      t.leader_of[i] = static_cast<uint32_t>(
          std::find(leader_node.begin(), leader_node.end(), nd) - leader_node.begin());
      if (nd == my_node) node_members.push_back(t.members[i]);
      if (t.node_ranks.size() <= t.leader_of[i]) t.node_ranks.resize(t.leader_of[i] + 1);
      t.node_ranks[t.leader_of[i]].push_back(i);
      t.max_local = std::max<uint32_t>(t.max_local, it->second);
    }
    if (!shared || leader_ranks.size() < 2) return;
    auto sub = [&](const std::vector<uint32_t>& members, uint64_t ctx) {
      auto s = std::make_unique<Team>();
      s->ctx = ctx;
      s->members = members;
      s->me = static_cast<uint32_t>(
          std::find(members.begin(), members.end(), rt_.rank()) - members.begin());
      s->one_node = on_one_node(members);
      teams_.push_back(std::move(s));
      return static_cast<tsu_team_t>(teams_.size() - 1);
    };
    t.node_team = sub(node_members, mix(t.ctx ^ 0x6e6f6465ull) ^ my_node);
    Team& nt = *teams_[t.node_team];
    if (nt.one_node && node_members.size() > 1 && node_slot >= 0)
      nt.node = node_.add_team(nt.members, nt.me, static_cast<uint32_t>(node_slot), nt.ctx);
    if (t.members[t.me] == leader_ranks[t.leader_of[t.me]])
      t.leaders = sub(leader_ranks, mix(t.ctx ^ 0x6c656164ull));
    t.hier = true;
    TSU_LOG_DEBUG("collectives: team ctx %llx is hierarchical: %zu nodes, %zu members here%s",
                  static_cast<unsigned long long>(t.ctx), leader_ranks.size(), node_members.size(),
                  nt.node >= 0 ? " (shared memory)" : "");
  } catch (const std::bad_alloc&) {
    TSU_LOG_WARN("collectives: no memory for a team's hierarchy; it stays flat");
  }
}

tsu_status_t CollLayer::start_hier(HierOp* h) noexcept {
  {
    std::lock_guard lock(mu_);
    Team* t = team(h->team);
    if (t->hier_busy) {
      t->hier_waiting.push_back(h);
      return TSU_OK;
    }
    t->hier_busy = true;
  }
  hier_step(h);
  return TSU_OK;
}

void CollLayer::hier_done_step(tsu_status_t st, void* arg) noexcept {
  auto* h = static_cast<HierOp*>(arg);
  if (st != TSU_OK && h->status == TSU_OK) h->status = st;
  ++h->step;
  h->layer->hier_step(h);
}

// Where this rank stands in h's hierarchy: what every step of hier_step reads.
struct CollLayer::HierPlace {
  tsu_team_t node_team = 0, leaders = 0;
  bool leader = false, root_here = false, me_root = false;
  uint32_t root_local = 0, root_leader = 0, my_leader = 0;
  const Team* tp = nullptr;  // its hierarchy fields do not change after setup
  std::size_t n = 0, nodes = 0, pad = 0, here = 0, b = 0;
  tsu_cb_t next{};
};

CollLayer::HierPlace CollLayer::hier_place(HierOp* h) noexcept {
  HierPlace at;
  {
    std::lock_guard lock(mu_);
    Team& t = *team(h->team);
    at.tp = &t;
    at.node_team = t.node_team;
    at.leaders = t.leaders;
    at.leader = at.leaders != TSU_TEAM_NULL;
    at.my_leader = t.leader_of[t.me];
    at.root_leader = t.leader_of[h->root];
    at.root_here = at.root_leader == at.my_leader;
    at.root_local = t.local_of[h->root];
    at.me_root = t.me == h->root;
    // Reduce: a buffer for the node's partial result where there is no dst
    // (a leader that is not the root; the root's node when the root does
    // not lead).
    if (h->kind == HierKind::kReduce && h->step == 0 && !at.me_root && (at.leader || at.root_here))
      h->tmp.resize(h->bytes);
  }
  const Team* tp = at.tp;
  at.n = tp->members.size();
  at.nodes = tp->node_ranks.size();
  at.pad = tp->max_local;
  at.here = tp->node_ranks[at.my_leader].size();
  at.b = h->bytes;
  at.next = tsu_cb(&CollLayer::hier_done_step, h);
  return at;
}

// Starts h's next step that applies to this rank (its callback comes back
// here), or completes h and starts the team's next hierarchical op.
void CollLayer::hier_step(HierOp* h) noexcept {
  const HierPlace at = hier_place(h);
  for (;;) {
    tsu_status_t st = TSU_OK;
    if (hier_start(h, at, st)) {
      if (st == TSU_OK) return;  // the callback continues
      if (h->status == TSU_OK) h->status = st;
    }
    if (h->step >= 3) break;
    ++h->step;
  }
  hier_finish(h);
}

bool CollLayer::hier_start(HierOp* h, const HierPlace& at, tsu_status_t& st) noexcept {
  // Step 2: the leader's status to the members of its node that take part
  // in step 3 (the predicate is the same on every member of a node).
  if (h->step == 2) {
    if (at.leader) h->node_status = h->status;
    if (!status_reaches_node(h->kind, at.root_here, at.root_local)) return false;
    st = broadcast(at.node_team, &h->node_status, sizeof h->node_status, 0, at.next);
    return true;
  }
  if (h->step == 3 && h->node_status != TSU_OK) {
    // The leaders' phase failed: no data phase anywhere on this node.
    if (h->status == TSU_OK) h->status = h->node_status;
    return false;
  }
  switch (h->kind) {
    case HierKind::kBarrier: return hier_barrier(h, at, st);
    case HierKind::kAllreduce: return hier_allreduce(h, at, st);
    case HierKind::kBroadcast: return hier_broadcast(h, at, st);
    case HierKind::kReduce: return hier_reduce(h, at, st);
    case HierKind::kGather:
    case HierKind::kAllgather: return hier_gather(h, at, st);
    case HierKind::kAlltoall: return hier_alltoall(h, at, st);
  }
  return false;
}

bool CollLayer::hier_barrier(HierOp* h, const HierPlace& at, tsu_status_t& st) noexcept {
  if (h->step == 0) {
    st = reduce("tsu_try_barrier", at.node_team, nullptr, nullptr, 0, TSU_DT_UINT8, TSU_OP_SUM, 0,
                at.next);
    return true;
  }
  if (h->step == 1 && at.leader) {
    st = barrier(at.leaders, at.next);
    return true;
  }
  return false;
}

bool CollLayer::hier_allreduce(HierOp* h, const HierPlace& at, tsu_status_t& st) noexcept {
  if (h->step == 0) {
    st = reduce("tsu_try_allreduce", at.node_team, h->src, at.leader ? h->dst : nullptr, h->count,
                h->type, h->rop, 0, at.next);
    return true;
  }
  if (h->step == 1 && at.leader) {
    st = reduce("tsu_try_allreduce", at.leaders, h->dst, h->dst, h->count, h->type, h->rop, -1,
                at.next);
    return true;
  }
  if (h->step == 3) {
    st = broadcast(at.node_team, h->dst, h->bytes, 0, at.next);
    return true;
  }
  return false;
}

bool CollLayer::hier_broadcast(HierOp* h, const HierPlace& at, tsu_status_t& st) noexcept {
  if (h->step == 0 && at.root_here) {
    st = broadcast(at.node_team, h->dst, h->bytes, at.root_local, at.next);
    return true;
  }
  if (h->step == 1 && at.leader) {
    st = broadcast(at.leaders, h->dst, h->bytes, at.root_leader, at.next);
    return true;
  }
  if (h->step == 3 && !at.root_here) {
    st = broadcast(at.node_team, h->dst, h->bytes, 0, at.next);
    return true;
  }
  return false;
}

bool CollLayer::hier_reduce(HierOp* h, const HierPlace& at, tsu_status_t& st) noexcept {
  // The node's partial result: the root's dst where it leads, else tmp.
  std::byte* acc = at.me_root ? h->dst : h->tmp.data();
  if (h->step == 0) {
    st = reduce("tsu_try_reduce", at.node_team, h->src, at.leader ? acc : nullptr, h->count,
                h->type, h->rop, 0, at.next);
    return true;
  }
  if (h->step == 1 && at.leader) {
    st = reduce("tsu_try_reduce", at.leaders, acc, acc, h->count, h->type, h->rop, at.root_leader,
                at.next);
    return true;
  }
  if (h->step == 3 && at.root_here && at.root_local != 0) {
    st = broadcast(at.node_team, acc, h->bytes, 0, at.next);
    return true;
  }
  return false;
}

bool CollLayer::hier_gather(HierOp* h, const HierPlace& at, tsu_status_t& st) noexcept {
  const std::size_t n = at.n, nodes = at.nodes, pad = at.pad, b = at.b;
  const bool leader = at.leader;
  const bool all = h->kind == HierKind::kAllgather;
  const bool gets = all || at.root_here;  // this node gets the gathered vector
  if (h->step == 0) {
    if (leader) h->tmp.resize(pad * b);  // this node's blocks, padded
    st = gather("tsu_try_gather", at.node_team, h->src, leader ? h->tmp.data() : nullptr, b, 0,
                at.next);
    return true;
  }
  if (h->step == 1 && leader) {
    if (gets) h->in.resize(nodes * pad * b);
    st = gather(all ? "tsu_try_allgather" : "tsu_try_gather", at.leaders, h->tmp.data(),
                gets ? h->in.data() : nullptr, pad * b, all ? -1 : int64_t{at.root_leader},
                at.next);
    return true;
  }
  if (h->step == 3 && gets && (leader || all || at.root_local != 0)) {
    // The vector in team-rank order: dst where this rank gets it, else
    // res (the root's node when the root does not lead).
    std::byte* to = all || at.me_root ? h->dst : (h->res.resize(n * b), h->res.data());
    if (leader)
      for (std::size_t i = 0; i < n && b; ++i)
        std::memcpy(to + i * b,
                    h->in.data() + (at.tp->leader_of[i] * pad + at.tp->local_of[i]) * b, b);
    if (all || at.root_local != 0) {  // (else the root leads: it has the vector)
      st = broadcast(at.node_team, to, n * b, 0, at.next);
      return true;
    }
  }
  return false;
}

bool CollLayer::hier_alltoall(HierOp* h, const HierPlace& at, tsu_status_t& st) noexcept {
  const std::size_t n = at.n, nodes = at.nodes, pad = at.pad, here = at.here, b = at.b;
  const bool leader = at.leader;
  const Team* tp = at.tp;
  if (h->step == 0) {
    if (leader) h->tmp.resize(here * n * b);  // the node's src vectors
    st = gather("tsu_try_alltoall", at.node_team, h->src, leader ? h->tmp.data() : nullptr, n * b,
                0, at.next);
    return true;
  }
  if (h->step == 1 && leader) {
    // To node B: block (a, m) = what local member a sends to B's member m.
    h->out.resize(nodes * pad * pad * b);
    h->in.resize(nodes * pad * pad * b);
    for (std::size_t B = 0; B < nodes && b; ++B)
      for (std::size_t a = 0; a < here; ++a)
        for (std::size_t m = 0; m < tp->node_ranks[B].size(); ++m)
          std::memcpy(h->out.data() + ((B * pad + a) * pad + m) * b,
                      h->tmp.data() + (a * n + tp->node_ranks[B][m]) * b, b);
    st = alltoall(at.leaders, h->out.data(), h->in.data(), pad * pad * b, at.next);
    return true;
  }
  if (h->step == 3) {
    // Local member m's dst: from every team rank i, block (local_of[i], m) of i's node.
    if (leader) {
      h->res.resize(here * n * b);
      for (std::size_t m = 0; m < here && b; ++m)
        for (std::size_t i = 0; i < n; ++i)
          std::memcpy(h->res.data() + (m * n + i) * b,
                      h->in.data() + ((tp->leader_of[i] * pad + tp->local_of[i]) * pad + m) * b, b);
    }
    st = scatter(at.node_team, leader ? h->res.data() : nullptr, h->dst, n * b, 0, at.next);
    return true;
  }
  return false;
}

void CollLayer::hier_finish(HierOp* h) noexcept {
  // Done: this op's callback, then the team's next hierarchical op.
  HierOp* following = nullptr;
  {
    std::lock_guard lock(mu_);
    Team& t = *team(h->team);
    if (t.hier_waiting.empty()) {
      t.hier_busy = false;
    } else {
      following = t.hier_waiting.front();
      t.hier_waiting.pop_front();
    }
  }
  runtime::run_callback(h->cb, h->status);
  delete h;
  if (following) hier_step(following);
}

}  // namespace tsu::coll
