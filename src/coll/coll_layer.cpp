// The collective layer's teams: the world team, tsu_team_split and
// tsu_team_free, team queries, and the blocking wait a split runs under.
#include "coll/coll_layer.hpp"

#include <algorithm>
#include <atomic>

#include "core/error.hpp"
#include "runtime/progress_engine.hpp"
#include "runtime/runtime.hpp"
#include "coll/coll_mix.hpp"
#include "coll/hierarchy.hpp"
#include "core/blocking_wait.hpp"
#include "core/wait_table.hpp"

namespace tsu::coll {

namespace {

constexpr uint64_t kWorldContext = 1;

}  // namespace

CollLayer::CollLayer(runtime::Runtime& rt, am::AmLayer& am, uint32_t area_id)
    : rt_(rt), am_(am), node_(rt, area_id) {
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

}  // namespace tsu::coll
