#include "remote.hpp"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cstdlib>
#include <array>
#include <cstring>

#include "record_pool.hpp"
#include "scheduler.hpp"
#include "worker.hpp"

namespace tsu::ult {

// (Named in remote.hpp.)
struct SpawnRecord {
  uint64_t token;
  uint32_t creator;
  uint32_t fn_id;
  uint16_t arg_len;
  uint16_t flags;       // kSpawnDetached | kSpawnMigratable
  uint32_t stack_size;  // bytes (at most 1 GiB); 0: the runner's default
};

namespace {

enum : uint32_t {
  kAmSpawn = TSU_ULT_AM_FIRST,   // medium: args {count, load}; SpawnRecords
  kAmValues,                     // medium: args {count, load}; ValueRecords
  kAmLoad,                       // short: {runnable count}
  kAmAsk,                        // short: {max threads}: "give me work"
  kAmMoved,                      // (unused: moves are ValueRecords with kValueMoved)
  kAmNothing,                    // short: answer to kAmAsk with no work
  kAmReport,                     // medium: args {round}; sent[size], handled[size] (u32)
  kAmDone,                       // short: {round}: termination decided, stop
};

struct ValueRecord {
  uint64_t token;
  int32_t status;  // kValueMoved: the new runner's rank
  uint16_t len;
  uint16_t flags;  // kValueMoved
};
// Not a value: the thread was handed on to another rank (`status`), which
// will send its value; the creator's proxy follows it (watch, loss).  It
// travels in the values batch, so a full queue delays it (the batch retries)
// and never drops it.
constexpr uint16_t kValueMoved = 1;
constexpr uint16_t kSpawnDetached = 1;
constexpr uint16_t kSpawnMigratable = 2;
constexpr uint32_t kStackSizeMax = 1u << 30;  // as tsu_ult_attr_t.stack_size

uint16_t spawn_flags(const RemoteInfo& info) {
  return static_cast<uint16_t>((info.detached ? kSpawnDetached : 0) |
                               (info.migratable ? kSpawnMigratable : 0));
}
static_assert(sizeof(SpawnRecord) == 24 && sizeof(ValueRecord) == 16);

constexpr std::size_t pad8(std::size_t n) { return (n + 7) & ~std::size_t{7}; }

std::atomic<tsu_ult_remote_fn_t> g_fns[TSU_ULT_FN_MAX + 1];
std::atomic<Remote*> g_remote{nullptr};
// Handlers running now: ~Remote waits for 0 after clearing g_remote (both
// seq_cst, so a handler either sees nullptr or is counted before the wait).
std::atomic<int> g_in_handler{0};

struct HandlerScope {
  Remote* remote;
  HandlerScope() noexcept {
    g_in_handler.fetch_add(1, std::memory_order_seq_cst);
    remote = g_remote.load(std::memory_order_seq_cst);
  }
  ~HandlerScope() { g_in_handler.fetch_sub(1, std::memory_order_release); }
  HandlerScope(const HandlerScope&) = delete;
  HandlerScope& operator=(const HandlerScope&) = delete;
};

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

// Chunk buffers kept per destination for reuse (see Remote::Batch::spare):
// enough for the chunks that pile up while the destination's queue is full
// (up to 256 KiB each way), so a burst of spawns does not grow and trim
// malloc's arena over and over.
constexpr std::size_t kSpareChunks = 16;

std::size_t batch_max() {
  const std::size_t m = tsu_am_medium_max();
  return std::min<std::size_t>(m, 16 * 1024);
}

}  // namespace

// A batch payload: `count` records, each followed by its data (padded to 8
// bytes).  data_len(rec) is the record's data length, or kBadRecord; visit
// returns false to stop.  A malformed batch stops at its first bad record:
// nothing is ever read past `len`.
constexpr std::size_t kBadRecord = SIZE_MAX;
template <typename Rec, typename DataLen, typename Visit>
void for_each_record(const void* payload, std::size_t len, uint64_t count, DataLen&& data_len,
                     Visit&& visit) {
  const auto* p = static_cast<const unsigned char*>(payload);
  std::size_t off = 0;
  for (uint64_t i = 0; i < count; ++i) {
    Rec rec;
    if (off + sizeof rec > len) return;
    std::memcpy(&rec, p + off, sizeof rec);
    off += sizeof rec;
    const std::size_t n = data_len(rec);
    if (n == kBadRecord || off + n > len) return;
    if (!visit(rec, p + off)) return;
    off += pad8(n);
  }
}

// The AM handlers (progress context: they never block).
struct Handlers {
  static void spawn(tsu_am_token_t* tok, const uint64_t* args, uint32_t nargs, void* payload,
                    std::size_t len, void*) {
    HandlerScope scope;
    Remote* r = scope.remote;
    uint32_t src = 0;
    if (!r || nargs < 2 || tsu_am_source(tok, &src) != TSU_OK) return;
    r->count_handled(src);
    r->load_[src].store(static_cast<uint32_t>(args[1]), std::memory_order_relaxed);
    for_each_record<SpawnRecord>(
        payload, len, args[0],
        [&](const SpawnRecord& rec) {
          return rec.arg_len <= TSU_ULT_ARG_MAX && rec.creator < r->size_ &&
                         rec.stack_size <= kStackSizeMax
                     ? rec.arg_len
                     : kBadRecord;
        },
        [&](const SpawnRecord& rec, const unsigned char* arg) {
          auto* info = RecordPool<RemoteInfo>::make();
          if (!info) return false;
          info->token = rec.token;
          info->creator = rec.creator;
          info->runner.store(r->rank_, std::memory_order_relaxed);
          info->fn_id = rec.fn_id;
          info->detached = (rec.flags & kSpawnDetached) != 0;
          info->migratable = (rec.flags & kSpawnMigratable) != 0;
          info->stack_size = rec.stack_size;
          info->arg_len = rec.arg_len;
          std::memcpy(info->arg, arg, rec.arg_len);
          if (rec.creator != src) r->migrated_.fetch_add(1, std::memory_order_relaxed);
          r->start_local(info, false, nullptr, nullptr);
          return true;
        });
  }
  static void values(tsu_am_token_t* tok, const uint64_t* args, uint32_t nargs, void* payload,
                     std::size_t len, void*) {
    HandlerScope scope;
    Remote* r = scope.remote;
    uint32_t src = 0;
    if (!r || nargs < 2 || tsu_am_source(tok, &src) != TSU_OK) return;
    r->count_handled(src);
    r->load_[src].store(static_cast<uint32_t>(args[1]), std::memory_order_relaxed);
    for_each_record<ValueRecord>(
        payload, len, args[0],
        [](const ValueRecord& rec) { return rec.len <= TSU_ULT_VALUE_MAX ? rec.len : kBadRecord; },
        [&](const ValueRecord& rec, const unsigned char* value) {
          if (rec.flags & kValueMoved) {
            if (rec.status >= 0) r->proxy_moved(rec.token, static_cast<uint32_t>(rec.status));
          } else {
            r->complete_proxy(rec.token, rec.status, value, rec.len);
          }
          return true;
        });
  }
  static void load(tsu_am_token_t* tok, const uint64_t* args, uint32_t nargs, void*, std::size_t,
                   void*) {
    HandlerScope scope;
    Remote* r = scope.remote;
    uint32_t src = 0;
    if (!r || nargs < 1 || tsu_am_source(tok, &src) != TSU_OK) return;
    r->count_handled(src);
    r->load_[src].store(static_cast<uint32_t>(args[0]), std::memory_order_relaxed);
  }
  static void ask(tsu_am_token_t* tok, const uint64_t* args, uint32_t nargs, void*, std::size_t,
                  void*) {
    HandlerScope scope;
    Remote* r = scope.remote;
    uint32_t src = 0;
    if (!r || nargs < 1 || tsu_am_source(tok, &src) != TSU_OK) return;
    r->count_handled(src);
    r->give_work(src, static_cast<uint32_t>(std::min<uint64_t>(args[0], 1024)));
  }
  static void nothing(tsu_am_token_t* tok, const uint64_t*, uint32_t, void*, std::size_t, void*) {
    HandlerScope scope;
    Remote* r = scope.remote;
    uint32_t src = 0;
    if (!r || tsu_am_source(tok, &src) != TSU_OK) return;
    r->count_handled(src);
    r->asking_.store(false, std::memory_order_release);
  }
  // Termination messages are not counted (they are the counting).
  static void report(tsu_am_token_t* tok, const uint64_t* args, uint32_t nargs, void* payload,
                     std::size_t len, void*) {
    HandlerScope scope;
    Remote* r = scope.remote;
    uint32_t src = 0;
    if (!r || nargs < 1 || tsu_am_source(tok, &src) != TSU_OK) return;
    const std::size_t n = r->size_;
    if (len != 2 * n * sizeof(uint32_t) || args[0] == 0 || args[0] > UINT32_MAX) return;
    std::vector<uint32_t> v(2 * n);
    std::memcpy(v.data(), payload, len);
    r->store_report(src, static_cast<uint32_t>(args[0]), v.data(), v.data() + n,
                    static_cast<uint32_t>(n));
  }
  static void done(tsu_am_token_t*, const uint64_t*, uint32_t, void*, std::size_t, void*) {
    HandlerScope scope;
    if (scope.remote) scope.remote->terminated_.store(true, std::memory_order_release);
  }
};

bool load_lb_settings(LbSettings& out, const char*& error) noexcept {
  out = LbSettings{};
  if (const char* v = std::getenv("TSU_ULT_LB")) {
    if (std::strcmp(v, "0") && std::strcmp(v, "1")) {
      error = "TSU_ULT_LB: expected 0 or 1";
      return false;
    }
    out.enabled = v[0] == '1';
  }
  if (const char* v = std::getenv("TSU_ULT_LB_PERIOD")) {
    char* end = nullptr;
    const double x = std::strtod(v, &end);
    double mul = 1e9;  // seconds by default
    if (!std::strcmp(end, "ns")) mul = 1;
    else if (!std::strcmp(end, "us")) mul = 1e3;
    else if (!std::strcmp(end, "ms")) mul = 1e6;
    else if (*end && std::strcmp(end, "s")) mul = -1;
    if (end == v || mul < 0 || x <= 0 || x * mul < 1000 || x * mul > 10e9) {
      error = "TSU_ULT_LB_PERIOD: expected a time from 1us to 10s (e.g. 500us, 2ms)";
      return false;
    }
    out.period_ns = static_cast<uint64_t>(x * mul);
  }
  if (const char* v = std::getenv("TSU_ULT_LB_THRESHOLD")) {
    char* end = nullptr;
    const unsigned long t = std::strtoul(v, &end, 10);
    if (end == v || *end || t == 0 || t > 1'000'000) {
      error = "TSU_ULT_LB_THRESHOLD: expected a count from 1 to 1000000";
      return false;
    }
    out.threshold = static_cast<uint32_t>(t);
  }
  return true;
}

Remote::Remote(Scheduler& s, uint32_t rank, uint32_t size, const LbSettings& lb)
    : sched_(s),
      rank_(rank),
      size_(size),
      lb_(lb),
      load_(size),
      lost_(size),
      sent_to_(new std::atomic<uint32_t>[size]),
      handled_from_(new std::atomic<uint32_t>[size]),
      reports_(size) {
  for (uint32_t i = 0; i < size; ++i) {
    sent_to_[i].store(0, std::memory_order_relaxed);
    handled_from_[i].store(0, std::memory_order_relaxed);
  }
  out_.reserve(size);
  watches_.reserve(size);
  for (uint32_t i = 0; i < size; ++i) {
    out_.push_back(std::make_unique<Batch>());
    out_.back()->spare.reserve(kSpareChunks);  // pushes into it never allocate
    watches_.push_back(std::make_unique<Watch>());
    watches_.back()->self = this;
    watches_.back()->peer = i;
  }
}

Remote::~Remote() {
  g_remote.store(nullptr, std::memory_order_seq_cst);
  while (g_in_handler.load(std::memory_order_seq_cst) != 0) cpu_relax();
}

tsu_status_t Remote::start() {
  g_remote.store(this, std::memory_order_release);
  const struct {
    uint32_t id;
    tsu_am_handler_t fn;
  } hs[] = {{kAmSpawn, Handlers::spawn}, {kAmValues, Handlers::values}, {kAmLoad, Handlers::load},
            {kAmAsk, Handlers::ask},     {kAmNothing, Handlers::nothing},
            {kAmReport, Handlers::report}, {kAmDone, Handlers::done}};
  for (const auto& h : hs) {
    const tsu_status_t st = tsu_am_register(h.id, h.fn, nullptr);
    if (st != TSU_OK) return st;
  }
  return TSU_OK;
}

tsu_status_t Remote::register_fn(uint32_t id, tsu_ult_remote_fn_t fn) {
  if (id > TSU_ULT_FN_MAX) return TSU_ERR_INVALID_ARG;
  g_fns[id].store(fn, std::memory_order_release);
  return TSU_OK;
}

// ---- The proxy table ---------------------------------------------------------------

uint64_t ProxyTable::insert(Ult* p) noexcept {
  uint32_t i = free_;
  if (i != kNone) {
    free_ = slots_[i].next_free;
  } else {
    if (slots_.size() >= kNone) return 0;
    try {
      slots_.emplace_back();
    } catch (...) {
      return 0;
    }
    i = static_cast<uint32_t>(slots_.size() - 1);
  }
  slots_[i].proxy = p;
  return token_of(i);
}

Ult* ProxyTable::find(uint64_t token) const noexcept {
  const auto i = static_cast<uint32_t>(token);
  if (i >= slots_.size() || slots_[i].gen != static_cast<uint32_t>(token >> 32)) return nullptr;
  return slots_[i].proxy;
}

Ult* ProxyTable::take(uint64_t token) noexcept {
  Ult* p = find(token);
  if (!p) return nullptr;
  Slot& s = slots_[static_cast<uint32_t>(token)];
  s.proxy = nullptr;
  if (++s.gen == 0) s.gen = 1;
  s.next_free = free_;
  free_ = static_cast<uint32_t>(token);
  return p;
}

// ---- Spawning ------------------------------------------------------------------------

void* Remote::run_spawned(void* a) {
  auto* info = static_cast<RemoteInfo*>(a);
  tsu_ult_remote_fn_t fn = info->fn_id <= TSU_ULT_FN_MAX
                               ? g_fns[info->fn_id].load(std::memory_order_acquire)
                               : nullptr;
  tsu_status_t st = TSU_OK;
  std::size_t vlen = 0;
  // The value is written here, not in info: info->value shares its bytes
  // with info->arg, which the function reads meanwhile.
  unsigned char value[TSU_ULT_VALUE_MAX];
  if (fn) {
    fn(info->arg, info->arg_len, value, &vlen);
    if (vlen > TSU_ULT_VALUE_MAX) {
      vlen = TSU_ULT_VALUE_MAX;
      st = TSU_ERR_TRUNCATED;
    }
  } else {
    st = TSU_ERR_INVALID_ARG;  // not registered here: the creator learns it at join
  }
  info->value_len = static_cast<uint16_t>(vlen);
  Remote* r = g_remote.load(std::memory_order_acquire);
  if (info->home || !r) {
    if (vlen) std::memcpy(info->value, value, vlen);  // the record is the handle
    if (Ult* self = current_ult()) self->error = st;
  } else if (!info->detached) {
    if (info->creator == r->rank_) {
      r->complete_proxy(info->token, st, value, vlen);  // came back home
    } else {
      // The last thread this worker has to run: its value leaves now, before
      // the worker goes back to its loop (one loop turn less on the remote
      // create+join path); with more to run it waits in the batch.
      Worker* w = current_worker();
      const bool last = !w || !w->has_runnable();
      r->queue_value(info->creator, info->token, st, value, vlen, last);
    }
  }
  return nullptr;
}

void Remote::start_local(RemoteInfo* info, bool home, const char* name, Ult** out) noexcept {
  // Threads run here for a handle elsewhere are detached here: the creator
  // holds the handle (a proxy).  Our own spawns keep the record as the handle.
  const bool ours = home;
  info->home = home;
  CreateArgs c;
  c.fn = &Remote::run_spawned;
  c.arg = info;
  c.detached = ours ? info->detached : true;
  c.remote = info;
  c.origin_rank = info->creator;
  c.stack_size = info->stack_size;  // (0: this rank's default)
  c.name = name;
  Ult* u = nullptr;
  if (create_thread(sched_, c, &u) != TSU_OK) {
    if (!ours && !info->detached) {
      if (info->creator == rank_) complete_proxy(info->token, TSU_ERR_NO_MEMORY, nullptr, 0);
      else queue_value(info->creator, info->token, TSU_ERR_NO_MEMORY, nullptr, 0);
    }
    RecordPool<RemoteInfo>::drop(info);
    return;
  }
  if (out) *out = u;
}

tsu_status_t Remote::spawn(tsu_ult_t* out, uint32_t rank, uint32_t fn_id, const void* arg,
                           std::size_t len, const CreateArgs& attr) {
  if (closed()) return TSU_ERR_NOT_INITIALIZED;  // tsu_finalize ran
  if (fn_id > TSU_ULT_FN_MAX || !g_fns[fn_id].load(std::memory_order_acquire))
    return TSU_ERR_INVALID_ARG;
  if (len > TSU_ULT_ARG_MAX || (len && !arg)) return TSU_ERR_INVALID_ARG;
  const bool detached = attr.detached;
  if (!out && !detached) return TSU_ERR_NULL_POINTER;
  // Only threads the program let the balancer place may move: a named rank
  // is where the thread's data is.
  const bool migratable = rank == TSU_ULT_ANY_RANK || attr.migratable;
  if (rank == TSU_ULT_ANY_RANK) rank = pick_any();
  if (rank >= size_) return TSU_ERR_BAD_RANK;
  if (lost_[rank].load(std::memory_order_acquire)) return TSU_ERR_PEER_LOST;
  auto* info = RecordPool<RemoteInfo>::make();
  if (!info) return TSU_ERR_NO_MEMORY;
  info->creator = rank_;
  info->runner.store(rank, std::memory_order_relaxed);
  info->fn_id = fn_id;
  info->stack_size = static_cast<uint32_t>(attr.stack_size);  // (read_attr: at most 1 GiB)
  info->detached = detached;
  info->migratable = migratable;
  info->arg_len = static_cast<uint16_t>(len);
  if (rank == rank_) {
    if (len) std::memcpy(info->arg, arg, len);
    Ult* u = nullptr;
    start_local(info, true, attr.name, &u);
    if (!u) return TSU_ERR_NO_MEMORY;
    if (out) *out = detached ? nullptr : reinterpret_cast<tsu_ult_t>(u);
    return TSU_OK;
  }
  // Another rank: a proxy record stands for the thread here.
  Worker* w = current_worker();
  const bool on_worker = w && &w->scheduler() == &sched_;
  Ult* proxy = nullptr;
  if (!detached) {
    proxy = sched_.new_record(on_worker ? w : nullptr);
    if (!proxy) {
      RecordPool<RemoteInfo>::drop(info);
      return TSU_ERR_NO_MEMORY;
    }
    proxy->proxy = true;
    proxy->remote = info;
    proxy->id = sched_.next_id(on_worker ? w : nullptr);
    proxy->origin_rank = rank_;
    proxy->state.store(State::kBlocked, std::memory_order_relaxed);
    {
      SpinGuard lock(proxies_lock_);
      info->token = proxies_.insert(proxy);
    }
    if (!info->token) {
      sched_.free_record(proxy);  // drops info
      return TSU_ERR_NO_MEMORY;
    }
    watch(rank);
    // Lost between the check above and the insert: on_peer_lost's scan of
    // the proxies may have missed ours (lost_ is set before that scan, which
    // takes proxies_lock_ as our insert did), so fail it here.
    if (lost_[rank].load(std::memory_order_acquire)) on_peer_lost(rank);
  }
  // Estimate: the target's queue grows by one until it tells us otherwise.
  load_[rank].fetch_add(1, std::memory_order_relaxed);
  // The argument goes from the caller's buffer to the batch: a proxy's record
  // never holds it (its buffer is for the value, which another pthread may
  // write as soon as the spawn has left).
  queue_spawn(rank, *info, arg, !on_worker);  // a pthread's spawn leaves at once
  if (detached) RecordPool<RemoteInfo>::drop(info);
  if (out) *out = reinterpret_cast<tsu_ult_t>(proxy);
  return TSU_OK;
}

// ---- Batches -----------------------------------------------------------------------

void Remote::append(Batch& b, std::deque<Chunk>& q, const void* head, std::size_t head_len,
                    const void* body, std::size_t body_len) noexcept {
  const std::size_t need = head_len + pad8(body_len);
  if (b.empty()) outgoing_.fetch_add(1, std::memory_order_release);
  if (q.empty() || q.back().data.size() + need > batch_max()) {
    q.emplace_back();
    if (!b.spare.empty()) {
      // A buffer that left before: its capacity is kept (no regrowth).
      q.back().data = std::move(b.spare.back());
      b.spare.pop_back();
    } else {
      // A few records' room at once (small enough for malloc's per-thread
      // cache), then the vector grows for large batches.
      q.back().data.reserve(std::min<std::size_t>(batch_max(), 512));
    }
  }
  Chunk& c = q.back();
  const std::size_t at = c.data.size();
  c.data.resize(at + need);
  std::memcpy(c.data.data() + at, head, head_len);
  if (body_len) std::memcpy(c.data.data() + at + head_len, body, body_len);
  ++c.count;
}

void Remote::queue_spawn(uint32_t dst, const RemoteInfo& info, const void* arg,
                         bool flush_now) noexcept {
  Batch& b = *out_[dst];
  std::lock_guard lock(b.mu);
  const SpawnRecord rec{info.token,   info.creator,      info.fn_id,
                        info.arg_len, spawn_flags(info), info.stack_size};
  append(b, b.spawns, &rec, sizeof rec, arg, info.arg_len);
  // A full chunk leaves at once; so does everything when asked to.
  if (flush_now || b.spawns.size() > 1) send_chunks(dst, b, true);
}

void Remote::queue_spawn(uint32_t dst, const SpawnRecord& rec, const void* arg) noexcept {
  Batch& b = *out_[dst];
  std::lock_guard lock(b.mu);
  append(b, b.spawns, &rec, sizeof rec, arg, rec.arg_len);
  if (b.spawns.size() > 1) send_chunks(dst, b, true);
}

void Remote::queue_value(uint32_t dst, uint64_t token, tsu_status_t st, const void* v,
                         std::size_t len, bool flush_now, uint16_t flags) noexcept {
  Batch& b = *out_[dst];
  std::lock_guard lock(b.mu);
  const ValueRecord rec{token, st, static_cast<uint16_t>(len), flags};
  append(b, b.values, &rec, sizeof rec, v, len);
  if (flush_now || b.values.size() > 1) send_chunks(dst, b, false);
}

bool Remote::send_chunks(uint32_t dst, Batch& b, bool spawns) noexcept {
  // (Also from a ULT's end, outside the workers' passes.)  Closed: nothing
  // leaves any more; the chunks go with the layer.
  Gate gate(*this);
  if (!gate) return false;
  std::deque<Chunk>& q = spawns ? b.spawns : b.values;
  const bool had = !b.empty();
  bool all = true;
  while (!q.empty()) {
    Chunk& c = q.front();
    const uint64_t args[2] = {c.count, runnable()};
    const tsu_status_t st = tsu_try_am_medium(dst, spawns ? kAmSpawn : kAmValues, args, 2,
                                              c.data.data(), c.data.size(), tsu_cb_none());
    if (st == TSU_EAGAIN) {
      all = false;
      break;
    }
    if (st == TSU_OK) {
      count_sent(dst);
      if (Worker* w = current_worker()) w->note_sent();
    } else {
      // The rank is gone (or unreachable): joiners get the error now; exit
      // values for it have nobody to go to.
      if (spawns) fail_chunk(dst, c, st == TSU_ERR_PEER_LOST ? st : TSU_ERR_UNREACHABLE);
      if (st == TSU_ERR_PEER_LOST) lost_[dst].store(true, std::memory_order_release);
    }
    if (b.spare.size() < kSpareChunks) {
      c.data.clear();
      b.spare.push_back(std::move(c.data));
    }
    q.pop_front();
  }
  if (had && b.empty()) outgoing_.fetch_sub(1, std::memory_order_release);
  return all;
}

void Remote::fail_chunk(uint32_t dst, const Chunk& c, tsu_status_t st) noexcept {
  std::size_t off = 0;
  while (off + sizeof(SpawnRecord) <= c.data.size()) {
    SpawnRecord rec;
    std::memcpy(&rec, c.data.data() + off, sizeof rec);
    off += sizeof rec + pad8(rec.arg_len);
    if (!rec.token || (rec.flags & kSpawnDetached)) continue;  // detached: nobody waits
    if (rec.creator == rank_) {
      complete_proxy(rec.token, st, nullptr, 0);
    } else if (rec.creator != dst && rec.creator < size_) {
      // A thread we were handing on for a creator elsewhere (give_work): its
      // creator learns the error from us, by a value record (it may not
      // know of the move yet, and if the thief is only unreachable from
      // here, nothing else would ever end its join).  Queued by flush():
      // we hold dst's batch lock here, and lock order between two batches
      // is not fixed.
      try {
        std::lock_guard lock(orphans_mu_);
        orphans_.push_back(Orphan{rec.token, rec.creator, st});
        has_orphans_.store(true, std::memory_order_release);
      } catch (...) {
        // Out of memory: the creator's watch on the thief is left to end it
        // (a loss; an unreachable thief then never ends it).
      }
    }
  }
}

void Remote::fail_spawns(uint32_t dst, Batch& b, tsu_status_t st) noexcept {
  const bool had = !b.empty();
  while (!b.spawns.empty()) {
    fail_chunk(dst, b.spawns.front(), st);
    b.spawns.pop_front();
  }
  if (st == TSU_ERR_PEER_LOST) lost_[dst].store(true, std::memory_order_release);
  if (had && b.empty()) outgoing_.fetch_sub(1, std::memory_order_release);
}

bool Remote::flush() noexcept {
  if (has_orphans_.load(std::memory_order_acquire)) {
    std::vector<Orphan> v;
    {
      std::lock_guard lock(orphans_mu_);
      v.swap(orphans_);
      has_orphans_.store(false, std::memory_order_relaxed);
    }
    for (const Orphan& o : v) queue_value(o.creator, o.token, o.status, nullptr, 0);
  }
  if (!has_outgoing()) return true;
  bool all = true;
  for (uint32_t d = 0; d < size_; ++d) {
    Batch& b = *out_[d];
    std::unique_lock lock(b.mu, std::try_to_lock);
    if (!lock.owns_lock()) {
      all = false;  // someone is sending it right now
      continue;
    }
    if (b.empty()) continue;
    all &= send_chunks(d, b, true);
    all &= send_chunks(d, b, false);
  }
  return all;
}

// ---- Exit values and lost ranks -----------------------------------------------------

void Remote::complete_proxy(uint64_t token, tsu_status_t st, const void* v,
                            std::size_t len) noexcept {
  Ult* p = nullptr;
  {
    SpinGuard lock(proxies_lock_);
    p = proxies_.take(token);
  }
  if (!p) return;  // unknown or completed already
  p->remote->value_len = static_cast<uint16_t>(len);
  if (len) std::memcpy(p->remote->value, v, len);
  p->error = st;
  p->join_lock.lock();
  p->state.store(State::kDone, std::memory_order_relaxed);
  p->done = true;
  const bool detached = p->detached;
  Waiter* joiner = p->joiner;
  p->join_lock.unlock();
  if (detached) {
    sched_.free_record(p);
  } else if (joiner) {
    wake(joiner);
  }
}

void Remote::watch(uint32_t peer) noexcept {
  if (peer == rank_) return;
  Gate gate(*this);
  if (!gate) return;
  Watch& w = *watches_[peer];
  // Posted already (every spawn to the rank comes here): a load, not a
  // failing compare-exchange (a locked instruction) each time.
  if (w.state.load(std::memory_order_acquire) != 0) return;
  int expected = 0;
  if (!w.state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) return;
  static char sink[8];
  const tsu_status_t st = tsu_try_recv(
      peer, TSU_ULT_WATCH_TAG, TSU_TAG_EXACT, sink, 0, &w.status,
      tsu_cb(
          [](tsu_status_t s, void* a) {
            auto* wt = static_cast<Watch*>(a);
            if (s == TSU_ERR_PEER_LOST) wt->self->on_peer_lost(wt->peer);
            wt->state.store(2, std::memory_order_release);
          },
          &w),
      &w.handle);
  if (st != TSU_OK) {
    w.state.store(2, std::memory_order_release);
    if (st == TSU_ERR_PEER_LOST) on_peer_lost(peer);
  }
}

void Remote::proxy_moved(uint64_t token, uint32_t runner) noexcept {
  if (runner >= size_) return;
  {
    SpinGuard lock(proxies_lock_);
    Ult* p = proxies_.find(token);
    if (!p) return;  // already completed
    p->remote->runner.store(runner, std::memory_order_relaxed);
  }
  follow_runner(runner);
}

void Remote::follow_runner(uint32_t runner) noexcept {
  watch(runner);
  // The runner may be lost already, with on_peer_lost's scan done before our
  // proxy named it: then nothing else would end the join.  The caller set
  // the runner under proxies_lock_, and on_peer_lost sets lost_ before it
  // takes that lock to scan, so either the scan saw our runner or this load
  // sees lost_ (the lock orders the two).
  if (lost_[runner].load(std::memory_order_acquire)) on_peer_lost(runner);
}

void Remote::on_peer_lost(uint32_t peer) noexcept {
  lost_[peer].store(true, std::memory_order_release);
  std::vector<uint64_t> tokens;
  {
    SpinGuard lock(proxies_lock_);
    proxies_.for_each([&](uint64_t t, Ult* p) {
      if (p->remote->runner.load(std::memory_order_relaxed) == peer) tokens.push_back(t);
    });
  }
  for (uint64_t t : tokens) complete_proxy(t, TSU_ERR_PEER_LOST, nullptr, 0);
}

// ---- Load balancing ------------------------------------------------------------------

uint32_t Remote::runnable() const noexcept {
  uint32_t n = 0;
  for (uint32_t i = 0; i < sched_.worker_count(); ++i) {
    Worker& w = sched_.worker(i);
    n += w.queue().size_hint() + (w.has_nursery() ? 1 : 0);
  }
  return n;
}

uint32_t Remote::pick_any() noexcept {
  if (!lb_.enabled) {
    static std::atomic<uint32_t> rr{0};
    for (uint32_t k = 0; k < size_; ++k) {
      const uint32_t r = rr.fetch_add(1, std::memory_order_relaxed) % size_;
      if (!lost_[r].load(std::memory_order_relaxed)) return r;
    }
    return rank_;
  }
  uint32_t best = rank_, best_load = runnable();
  for (uint32_t r = 0; r < size_; ++r) {
    if (r == rank_ || lost_[r].load(std::memory_order_relaxed)) continue;
    const uint32_t l = load_[r].load(std::memory_order_relaxed);
    if (l + lb_.threshold / 2 < best_load) {
      best = r;
      best_load = l;
    }
  }
  return best;
}

void Remote::give_work(uint32_t thief, uint32_t max) noexcept {
  // The hand-over of threads that have not started to an idle rank (runs in
  // the kAmAsk handler).  The thief may be lost at any point of it; each
  // thread handed over must then end its joiner's wait with an error:
  // * our own spawns (the user holds the record): the record becomes the
  //   proxy, named in the table with the thief as runner *before* the spawn
  //   is queued, and is followed (watch + the lost_ check, follow_runner);
  //   a send that fails ends it (fail_chunk).  Once it is published, a loss
  //   (or a value) may complete it and, if its handle was detached, free
  //   it: nothing of u or its RemoteInfo is read after that point.
  // * threads we ran for a creator elsewhere: the creator is told of the
  //   move by a value record (kValueMoved, in its values batch: retried
  //   until it leaves, never dropped) and then watches the thief itself; a
  //   send to the thief that fails sends the creator the error (fail_chunk).
  const TestFaults& faults = sched_.settings().faults;
  std::vector<Ult*> taken;
  try {
    taken.reserve(max);  // take_if's push_back never allocates below
  } catch (...) {
    return;  // out of memory: no hand-over (the thief asks again later)
  }
  for (uint32_t i = 0; i < sched_.worker_count() && taken.size() < max; ++i) {
    sched_.worker(i).queue().take_if(
        [](const Ult* u) {
          // Not started, and placed by the balancer or let move by its spawner.
          return u->remote && !u->proxy && u->remote->migratable &&
                 u->state.load(std::memory_order_relaxed) == State::kNew;
        },
        max - static_cast<uint32_t>(taken.size()), taken);
  }
  if (taken.empty()) {
    if (tsu_try_am_short(thief, kAmNothing, nullptr, 0, tsu_cb_none()) == TSU_OK)
      count_sent(thief);
    return;
  }
  for (Ult* u : taken) {
    RemoteInfo* info = u->remote;
    if (info->home) {
      // Ours: the record the user holds becomes the proxy of the moved thread
      // (proxy is read by joiners under the join lock).  Its argument is
      // copied out first: once the proxy is in the table its buffer is for
      // the value.  Its slot first: a thread that cannot have one (out of
      // memory) stays here.  Until the runner is published below, no loss
      // scan matches it (runner is still us) and nobody knows the token.
      unsigned char arg[TSU_ULT_ARG_MAX];
      std::memcpy(arg, info->arg, info->arg_len);
      uint64_t token;
      {
        SpinGuard lock(proxies_lock_);
        token = proxies_.insert(u);
      }
      if (!token) {
        sched_.make_ready(u);  // (never fails: Scheduler::make_ready)
        continue;
      }
      info->home = false;
      u->join_lock.lock();
      const bool detached = u->detached;
      if (!detached) {
        info->token = token;
        u->proxy = true;
        u->state.store(State::kBlocked, std::memory_order_relaxed);
      }
      u->join_lock.unlock();
      info->detached = detached;
      const SpawnRecord rec{detached ? 0 : token, rank_,
                            info->fn_id,          info->arg_len,
                            spawn_flags(*info),   info->stack_size};
      if (u->home) u->home->live_remove(u);
      sched_.note_finished();  // no longer runs here
      migrated_.fetch_add(1, std::memory_order_relaxed);
      if (detached) {
        {
          SpinGuard lock(proxies_lock_);
          proxies_.take(token);  // detached meanwhile: nobody waits for a value
        }
        sched_.free_record(u);  // deletes info
      } else {
        {
          SpinGuard lock(proxies_lock_);
          info->runner.store(thief, std::memory_order_relaxed);  // published
        }
        follow_runner(thief);
      }
      queue_spawn(thief, rec, arg);
    } else {
      // A runner's record (detached here): no value comes into it.
      const SpawnRecord rec{info->token,   info->creator,      info->fn_id,
                            info->arg_len, spawn_flags(*info), info->stack_size};
      queue_spawn(thief, rec, info->arg);
      if (!info->detached) {
        if (info->creator == rank_) {
          // Our own thread that had come back: our proxy follows it.
          {
            SpinGuard lock(proxies_lock_);
            if (Ult* p = proxies_.find(info->token))
              p->remote->runner.store(thief, std::memory_order_relaxed);
          }
          follow_runner(thief);
        } else if (info->creator != thief) {
          queue_value(info->creator, info->token, static_cast<tsu_status_t>(thief), nullptr, 0,
                      !faults.handover_eagain, kValueMoved);
        }
      }
      migrated_.fetch_add(1, std::memory_order_relaxed);
      if (u->home) u->home->live_remove(u);
      sched_.free_record(u);  // deletes info
      sched_.note_finished();
    }
  }
  // Leaves now: the thief is idle.  (Test faults: the first try finds the
  // queue full, so the batch leaves at a later pass; or the thief is taken
  // as lost.)
  Batch& b = *out_[thief];
  std::lock_guard lock(b.mu);
  if (faults.handover_lost) fail_spawns(thief, b, TSU_ERR_PEER_LOST);
  else if (!faults.handover_eagain) send_chunks(thief, b, true);
}

void Remote::poll(Worker&, bool idle) noexcept {
  if (Gate gate(*this); gate) poll_open(idle);
}

void Remote::on_tsunagi_finalize(void* remote) noexcept { static_cast<Remote*>(remote)->close(); }

void Remote::close() noexcept {
  closed_.store(true, std::memory_order_seq_cst);
  while (in_calls_.load(std::memory_order_seq_cst) != 0) sched_yield();
  // No value can come any more: end the joins of threads elsewhere.
  std::vector<uint64_t> tokens;
  {
    SpinGuard lock(proxies_lock_);
    proxies_.for_each([&](uint64_t t, Ult*) { tokens.push_back(t); });
  }
  for (uint64_t t : tokens) complete_proxy(t, TSU_ERR_NOT_INITIALIZED, nullptr, 0);
}

void Remote::poll_open(bool idle) noexcept {
  if (has_outgoing()) flush();
  tsu_progress();  // manual progress: the workers drive it (harmless otherwise)
  if (!lb_.enabled || size_ == 1) return;
  const uint64_t now = now_ns();
  uint64_t last = last_lb_ns_.load(std::memory_order_relaxed);
  if (now - last < lb_.period_ns ||
      !last_lb_ns_.compare_exchange_strong(last, now, std::memory_order_relaxed))
    return;
  const uint32_t mine = runnable();
  const uint32_t prev = last_sent_load_.load(std::memory_order_relaxed);
  const uint32_t diff = mine > prev ? mine - prev : prev - mine;
  if (diff >= lb_.threshold || (mine == 0) != (prev == 0)) {
    last_sent_load_.store(mine, std::memory_order_relaxed);
    const uint64_t arg = mine;
    for (uint32_t r = 0; r < size_; ++r) {
      if (r == rank_ || lost_[r].load(std::memory_order_relaxed)) continue;
      if (tsu_try_am_short(r, kAmLoad, &arg, 1, tsu_cb_none()) == TSU_OK) count_sent(r);
    }
  }
  // Idle: ask the most loaded rank for threads that have not started.
  if (mine == 0 && idle) {
    const bool asking = asking_.load(std::memory_order_acquire);
    if (asking && now - asked_ns_.load(std::memory_order_relaxed) < 20 * lb_.period_ns) return;
    uint32_t victim = rank_, most = lb_.threshold;
    for (uint32_t r = 0; r < size_; ++r) {
      if (r == rank_ || lost_[r].load(std::memory_order_relaxed)) continue;
      const uint32_t l = load_[r].load(std::memory_order_relaxed);
      if (l > most) {
        victim = r;
        most = l;
      }
    }
    if (victim == rank_) return;
    const uint64_t want = std::max<uint32_t>(1, most / 2);
    if (tsu_try_am_short(victim, kAmAsk, &want, 1, tsu_cb_none()) == TSU_OK) {
      count_sent(victim);
      asking_.store(true, std::memory_order_release);
      asked_ns_.store(now, std::memory_order_relaxed);
      load_[victim].store(most - static_cast<uint32_t>(want), std::memory_order_relaxed);
    }
  }
}

// ---- Termination ---------------------------------------------------------------------
//
// Counting termination among the surviving ranks, by point-to-point
// messages (a collective over the world fails once a rank is lost, and a
// rank that left early would strand the others' spawns to it).  Round k:
// each rank, once it runs nothing and has nothing left to send, sends every
// rank it believes alive its report: messages of the layer sent to and
// handled from each rank.  With the reports of round k from every survivor
// (a lost rank is waited for no longer), a rank decides: terminated when,
// for every pair a, b of survivors, a's sent-to-b equals b's handled-from-a
// in round k, and no survivor's counts changed since round k-1 (it was quiet
// at both reports and nothing reached it in between).  The decider tells the
// survivors (kAmDone), so a rank whose view still holds a lost rank (it has
// not noticed the loss yet, or it got the lost rank's last report) stops too.
// A rank reaches round k+1 only after every survivor's round-k report, so
// reports of rounds k-1..k+1 are all that are ever kept.

bool Remote::store_report(uint32_t src, uint32_t round, const uint32_t* sent,
                          const uint32_t* handled, uint32_t n) noexcept {
  std::lock_guard lock(reports_mu_);
  Report& r = reports_[src][round % kReportSlots];
  r.round = round;
  r.sent.assign(sent, sent + n);
  r.handled.assign(handled, handled + n);
  return true;
}

bool Remote::have_reports(uint32_t round) noexcept {
  std::lock_guard lock(reports_mu_);
  for (uint32_t a = 0; a < size_; ++a) {
    if (lost_[a].load(std::memory_order_acquire)) continue;
    if (reports_[a][round % kReportSlots].round != round) return false;
  }
  return true;
}

bool Remote::terminated(uint32_t round) noexcept {
  if (round < 2) return false;
  std::lock_guard lock(reports_mu_);
  auto alive = [&](uint32_t a) { return !lost_[a].load(std::memory_order_acquire); };
  for (uint32_t a = 0; a < size_; ++a) {
    if (!alive(a)) continue;
    const Report& now = reports_[a][round % kReportSlots];
    const Report& before = reports_[a][(round - 1) % kReportSlots];
    if (now.round != round || before.round != round - 1) return false;
    for (uint32_t b = 0; b < size_; ++b) {
      if (!alive(b)) continue;
      const Report& other = reports_[b][round % kReportSlots];
      if (other.round != round) return false;
      if (now.sent[b] != before.sent[b] || now.handled[b] != before.handled[b]) return false;
      if (b != a && now.sent[b] != other.handled[a]) return false;
    }
  }
  return true;
}

bool Remote::send_to_survivors(uint32_t am, const uint64_t* args, uint32_t nargs,
                               const void* payload, std::size_t len) noexcept {
  for (uint32_t r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    for (;;) {
      if (lost_[r].load(std::memory_order_acquire)) break;
      const tsu_status_t st =
          payload ? tsu_try_am_medium(r, am, args, nargs, payload, len, tsu_cb_none())
                  : tsu_try_am_short(r, am, args, nargs, tsu_cb_none());
      if (st == TSU_OK) break;
      if (st == TSU_ERR_PEER_LOST) {
        on_peer_lost(r);
        break;
      }
      if (st != TSU_EAGAIN) return false;
      tsu_progress();
    }
  }
  return true;
}

tsu_status_t Remote::finish_by_allreduce() {
  uint64_t prev = UINT64_MAX;
  for (;;) {
    while (sched_.live() != 0 || !flush()) {
      tsu_progress();
      timespec ts{0, 50'000};
      nanosleep(&ts, nullptr);
    }
    uint64_t in[2] = {0, 0}, sum[2] = {0, 0};
    for (uint32_t r = 0; r < size_; ++r) {
      in[0] += sent_to_[r].load(std::memory_order_relaxed);
      in[1] += handled_from_[r].load(std::memory_order_relaxed);
    }
    tsu_counter_t c;
    tsu_counter_init(&c);
    tsu_status_t st = tsu_try_allreduce(TSU_TEAM_WORLD, in, sum, 2, TSU_DT_UINT64, TSU_OP_SUM,
                                        tsu_counter_cb(&c));
    if (st == TSU_OK) st = tsu_counter_wait(&c, 1);
    if (st != TSU_OK) return st;
    if (sum[0] == sum[1] && sum[0] == prev) return TSU_OK;
    prev = sum[0] == sum[1] ? sum[0] : UINT64_MAX;
  }
}

tsu_status_t Remote::finish() {
  auto pause = [] {
    tsu_progress();
    timespec ts{0, 50'000};
    nanosleep(&ts, nullptr);
  };
  tsu_status_t st = TSU_OK;
  if (2 * size_ * sizeof(uint32_t) > tsu_am_medium_max()) {
    // A report does not fit one message: the collective count (a rank lost
    // meanwhile makes it fail with TSU_ERR_PEER_LOST).
    st = finish_by_allreduce();
  } else {
    // Any rank's loss must end the wait for its report: watch them all.
    for (uint32_t r = 0; r < size_; ++r) watch(r);
    std::vector<uint32_t> mine(2 * size_);
    for (uint32_t round = 1; !terminated_.load(std::memory_order_acquire); ++round) {
      // Quiet here: nothing runs, nothing waits to leave.
      while ((sched_.live() != 0 || !flush()) && !terminated_.load(std::memory_order_acquire))
        pause();
      if (terminated_.load(std::memory_order_acquire)) break;
      for (uint32_t r = 0; r < size_; ++r) {
        mine[r] = sent_to_[r].load(std::memory_order_relaxed);
        mine[size_ + r] = handled_from_[r].load(std::memory_order_relaxed);
      }
      store_report(rank_, round, mine.data(), mine.data() + size_, size_);
      const uint64_t arg = round;
      if (!send_to_survivors(kAmReport, &arg, 1, mine.data(), mine.size() * sizeof(uint32_t))) {
        st = TSU_ERR_UNREACHABLE;
        break;
      }
      while (!have_reports(round) && !terminated_.load(std::memory_order_acquire)) pause();
      if (terminated_.load(std::memory_order_acquire)) break;
      if (terminated(round)) {
        terminated_.store(true, std::memory_order_release);
        send_to_survivors(kAmDone, &arg, 1, nullptr, 0);
      }
    }
    for (uint32_t r = 0; r < size_; ++r)
      if (lost_[r].load(std::memory_order_acquire) && st == TSU_OK) st = TSU_ERR_PEER_LOST;
  }
  for (auto& w : watches_) {
    if (w->state.load(std::memory_order_acquire) != 1) continue;
    tsu_recv_cancel(w->handle);
    while (w->state.load(std::memory_order_acquire) != 2) tsu_progress();
  }
  return st;
}

}  // namespace tsu::ult
