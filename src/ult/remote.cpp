// The layer's setup: settings, construction, the AM handlers that receive
// every message kind, the function table and the proxy table.
#include "remote.hpp"

#include <algorithm>
#include <cstdlib>
#include <array>
#include <cstring>

#include "record_pool.hpp"
#include "remote_internal.hpp"
#include "scheduler.hpp"
#include "worker.hpp"

namespace tsu::ult {

std::atomic<tsu_ult_remote_fn_t> g_fns[TSU_ULT_FN_MAX + 1];
std::atomic<Remote*> g_remote{nullptr};

namespace {

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
          auto* info = util::RecordPool<RemoteInfo>::make();
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
  return lb_settings().apply(out, error);
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
}  // namespace tsu::ult
