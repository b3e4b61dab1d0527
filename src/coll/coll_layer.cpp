#include "coll/coll_layer.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "am/am_layer.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/trace.hpp"
#include "runtime/progress_engine.hpp"
#include "runtime/runtime.hpp"
#include "coll/hierarchy.hpp"
#include "coll/reduce_ops.hpp"
#include "core/blocking_wait.hpp"
#include "core/wait_table.hpp"

namespace tsu::coll {

using core::MessageHeader;

// Wire format of kHandlerCollData: args[0] team context, [1] op sequence,
// [2] round << 32 | sender's team rank, [3] byte offset; payload = fragment.
namespace {

constexpr uint64_t kWorldContext = 1;

uint64_t mix(uint64_t x) noexcept {  // splitmix64 finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Timeline (docs/trace.md): a collective is an async span from its first
// step to its end, each step a span inside it, both keyed by trace_id(op).
constexpr core::trace::EventType kTraceCollBegin{"collective", "coll", 'b', {"team_size", "seq", nullptr}};
constexpr core::trace::EventType kTraceCollEnd{"collective", "coll", 'e', {"status", nullptr, nullptr}};
constexpr core::trace::EventType kTraceStepBegin{"step", "coll", 'b', {"step", "sends", "recvs"}};
constexpr core::trace::EventType kTraceStepEnd{"step", "coll", 'e', {nullptr, nullptr, nullptr}};
// A collective taking the shared-memory node path or the hierarchy: an
// instant at issue, named by its C entry point (its phases are not traced).
constexpr core::trace::EventType kTraceCollShared{"collective", "coll", 'i',
                                                  {"team_size", "hierarchy", nullptr}};
void trace_shared_path(const char* fn, uint32_t team_size, bool hier) noexcept {
  TSU_TRACE_NAMED(kTraceCollShared, fn, 0, team_size, hier, 0);
}

}  // namespace

CollLayer::CollLayer(core::Runtime& rt, am::AmLayer& am) : rt_(rt), am_(am), node_(rt) {
  auto world = std::make_unique<Team>();
  world->ctx = kWorldContext;
  world->members.resize(rt.size());
  for (uint32_t r = 0; r < rt.size(); ++r) world->members[r] = r;
  world->me = rt.rank();
  world->one_node = on_one_node(world->members);
  if (world->one_node && rt.size() > 1 && rt.config().coll_node)
    world->node = node_.add_team(world->members, world->me, 0, world->ctx);
  const bool spread = !world->one_node && rt.size() > 1 && rt.config().coll_node;
  teams_.push_back(std::move(world));
  if (spread) setup_hierarchy(*teams_[0], 0);
  rt.handlers().set(kHandlerCollData, on_data, this);
}

CollLayer::~CollLayer() = default;

int32_t CollLayer::node_handle(tsu_team_t t, uint32_t& n, uint32_t& me, bool* hier) noexcept {
  std::lock_guard lock(mu_);
  Team* tm = team(t);
  if (!tm) return -2;
  if (hier) *hier = tm->hier;
  n = static_cast<uint32_t>(tm->members.size());
  me = tm->me;
  return tm->node;
}

bool CollLayer::on_one_node(const std::vector<uint32_t>& members) const noexcept {
  for (uint32_t r : members)
    if (rt_.node_of(r) != rt_.node_of(rt_.rank()) || !rt_.memory_route(r)) return false;
  return true;
}

CollLayer::Team* CollLayer::team(tsu_team_t t) noexcept {
  return t < teams_.size() ? teams_[t].get() : nullptr;
}

// ---- Engine ---------------------------------------------------------------------

void CollLayer::send_data(Op& op, const Send& s) noexcept {
  const uint32_t dst = op.team->members[s.dst];
  const std::size_t max = std::max<std::size_t>(am_.max_payload(dst), 1);
  MessageHeader h{};
  h.handler = kHandlerCollData;
  h.args[0] = op.team->ctx;
  h.args[1] = op.seq;
  h.args[2] = (uint64_t{s.round} << 32) | op.team->me;
  std::size_t off = 0;
  do {
    const std::size_t n = std::min(max, s.len - off);
    h.args[3] = off;
    h.payload_len = static_cast<uint32_t>(n);
    const tsu_status_t st = am_.send_or_queue(dst, h, s.data + off);
    if (st != TSU_OK) TSU_LOG_ERROR("collective message to rank %u failed: %s", dst, tsu_strerror(st));
    off += n;
  } while (off < s.len);
}

bool CollLayer::advance(Op& op) noexcept {
  const uint64_t trace_id = mix(op.team->ctx) ^ op.seq;
  if (op.cur == 0 && !op.started)
    TSU_TRACE_NAMED(kTraceCollBegin, op.name, trace_id, op.team->members.size(), op.seq, 0);
  while (op.cur < op.steps.size()) {
    Step& s = op.steps[op.cur];
    if (!op.started) {
      op.started = true;
      TSU_TRACE_NAMED(kTraceStepBegin, nullptr, trace_id, op.cur, s.sends.size(), s.recvs.size());
      for (const Send& snd : s.sends) send_data(op, snd);
      for (Recv& r : s.recvs) {
        auto it = stash_.find(StashKey{op.team->ctx, op.seq, r.round, r.src});
        if (it == stash_.end()) {
          // Waiting on this member: make sure its death would be noticed
          // even if this rank never sent to it (Transport::watch_peer),
          // until its message is here or the op ends (end_watch).
          const uint32_t from = op.team->members[r.src];
          if (transport::Transport* t = rt_.route(from)) {
            t->watch_peer(from);
            r.watched = true;
          }
          continue;
        }
        const std::size_t n = std::min(it->second.data.size(), r.len);
        if (n) std::memcpy(r.buf, it->second.data.data(), n);
        r.got += it->second.got;
        r.any = true;
        pool_.give(std::move(it->second.data));
        stash_.erase(it);
      }
    }
    for (const Recv& r : s.recvs)
      if (!r.any || r.got < r.len) return false;
    end_watches(op);  // none left normally (on_data ended each as its data came)
    if (s.post) s.post();
    TSU_TRACE_NAMED(kTraceStepEnd, nullptr, trace_id, 0, 0, 0);
    ++op.cur;
    op.started = false;
  }
  if (op.finish) op.finish();
  TSU_TRACE_NAMED(kTraceCollEnd, op.name, trace_id, static_cast<int64_t>(op.status), 0, 0);
  return true;
}

void CollLayer::on_data(void* ctx, uint32_t, const MessageHeader& h,
                        const std::byte* payload) noexcept {
  auto* self = static_cast<CollLayer*>(ctx);
  const uint64_t tctx = h.args[0], seq = h.args[1];
  const auto round = static_cast<uint32_t>(h.args[2] >> 32);
  const auto src = static_cast<uint32_t>(h.args[2] & 0xffffffffu);
  const std::size_t off = h.args[3], n = h.payload_len;
  tsu_cb_t done{};
  tsu_status_t status = TSU_OK;
  bool finished = false;
  {
    std::lock_guard lock(self->mu_);
    auto it = self->active_.find(OpKey{tctx, seq});
    Recv* target = nullptr;
    if (it != self->active_.end() && it->second->started)
      for (Recv& r : it->second->steps[it->second->cur].recvs)
        if (r.src == src && r.round == round) target = &r;
    if (target) {
      if (off < target->len && n) std::memcpy(target->buf + off, payload, std::min(n, target->len - off));
      target->got += n;
      target->any = true;
      // This member's part is here: nothing waits on it for this step.
      if (target->got >= target->len) self->end_watch(*it->second, *target);
      if (self->advance(*it->second)) {
        done = it->second->cb;
        status = it->second->status;
        finished = true;
        self->retire(*it->second);
        self->active_.erase(it);
      }
    } else {
      auto [slot, fresh] = self->stash_.try_emplace(StashKey{tctx, seq, round, src});
      Stash& s = slot->second;
      if (fresh) s.data = self->pool_.take();
      if (s.data.size() < off + n) s.data.resize(off + n);
      if (n) std::memcpy(s.data.data() + off, payload, n);
      s.got += n;
    }
  }
  if (finished) core::run_callback(done, status);
}

void CollLayer::end_watch(const Op& op, Recv& r) noexcept {
  if (!r.watched) return;
  r.watched = false;
  const uint32_t from = op.team->members[r.src];
  if (transport::Transport* t = rt_.route(from)) t->unwatch_peer(from);
}

void CollLayer::end_watches(Op& op) noexcept {
  // Only the current step's receives can hold one: a step's watches end
  // before the next starts.
  if (op.cur < op.steps.size())
    for (Recv& r : op.steps[op.cur].recvs) end_watch(op, r);
}

void CollLayer::retire(Op& op) noexcept {
  pool_.give(std::move(op.tmp));
  pool_.give(std::move(op.tmp2));
}

bool CollLayer::has_lost_member(const Team& t) const noexcept {
  for (uint32_t r : lost_)
    if (std::find(t.members.begin(), t.members.end(), r) != t.members.end()) return true;
  return false;
}

void CollLayer::on_peer_lost(uint32_t rank) noexcept {
  std::vector<tsu_cb_t> failed;
  {
    std::lock_guard lock(mu_);
    try {
      lost_.push_back(rank);
      for (auto it = active_.begin(); it != active_.end();) {
        const std::vector<uint32_t>& m = it->second->team->members;
        if (std::find(m.begin(), m.end(), rank) != m.end()) {
          failed.push_back(it->second->cb);
          end_watches(*it->second);
          TSU_TRACE_NAMED(kTraceCollEnd, it->second->name, mix(it->second->team->ctx) ^ it->second->seq,
                          static_cast<int64_t>(TSU_ERR_PEER_LOST), 0, 0);
          it = active_.erase(it);
        } else {
          ++it;
        }
      }
    } catch (const std::bad_alloc&) {
      TSU_LOG_ERROR("collectives: out of memory while failing rank %u's collectives", rank);
    }
  }
  if (!failed.empty())
    TSU_LOG_WARN("rank %u lost: %zu collectives fail", rank, failed.size());
  for (const tsu_cb_t& cb : failed) core::run_callback(cb, TSU_ERR_PEER_LOST);
  node_.on_peer_lost(rank);  // a node peer: its teams' shared-memory collectives
}

tsu_status_t CollLayer::start(std::unique_ptr<Op> op) noexcept {
  tsu_cb_t cb{};
  tsu_status_t status = TSU_OK;
  bool finished = false;
  {
    std::lock_guard lock(mu_);
    op->seq = op->team->next_seq++;
    Op& ref = *op;
    if (has_lost_member(*ref.team)) {
      // A member is gone: the collective can never complete.
      cb = ref.cb;
      finished = true;
      status = TSU_ERR_PEER_LOST;
    } else if (advance(ref)) {
      cb = ref.cb;
      status = ref.status;
      finished = true;
      retire(ref);
    } else {
      active_.emplace(OpKey{ref.team->ctx, ref.seq}, std::move(op));
    }
  }
  if (finished) core::run_callback(cb, status);
  return TSU_OK;
}

// ---- Teams ----------------------------------------------------------------------

tsu_status_t CollLayer::wait_blocking(const std::function<tsu_status_t(tsu_cb_t)>& start_fn) noexcept {
  struct Done {
    std::atomic<bool> flag{false};
    tsu_status_t status = TSU_OK;  // written before flag's release store
  } done;
  const tsu_status_t st = start_fn(tsu_cb(
      [](tsu_status_t s, void* a) {
        auto* d = static_cast<Done*>(a);
        d->status = s;
        d->flag.store(true, std::memory_order_seq_cst);  // before notify's table read
        core::wait_table::notify(d);  // the address only: d may be gone by now
      },
      &done));
  if (st != TSU_OK) return st;
  // Inside a user-level thread: parked until the callback wakes it.
  auto not_done = [](const void* d) {
    return !static_cast<const Done*>(d)->flag.load(std::memory_order_seq_cst);
  };
  core::BlockingWait wait(&done, rt_.manual_progress(), not_done, &done,
                          &rt_.engine().waiters_polling());
  while (!done.flag.load(std::memory_order_acquire)) {
    if (rt_.engine().progress()) wait.worked();
    else wait.idle();
  }
  if (done.status != TSU_OK)
    return core::fail(done.status, "collective failed: %s", tsu_strerror(done.status));
  return TSU_OK;
}

tsu_status_t CollLayer::split(tsu_team_t parent, int32_t color, uint32_t key,
                              tsu_team_t& out) noexcept {
  uint32_t n = 0, me = 0;
  uint64_t ctx = 0;
  {
    std::lock_guard lock(mu_);
    Team* p = team(parent);
    if (!p) return core::fail(TSU_ERR_INVALID_ARG, "tsu_team_split: team %u is not valid", parent);
    n = static_cast<uint32_t>(p->members.size());
    me = p->me;
    ctx = mix(p->ctx ^ mix(++p->splits));
  }
  struct Entry {
    int32_t color;
    uint32_t key;
    uint32_t free_slots;  // NodeColl slots this rank has free
  };
  const Entry mine{color, key, node_.free_slots()};
  std::vector<Entry> all(n);
  tsu_status_t st = wait_blocking([&](tsu_cb_t cb) {
    return gather("tsu_team_split", parent, &mine, all.data(), sizeof(Entry), -1, cb);
  });
  if (st != TSU_OK) return st;
  (void)me;
  if (color < 0) {
    out = TSU_TEAM_NULL;
    return TSU_OK;
  }
  std::vector<std::pair<uint32_t, uint32_t>> order;  // (key, parent rank)
  uint32_t common_slots = ~0u;  // free on every member: all choose the lowest alike
  for (uint32_t r = 0; r < n; ++r)
    if (all[r].color == color) {
      order.emplace_back(all[r].key, r);
      common_slots &= all[r].free_slots;
    }
  std::sort(order.begin(), order.end());
  auto t = std::make_unique<Team>();
  t->ctx = mix(ctx ^ static_cast<uint32_t>(color));
  std::lock_guard lock(mu_);
  Team* p = team(parent);
  uint32_t node_slots = ~0u;  // free on this node's members of the new team
  for (const auto& [k, r] : order)
    if (rt_.node_of(p->members[r]) == rt_.node_of(rt_.rank())) node_slots &= all[r].free_slots;
  for (const auto& [k, r] : order) {
    if (r == p->me) t->me = static_cast<uint32_t>(t->members.size());
    t->members.push_back(p->members[r]);
  }
  t->one_node = on_one_node(t->members);
  if (t->one_node && t->members.size() > 1 && common_slots && rt_.config().coll_node)
    t->node = node_.add_team(t->members, t->me, static_cast<uint32_t>(__builtin_ctz(common_slots)),
                             t->ctx);
  if (!t->one_node && t->members.size() > 1 && rt_.config().coll_node)
    setup_hierarchy(*t, node_slots ? __builtin_ctz(node_slots) : -1);
  teams_.push_back(std::move(t));
  out = static_cast<tsu_team_t>(teams_.size() - 1);
  return TSU_OK;
}

tsu_status_t CollLayer::free_team(tsu_team_t t) noexcept {
  std::lock_guard lock(mu_);
  if (t == TSU_TEAM_WORLD || !team(t))
    return core::fail(TSU_ERR_INVALID_ARG, "tsu_team_free: team %u cannot be freed", t);
  if (teams_[t]->hier_busy)
    return core::fail(TSU_ERR_INVALID_ARG, "tsu_team_free: team %u has a collective in flight", t);
  for (tsu_team_t sub : {teams_[t]->node_team, teams_[t]->leaders})
    if (sub != TSU_TEAM_NULL && teams_[sub]) {
      if (teams_[sub]->node >= 0) node_.free_team(teams_[sub]->node);
      teams_[sub].reset();
    }
  if (teams_[t]->node >= 0) node_.free_team(teams_[t]->node);
  teams_[t].reset();
  return TSU_OK;
}

tsu_status_t CollLayer::team_info(tsu_team_t t, uint32_t* rank, uint32_t* size) noexcept {
  std::lock_guard lock(mu_);
  Team* tm = team(t);
  if (!tm) return core::fail(TSU_ERR_INVALID_ARG, "team %u is not valid", t);
  if (rank) *rank = tm->me;
  if (size) *size = static_cast<uint32_t>(tm->members.size());
  return TSU_OK;
}

tsu_status_t CollLayer::team_job_rank(tsu_team_t t, uint32_t team_rank, uint32_t& out) noexcept {
  std::lock_guard lock(mu_);
  Team* tm = team(t);
  if (!tm) return core::fail(TSU_ERR_INVALID_ARG, "tsu_team_job_rank: team %u is not valid", t);
  if (team_rank >= tm->members.size())
    return core::fail(TSU_ERR_BAD_RANK, "tsu_team_job_rank: rank %u >= team size %zu", team_rank,
                      tm->members.size());
  out = tm->members[team_rank];
  return TSU_OK;
}

// ---- Collectives ------------------------------------------------------------------

#define TSU_COLL_TEAM(fn)                                                                \
  Team* tm;                                                                              \
  auto op = std::make_unique<Op>();                                                      \
  {                                                                                      \
    std::lock_guard lock(mu_);                                                           \
    tm = team(team_id);                                                                  \
    op->tmp = pool_.take();                                                              \
    op->tmp2 = pool_.take();                                                             \
  }                                                                                      \
  if (!tm) return core::fail(TSU_ERR_INVALID_ARG, "%s: team %u is not valid", fn, team_id); \
  const uint32_t n = static_cast<uint32_t>(tm->members.size()), me = tm->me;             \
  op->team = tm;                                                                         \
  op->name = fn;                                                                         \
  op->cb = cb

namespace {

// When a rooted or all-to-all reduction/gather may take a shared route: a
// root inside the team, and the buffers it needs (else the message
// algorithm reports the error with its message).
auto rooted_usable(int64_t root, std::size_t n, const void* src, const void* dst) {
  return [=](uint32_t nn, uint32_t nme) {
    const bool valid_root = root < 0 || root < nn;
    const bool has_dst = dst || (root >= 0 && static_cast<uint32_t>(root) != nme);
    return valid_root && (!n || (src && has_dst));
  };
}

}  // namespace

template <typename Usable>
bool CollLayer::shared_path(const char* fn, tsu_team_t team, HierKind hier_kind,
                            const NodeColl::Request& req, Usable&& usable,
                            tsu_status_t& st) noexcept {
  uint32_t nn = 0, nme = 0;
  bool hier = false;
  const int32_t h = node_handle(team, nn, nme, &hier);
  if (h < 0 && !hier) return false;
  trace_shared_path(fn, nn, hier);
  if (!usable(nn, nme)) return false;
  if (hier) {
    auto* ho = new (std::nothrow) HierOp{};
    if (!ho) {
      st = core::fail(TSU_ERR_NO_MEMORY, "%s: out of memory", fn);
      return true;
    }
    *ho = hier_op(this, team, hier_kind, req.cb);
    ho->src = req.src;
    ho->dst = req.dst;
    ho->count = req.count;
    ho->bytes = req.bytes;
    ho->type = req.type;
    ho->rop = req.rop;
    ho->root = req.root;
    st = start_hier(ho);
    return true;
  }
  node_.start(h, req);
  st = TSU_OK;
  return true;
}

tsu_status_t CollLayer::barrier(tsu_team_t team_id, const tsu_cb_t& cb) noexcept {
  NodeColl::Request req;
  req.kind = NodeColl::Kind::kBarrier;
  req.cb = cb;
  if (tsu_status_t st; shared_path("tsu_try_barrier", team_id, HierKind::kBarrier, req,
                                   [](uint32_t, uint32_t) { return true; }, st))
    return st;
  TSU_COLL_TEAM("tsu_try_barrier");
  (void)n;
  (void)me;
  add_barrier_steps(*op, 0);
  return start(std::move(op));
}

void CollLayer::add_barrier_steps(Op& op, uint32_t first_round, bool carry_status) noexcept {
  const uint32_t n = static_cast<uint32_t>(op.team->members.size()), me = op.team->me;
  uint32_t rounds = 0;
  for (uint32_t dist = 1; dist < n; dist <<= 1) ++rounds;
  if (carry_status) op.heard.assign(rounds, TSU_OK);
  const std::size_t len = carry_status ? sizeof(tsu_status_t) : 0;
  // Dissemination: round k talks to +-2^k.  After the last round every
  // member has heard from every other one (directly or through others).
  Op* o = &op;
  for (uint32_t dist = 1, k = 0; dist < n; dist <<= 1, ++k) {
    Step s;
    const auto* status = carry_status ? reinterpret_cast<const std::byte*>(&op.status) : nullptr;
    auto* heard = carry_status ? reinterpret_cast<std::byte*>(&op.heard[k]) : nullptr;
    s.sends.push_back(Send{(me + dist) % n, status, len, first_round + k});
    s.recvs.push_back(Recv{(me + n - dist) % n, heard, len, first_round + k});
    if (carry_status)
      s.post = [o, k] {
        if (o->status == TSU_OK) o->status = o->heard[k];
      };
    op.steps.push_back(std::move(s));
  }
}

tsu_status_t CollLayer::broadcast(tsu_team_t team_id, void* buf, std::size_t bytes, uint32_t root,
                                  const tsu_cb_t& cb) noexcept {
  if (bytes && !buf) return core::fail(TSU_ERR_NULL_POINTER, "tsu_try_broadcast: buf is NULL");
  NodeColl::Request req;
  req.kind = NodeColl::Kind::kBroadcast;
  req.dst = static_cast<std::byte*>(buf);
  req.bytes = bytes;
  req.root = root;
  req.cb = cb;
  if (tsu_status_t st; shared_path("tsu_try_broadcast", team_id, HierKind::kBroadcast, req,
                                   [&](uint32_t nn, uint32_t) { return root < nn; }, st))
    return st;
  TSU_COLL_TEAM("tsu_try_broadcast");
  if (root >= n) return core::fail(TSU_ERR_BAD_RANK, "tsu_try_broadcast: root %u >= team size %u", root, n);
  auto* p = static_cast<std::byte*>(buf);
  const uint32_t vr = (me + n - root) % n;
  auto abs = [&](uint32_t v) { return (v + root) % n; };
  uint32_t mask = 1;
  while (mask < n) {  // binomial tree: receive from the parent
    if (vr & mask) {
      Step s;
      s.recvs.push_back(Recv{abs(vr - mask), p, bytes, 0});
      op->steps.push_back(std::move(s));
      break;
    }
    mask <<= 1;
  }
  Step fwd;
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (vr + mask < n) fwd.sends.push_back(Send{abs(vr + mask), p, bytes, 0});
  op->steps.push_back(std::move(fwd));
  return start(std::move(op));
}

tsu_status_t CollLayer::reduce(const char* fn, tsu_team_t team_id, const void* src, void* dst,
                               std::size_t count, tsu_dtype_t type, tsu_op_t rop, int64_t root,
                               const tsu_cb_t& cb) noexcept {
  const std::size_t es = dtype_size(type);
  if (!es) return core::fail(TSU_ERR_INVALID_ARG, "%s: unknown type %d", fn, static_cast<int>(type));
  if (rop < TSU_OP_SUM || rop > TSU_OP_BOR)
    return core::fail(TSU_ERR_INVALID_ARG, "%s: unknown op %d", fn, static_cast<int>(rop));
  if ((rop == TSU_OP_BAND || rop == TSU_OP_BOR) && (type == TSU_DT_FLOAT || type == TSU_DT_DOUBLE))
    return core::fail(TSU_ERR_INVALID_ARG, "%s: bitwise ops need an integer type", fn);
  {
    NodeColl::Request req;
    req.kind = root < 0 ? NodeColl::Kind::kAllreduce : NodeColl::Kind::kReduce;
    req.src = static_cast<const std::byte*>(src);
    req.dst = static_cast<std::byte*>(dst);
    req.count = count;
    req.bytes = count * es;
    req.type = type;
    req.rop = rop;
    req.root = root < 0 ? 0 : static_cast<uint32_t>(root);
    req.cb = cb;
    if (tsu_status_t st; shared_path(fn, team_id, root < 0 ? HierKind::kAllreduce : HierKind::kReduce,
                                     req, rooted_usable(root, count, src, dst), st))
      return st;
  }
  TSU_COLL_TEAM(fn);
  const bool all = root < 0;
  if (!all && root >= n) return core::fail(TSU_ERR_BAD_RANK, "%s: root %lld >= team size %u", fn, static_cast<long long>(root), n);
  const bool is_root = all || static_cast<uint32_t>(root) == me;
  if (count && (!src || (is_root && !dst)))
    return core::fail(TSU_ERR_NULL_POINTER, "%s: src or dst is NULL", fn);
  const std::size_t bytes = count * es;
  Op* o = op.get();
  const core::Config& cfg = rt_.config();
  if (all && n > 1 && tm->one_node && cfg.coll_direct && bytes >= cfg.coll_direct_min) {
    build_allreduce_direct(*o, static_cast<const std::byte*>(src), static_cast<std::byte*>(dst),
                           count, type, rop);
    return start(std::move(op));
  }
  // The accumulator: dst where this rank gets the result, else op-owned.
  o->tmp.resize(is_root ? 0 : bytes);
  o->tmp2.resize(bytes);
  std::byte* acc = is_root ? static_cast<std::byte*>(dst) : o->tmp.data();
  std::byte* in = o->tmp2.data();
  if (bytes && acc != src) std::memmove(acc, src, bytes);
  if (all) {
    if (n > 1 && bytes >= cfg.coll_large_min)
      build_allreduce_halving(*o, acc, in, count, type, rop);
    else
      build_allreduce_doubling(*o, acc, in, count, type, rop);
    return start(std::move(op));
  }
  // Binomial tree towards the root.
  auto fold = [=] { combine(type, rop, acc, in, count); };
  const auto r = static_cast<uint32_t>(root);
  const uint32_t vr = (me + n - r) % n;
  auto abs = [&](uint32_t v) { return (v + r) % n; };
  for (uint32_t mask = 1; mask < n; mask <<= 1) {
    Step s;
    if (vr & mask) {
      s.sends.push_back(Send{abs(vr - mask), acc, bytes, mask});
      op->steps.push_back(std::move(s));
      break;
    }
    if (vr + mask < n) {
      s.recvs.push_back(Recv{abs(vr + mask), in, bytes, mask});
      s.post = fold;
      op->steps.push_back(std::move(s));
    }
  }
  return start(std::move(op));
}

void CollLayer::build_allreduce_doubling(Op& op, std::byte* acc, std::byte* in, std::size_t count,
                                         tsu_dtype_t type, tsu_op_t rop) noexcept {
  const std::size_t bytes = count * dtype_size(type);
  uint32_t p2 = 1;
  const int64_t newr = add_fold_in(op, acc, in, count, type, rop, p2);
  if (newr >= 0) {
    const uint32_t n = static_cast<uint32_t>(op.team->members.size());
    for (uint32_t mask = 1; mask < p2; mask <<= 1) {
      const uint32_t partner = survivor_rank(static_cast<uint32_t>(newr) ^ mask, n, p2);
      Step s;
      s.sends.push_back(Send{partner, acc, bytes, mask});
      s.recvs.push_back(Recv{partner, in, bytes, mask});
      s.post = [=] { combine(type, rop, acc, in, count); };
      op.steps.push_back(std::move(s));
    }
  }
  add_fold_out(op, acc, bytes, p2);
}

int64_t CollLayer::add_fold_in(Op& op, std::byte* acc, std::byte* in, std::size_t count,
                               tsu_dtype_t type, tsu_op_t rop, uint32_t& p2) noexcept {
  const uint32_t n = static_cast<uint32_t>(op.team->members.size()), me = op.team->me;
  const std::size_t bytes = count * dtype_size(type);
  p2 = 1;
  while (p2 * 2 <= n) p2 *= 2;
  const uint32_t rem = n - p2;
  if (me >= 2 * rem) return me - rem;
  Step s;
  if (me % 2 == 0) {
    s.sends.push_back(Send{me + 1, acc, bytes, kRoundFoldIn});
    op.steps.push_back(std::move(s));
    return -1;
  }
  s.recvs.push_back(Recv{me - 1, in, bytes, kRoundFoldIn});
  s.post = [=] { combine(type, rop, acc, in, count); };
  op.steps.push_back(std::move(s));
  return me / 2;
}

void CollLayer::add_fold_out(Op& op, std::byte* acc, std::size_t bytes, uint32_t p2) noexcept {
  const uint32_t n = static_cast<uint32_t>(op.team->members.size()), me = op.team->me;
  if (me >= 2 * (n - p2)) return;
  Step s;
  if (me % 2 == 1) s.sends.push_back(Send{me - 1, acc, bytes, kRoundFoldOut});
  else s.recvs.push_back(Recv{me + 1, acc, bytes, kRoundFoldOut});
  op.steps.push_back(std::move(s));
}

tsu_status_t CollLayer::gather(const char* fn, tsu_team_t team_id, const void* src, void* dst,
                               std::size_t bytes, int64_t root, const tsu_cb_t& cb) noexcept {
  {
    NodeColl::Request req;
    req.kind = root < 0 ? NodeColl::Kind::kAllgather : NodeColl::Kind::kGather;
    req.src = static_cast<const std::byte*>(src);
    req.dst = static_cast<std::byte*>(dst);
    req.bytes = bytes;
    req.root = root < 0 ? 0 : static_cast<uint32_t>(root);
    req.cb = cb;
    if (tsu_status_t st; shared_path(fn, team_id, root < 0 ? HierKind::kAllgather : HierKind::kGather,
                                     req, rooted_usable(root, bytes, src, dst), st))
      return st;
  }
  TSU_COLL_TEAM(fn);
  const bool all = root < 0;
  if (!all && root >= n) return core::fail(TSU_ERR_BAD_RANK, "%s: root %lld >= team size %u", fn, static_cast<long long>(root), n);
  const bool is_root = all || static_cast<uint32_t>(root) == me;
  if (bytes && (!src || (is_root && !dst)))
    return core::fail(TSU_ERR_NULL_POINTER, "%s: src or dst is NULL", fn);
  Op* o = op.get();
  o->tmp.resize(std::size_t{n} * bytes);
  std::byte* tmp = o->tmp.data();
  if (bytes) std::memcpy(tmp, src, bytes);
  auto* out = static_cast<std::byte*>(dst);
  if (all) {
    // Bruck: after the round with distance d, tmp holds blocks me .. me+2d-1.
    for (uint32_t dist = 1; dist < n; dist <<= 1) {
      const uint32_t cnt = std::min(dist, n - dist);
      Step s;
      s.sends.push_back(Send{(me + n - dist) % n, tmp, cnt * bytes, dist});
      s.recvs.push_back(Recv{(me + dist) % n, tmp + std::size_t{dist} * bytes, cnt * bytes, dist});
      op->steps.push_back(std::move(s));
    }
    o->finish = [=] {
      for (uint32_t i = 0; i < n; ++i)
        if (bytes) std::memcpy(out + std::size_t{(me + i) % n} * bytes, tmp + std::size_t{i} * bytes, bytes);
    };
    return start(std::move(op));
  }
  // Binomial gather: a subtree's blocks travel together, in relative order.
  const auto r = static_cast<uint32_t>(root);
  const uint32_t vr = (me + n - r) % n;
  auto abs = [&](uint32_t v) { return (v + r) % n; };
  std::size_t have = 1;
  for (uint32_t mask = 1; mask < n; mask <<= 1) {
    Step s;
    if (vr & mask) {
      s.sends.push_back(Send{abs(vr - mask), tmp, have * bytes, mask});
      op->steps.push_back(std::move(s));
      break;
    }
    if (vr + mask < n) {
      const uint32_t cnt = std::min(mask, n - vr - mask);
      s.recvs.push_back(Recv{abs(vr + mask), tmp + std::size_t{mask} * bytes, cnt * bytes, mask});
      have += cnt;
      op->steps.push_back(std::move(s));
    }
  }
  if (is_root)
    o->finish = [=] {
      for (uint32_t i = 0; i < n; ++i)
        if (bytes) std::memcpy(out + std::size_t{(i + r) % n} * bytes, tmp + std::size_t{i} * bytes, bytes);
    };
  return start(std::move(op));
}

tsu_status_t CollLayer::alltoall(tsu_team_t team_id, const void* src, void* dst, std::size_t bytes,
                                 const tsu_cb_t& cb) noexcept {
  if (bytes && (!src || !dst))
    return core::fail(TSU_ERR_NULL_POINTER, "tsu_try_alltoall: src or dst is NULL");
  NodeColl::Request req;
  req.kind = NodeColl::Kind::kAlltoall;
  req.src = static_cast<const std::byte*>(src);
  req.dst = static_cast<std::byte*>(dst);
  req.bytes = bytes;
  req.cb = cb;
  if (tsu_status_t st; shared_path("tsu_try_alltoall", team_id, HierKind::kAlltoall, req,
                                   [](uint32_t, uint32_t) { return true; }, st))
    return st;
  TSU_COLL_TEAM("tsu_try_alltoall");
  const auto* in = static_cast<const std::byte*>(src);
  auto* out = static_cast<std::byte*>(dst);
  Step s;
  for (uint32_t k = 1; k < n; ++k) {  // staggered so not everyone hits rank 0 first
    const uint32_t to = (me + k) % n, from = (me + n - k) % n;
    s.sends.push_back(Send{to, in + std::size_t{to} * bytes, bytes, 0});
    s.recvs.push_back(Recv{from, out + std::size_t{from} * bytes, bytes, 0});
  }
  if (bytes) std::memmove(out + std::size_t{me} * bytes, in + std::size_t{me} * bytes, bytes);
  op->steps.push_back(std::move(s));
  return start(std::move(op));
}

tsu_status_t CollLayer::scatter(tsu_team_t team_id, const void* src, void* dst, std::size_t bytes,
                                uint32_t root, const tsu_cb_t& cb) noexcept {
  uint32_t nn = 0, nme = 0;
  const int32_t h = node_handle(team_id, nn, nme);
  if (h >= 0 && root < nn) {
    NodeColl::Request req;
    req.kind = NodeColl::Kind::kScatter;
    req.src = static_cast<const std::byte*>(src);
    req.dst = static_cast<std::byte*>(dst);
    req.bytes = bytes;
    req.root = root;
    req.cb = cb;
    node_.start(h, req);
    return TSU_OK;
  }
  TSU_COLL_TEAM("scatter");
  if (root >= n) return core::fail(TSU_ERR_BAD_RANK, "scatter: root %u >= team size %u", root, n);
  const auto* in = static_cast<const std::byte*>(src);
  auto* out = static_cast<std::byte*>(dst);
  Step s;
  if (me == root) {
    for (uint32_t k = 1; k < n; ++k) {
      const uint32_t to = (me + k) % n;
      s.sends.push_back(Send{to, in + std::size_t{to} * bytes, bytes, 0});
    }
    if (bytes) std::memmove(out, in + std::size_t{me} * bytes, bytes);
  } else {
    s.recvs.push_back(Recv{root, out, bytes, 0});
  }
  op->steps.push_back(std::move(s));
  return start(std::move(op));
}

#undef TSU_COLL_TEAM

}  // namespace tsu::coll
