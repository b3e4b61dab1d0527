// OpenSHMEM 1.5 teams: SHMEM_TEAM_WORLD, SHMEM_TEAM_SHARED, split_strided,
// split_2d, translate_pe, get_config, destroy.
//
// Every team is a tsunagi team made by tsu_team_split of its parent, the
// members keyed by their new team PE so that tsunagi's team rank is the SHMEM
// team PE: the collectives (collectives_team.cpp) then run on tsunagi's own
// team collectives without translating ranks.
#include "teams.hpp"

#include <algorithm>
#include <cstdint>
#include <new>

using tsu::shmem::Team;

namespace {

// The predefined teams live for the whole program so that their handles are
// valid (non-null) constants even before shmem_init; teams_init fills them.
Team g_world;
Team g_shared;

// Members in world-PE order, for teams whose world PEs are not strided.
void index_by_world(Team* t) {
  t->by_world.clear();
  if (t->strided) return;
  t->by_world.reserve(t->world.size());
  for (int i = 0; i < t->size; ++i) t->by_world.emplace_back(t->world_pe(i), i);
  std::sort(t->by_world.begin(), t->by_world.end());
}

bool config_ok(const shmem_team_config_t* config, long mask) {
  if (mask & ~SHMEM_TEAM_NUM_CONTEXTS) return false;
  if (mask & SHMEM_TEAM_NUM_CONTEXTS) return config != nullptr && config->num_contexts >= 0;
  return true;
}

void set_config(Team* t, const shmem_team_config_t* config, long mask) {
  t->config.num_contexts = (mask & SHMEM_TEAM_NUM_CONTEXTS) ? config->num_contexts : 0;
  t->config_mask = mask;
}

// The team of parent PEs first + i * stride (i < size) whose tsunagi team
// the caller, member `index`, got from tsu_team_split.  nullptr: no memory.
Team* make_team(const Team* parent, int first, int stride, int size, int index, tsu_team_t tteam,
                const shmem_team_config_t* config, long mask, const char* fn) {
  uint32_t rank = 0;
  uint32_t tsize = 0;
  if (tsu_team_rank(tteam, &rank) != TSU_OK || tsu_team_size(tteam, &tsize) != TSU_OK ||
      rank != static_cast<uint32_t>(index) || tsize != static_cast<uint32_t>(size))
    tsu::shmem::fail(fn, "internal error: tsunagi's team disagrees with the split (rank %u of %u, "
                     "expected %d of %d)", rank, tsize, index, size);
  Team* t = new (std::nothrow) Team;
  if (t == nullptr) return nullptr;
  t->tsu = tteam;
  t->my_pe = index;
  t->size = size;
  t->world.resize(static_cast<size_t>(size));
  for (int i = 0; i < size; ++i)
    t->world[static_cast<size_t>(i)] =
        parent->world_pe(static_cast<int>(first + static_cast<int64_t>(i) * stride));
  t->strided = parent->strided;
  t->world_start = parent->world_pe(first);
  // A team of one may come with any stride: it has no second member.
  t->world_stride = size == 1 ? 0 : parent->world_stride * stride;
  index_by_world(t);
  set_config(t, config, mask);
  t->magic = Team::kMagic;
  return t;
}

// Splits `parent` by (color, key) in tsunagi; TSU_TEAM_NULL for color < 0.
bool split(const Team* parent, int color, int key, tsu_team_t* out) {
  return tsu_team_split(parent->tsu, color, static_cast<uint32_t>(key), out) == TSU_OK;
}

}  // namespace

int tsu_shmem_team::team_pe(int pe) const noexcept {
  if (strided) {
    const int64_t d = static_cast<int64_t>(pe) - world_start;
    if (world_stride == 0) return d == 0 ? 0 : -1;
    if (d % world_stride != 0) return -1;
    const int64_t i = d / world_stride;
    return i >= 0 && i < size ? static_cast<int>(i) : -1;
  }
  auto it = std::lower_bound(by_world.begin(), by_world.end(), std::make_pair(pe, -1));
  return it != by_world.end() && it->first == pe ? it->second : -1;
}

extern "C" {
SHMEM_API shmem_team_t SHMEM_TEAM_WORLD = &g_world;
SHMEM_API shmem_team_t SHMEM_TEAM_SHARED = &g_shared;
}

namespace tsu::shmem {

Team* team(shmem_team_t t, const char* fn) noexcept {
  if (t == SHMEM_TEAM_INVALID) fail(fn, "the team is SHMEM_TEAM_INVALID");
  if (t->magic != Team::kMagic)
    fail(fn, "team %p is not a valid team (destroyed, or used outside shmem_init/finalize)",
         static_cast<void*>(t));
  return static_cast<Team*>(t);
}

int team_world_pe(Team* t, int team_pe) noexcept {
  return team_pe >= 0 && team_pe < t->size ? t->world_pe(team_pe) : -1;
}

shmem_team_t team_handle_of(Team* t) noexcept { return t; }

// WORLD and SHARED, collective over the job (shmem_init, the heap is up).
void teams_init() noexcept {
  const int n = n_pes();
  const int me = my_pe();

  g_world.tsu = TSU_TEAM_WORLD;
  g_world.my_pe = me;
  g_world.size = n;
  g_world.world.resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) g_world.world[static_cast<size_t>(i)] = i;
  g_world.strided = true;
  g_world.world_start = 0;
  g_world.world_stride = 1;
  g_world.config = {0};
  g_world.config_mask = 0;
  g_world.predefined = true;
  g_world.magic = Team::kMagic;

  // SHARED: the PEs of our node whose heap we reach by load/store (what
  // shmem_ptr returns).  Probed on a heap object; when some node peer is out
  // of reach (TSU_BYPASS=0), the caller forms a team alone.
  void* probe = heap_alloc(8, 8, "shmem_init");
  uint32_t node = 0;
  uint32_t nodes = 1;
  bool reach_all = probe != nullptr && tsu_node_of(static_cast<uint32_t>(me), &node) == TSU_OK &&
                   tsu_node_count(&nodes) == TSU_OK;
  for (int p = 0; reach_all && p < n; ++p) {
    uint32_t pn = 0;
    if (tsu_node_of(static_cast<uint32_t>(p), &pn) != TSU_OK) reach_all = false;
    else if (pn == node && direct_ptr(probe, p) == nullptr) reach_all = false;
  }
  const int64_t color = reach_all ? node : static_cast<int64_t>(nodes) + me;
  tsu_team_t shared = TSU_TEAM_NULL;
  if (tsu_team_split(TSU_TEAM_WORLD, static_cast<int32_t>(color), static_cast<uint32_t>(me),
                     &shared) != TSU_OK)
    fail("shmem_init", "creating SHMEM_TEAM_SHARED failed: %s", tsu_last_error());
  if (probe != nullptr) heap_free(probe, "shmem_init");

  uint32_t rank = 0;
  uint32_t size = 0;
  if (tsu_team_rank(shared, &rank) != TSU_OK || tsu_team_size(shared, &size) != TSU_OK)
    fail("shmem_init", "SHMEM_TEAM_SHARED: tsunagi's team is not valid");
  g_shared.tsu = shared;
  g_shared.my_pe = static_cast<int>(rank);
  g_shared.size = static_cast<int>(size);
  g_shared.world.resize(size);
  for (uint32_t i = 0; i < size; ++i) {
    uint32_t w = 0;
    if (tsu_team_job_rank(shared, i, &w) != TSU_OK)
      fail("shmem_init", "SHMEM_TEAM_SHARED: member %u unknown", i);
    g_shared.world[i] = static_cast<int>(w);
  }
  // Node peers are often consecutive PEs: then translation is arithmetic.
  g_shared.strided = true;
  g_shared.world_start = g_shared.world[0];
  g_shared.world_stride = 1;
  for (uint32_t i = 0; i < size; ++i)
    if (g_shared.world[i] != g_shared.world_start + static_cast<int>(i)) g_shared.strided = false;
  index_by_world(&g_shared);
  g_shared.config = {0};
  g_shared.config_mask = 0;
  g_shared.predefined = true;
  g_shared.magic = Team::kMagic;
}

void teams_finalize() noexcept {
  if (g_shared.magic == Team::kMagic && g_shared.tsu != TSU_TEAM_WORLD &&
      g_shared.tsu != TSU_TEAM_NULL)
    (void)tsu_team_free(g_shared.tsu);
  g_shared.magic = 0;
  g_shared.tsu = TSU_TEAM_NULL;
  g_world.magic = 0;
}

}  // namespace tsu::shmem

using namespace tsu::shmem;

extern "C" {

SHMEM_API int shmem_team_my_pe(shmem_team_t t) {
  check_init("shmem_team_my_pe");
  if (t == SHMEM_TEAM_INVALID) return -1;
  return team(t, "shmem_team_my_pe")->my_pe;
}

SHMEM_API int shmem_team_n_pes(shmem_team_t t) {
  check_init("shmem_team_n_pes");
  if (t == SHMEM_TEAM_INVALID) return -1;
  return team(t, "shmem_team_n_pes")->size;
}

SHMEM_API int shmem_team_get_config(shmem_team_t t, long config_mask,
                                    shmem_team_config_t* config) {
  check_init("shmem_team_get_config");
  if (t == SHMEM_TEAM_INVALID || config == nullptr) return -1;
  const Team* tm = team(t, "shmem_team_get_config");
  if (config_mask & ~SHMEM_TEAM_NUM_CONTEXTS) return -1;
  if (config_mask & SHMEM_TEAM_NUM_CONTEXTS) config->num_contexts = tm->config.num_contexts;
  return 0;
}

SHMEM_API int shmem_team_translate_pe(shmem_team_t src_team, int src_pe, shmem_team_t dest_team) {
  check_init("shmem_team_translate_pe");
  if (src_team == SHMEM_TEAM_INVALID || dest_team == SHMEM_TEAM_INVALID) return -1;
  const Team* s = team(src_team, "shmem_team_translate_pe");
  const Team* d = team(dest_team, "shmem_team_translate_pe");
  if (src_pe < 0 || src_pe >= s->size) return -1;
  return d->team_pe(s->world_pe(src_pe));
}

SHMEM_API int shmem_team_split_strided(shmem_team_t parent_team, int start, int stride, int size,
                                       const shmem_team_config_t* config, long config_mask,
                                       shmem_team_t* new_team) {
  static constexpr const char* fn = "shmem_team_split_strided";
  check_init(fn);
  if (new_team == nullptr) fail(fn, "new_team is NULL");
  *new_team = SHMEM_TEAM_INVALID;
  if (parent_team == SHMEM_TEAM_INVALID) return -1;
  const Team* p = team(parent_team, fn);
  // Every PE of the parent passes the same arguments, so every one returns
  // here alike and none is left in tsu_team_split.
  const int64_t last = start + (static_cast<int64_t>(size) - 1) * stride;
  if (size < 1 || size > p->size || start < 0 || start >= p->size || last < 0 ||
      last >= p->size || (stride == 0 && size != 1) || !config_ok(config, config_mask))
    return -1;

  int index = -1;
  const int64_t d = static_cast<int64_t>(p->my_pe) - start;
  if (stride == 0) index = d == 0 ? 0 : -1;
  else if (d % stride == 0 && d / stride >= 0 && d / stride < size)
    index = static_cast<int>(d / stride);

  tsu_team_t out = TSU_TEAM_NULL;
  if (!split(p, index >= 0 ? 0 : -1, index >= 0 ? index : 0, &out)) return -1;
  if (index < 0) return 0;
  Team* t = make_team(p, start, stride, size, index, out, config, config_mask, fn);
  if (t == nullptr) {
    (void)tsu_team_free(out);
    return -1;
  }
  *new_team = t;
  return 0;
}

SHMEM_API int shmem_team_split_2d(shmem_team_t parent_team, int xrange,
                                  const shmem_team_config_t* xaxis_config, long xaxis_mask,
                                  shmem_team_t* xaxis_team,
                                  const shmem_team_config_t* yaxis_config, long yaxis_mask,
                                  shmem_team_t* yaxis_team) {
  static constexpr const char* fn = "shmem_team_split_2d";
  check_init(fn);
  if (xaxis_team == nullptr || yaxis_team == nullptr) fail(fn, "xaxis_team or yaxis_team is NULL");
  *xaxis_team = SHMEM_TEAM_INVALID;
  *yaxis_team = SHMEM_TEAM_INVALID;
  if (parent_team == SHMEM_TEAM_INVALID) return -1;
  const Team* p = team(parent_team, fn);
  if (xrange < 1 || !config_ok(xaxis_config, xaxis_mask) || !config_ok(yaxis_config, yaxis_mask))
    return -1;
  // The parent's PEs laid out row by row, xrange to a row (the last row may
  // be short); a larger xrange than the parent is one row.
  const int n = p->size;
  const int xr = std::min(xrange, n);
  const int me = p->my_pe;
  const int row = me / xr;
  const int col = me % xr;
  const int xsize = std::min(xr, n - row * xr);
  const int ysize = (n - col + xr - 1) / xr;

  tsu_team_t xt = TSU_TEAM_NULL;
  tsu_team_t yt = TSU_TEAM_NULL;
  const bool xok = split(p, row, col, &xt);
  const bool yok = split(p, col, row, &yt);  // every parent PE makes both calls
  Team* x = xok ? make_team(p, row * xr, 1, xsize, col, xt, xaxis_config, xaxis_mask, fn)
                : nullptr;
  Team* y = yok ? make_team(p, col, xr, ysize, row, yt, yaxis_config, yaxis_mask, fn) : nullptr;
  if (x == nullptr || y == nullptr) {
    if (x != nullptr) shmem_team_destroy(x);
    else if (xok) (void)tsu_team_free(xt);
    if (y != nullptr) shmem_team_destroy(y);
    else if (yok) (void)tsu_team_free(yt);
    return -1;
  }
  *xaxis_team = x;
  *yaxis_team = y;
  return 0;
}

SHMEM_API void shmem_team_destroy(shmem_team_t t) {
  static constexpr const char* fn = "shmem_team_destroy";
  check_init(fn);
  if (t == SHMEM_TEAM_INVALID) return;
  Team* tm = team(t, fn);
  if (tm->predefined)
    fail(fn, "%s is a predefined team and cannot be destroyed",
         t == SHMEM_TEAM_WORLD ? "SHMEM_TEAM_WORLD" : "SHMEM_TEAM_SHARED");
  (void)tsu_team_free(tm->tsu);
  tm->magic = 0;
  delete tm;
}

}  // extern "C"
