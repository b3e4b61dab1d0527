#include "am/am_layer.hpp"

#include <algorithm>
#include <cstring>

#include "core/error.hpp"
#include "core/log.hpp"
#include "runtime/progress_engine.hpp"
#include "runtime/runtime.hpp"
#include "transport/transport.hpp"
#include "core/blocking_wait.hpp"
#include "core/wait_table.hpp"

namespace tsu::am {

using core::MessageHeader;

namespace {
// Where a long payload was written (the payload of the notice message).
struct LongRef {
  uint32_t seg;
  uint32_t reserved;
  uint64_t offset;
  uint64_t len;
};
}  // namespace

AmLayer::AmLayer(runtime::Runtime& rt)
    : rt_(rt), queued_(new std::atomic<uint32_t>[rt.size()]) {
  for (uint32_t r = 0; r < rt.size(); ++r) queued_[r].store(0, std::memory_order_relaxed);
  std::size_t m = rt.config().am_medium_max;
  if (auto* t = rt.message_route(rt.rank())) m = std::min(m, t->max_message_payload());
  medium_max_ = m;
  rt.handlers().set(kHandlerAmSync, on_sync, this);
}

AmLayer::~AmLayer() = default;

std::size_t AmLayer::max_payload(uint32_t dst) const noexcept {
  const transport::Messaging* t = rt_.message_route(dst);
  return t ? t->max_message_payload() : 0;
}

tsu_status_t AmLayer::try_send(uint32_t dst, const MessageHeader& h, const void* payload) noexcept {
  transport::Messaging* t = rt_.message_route(dst);
  if (!t) return TSU_ERR_UNREACHABLE;
  // Messages queued for `dst` go first: nothing may overtake them.  If `dst`
  // is lost they only wait for the next poll to drop them, so a new request
  // to it fails now, as it would with the queue empty.
  if (queued_[dst].load(std::memory_order_acquire))
    return rt_.peer_lost(dst) ? TSU_ERR_PEER_LOST : TSU_EAGAIN;
  return t->send_message(dst, h, payload);
}

tsu_status_t AmLayer::send_or_queue(uint32_t dst, const MessageHeader& h,
                                    const void* payload) noexcept {
  const tsu_status_t st = try_send(dst, h, payload);
  if (st != TSU_EAGAIN) return st;
  {
    std::lock_guard lock(q_mu_);
    Queued q{dst, h, {}};
    if (h.payload_len) {
      const auto* p = static_cast<const std::byte*>(payload);
      q.payload.assign(p, p + h.payload_len);
    }
    queue_.push_back(std::move(q));
    queued_[dst].fetch_add(1, std::memory_order_release);
    queued_total_.fetch_add(1, std::memory_order_release);
  }
  // The engine may be asleep (this can be a user thread): wake it.  In
  // manual progress no engine thread sleeps, and the ring is a futex system
  // call per queued message (measured: one per broadcast from a root that
  // outruns its receivers).
  if (!runtime::in_progress_context() && !rt_.manual_progress()) rt_.engine().doorbell().ring();
  return TSU_OK;
}

std::size_t AmLayer::send_queued() noexcept {
  std::unique_lock lock(q_mu_, std::try_to_lock);
  if (!lock.owns_lock()) return 0;
  std::size_t sent = 0;
  std::vector<uint32_t> blocked;  // destinations whose ring is full this pass
  for (auto it = queue_.begin(); it != queue_.end();) {
    bool is_blocked = false;
    for (uint32_t b : blocked) is_blocked |= b == it->dst;
    if (!is_blocked) {
      const tsu_status_t st = rt_.message_route(it->dst)->send_message(
          it->dst, it->header, it->payload.empty() ? nullptr : it->payload.data());
      if (st != TSU_EAGAIN) {
        // A lost peer's requests are failed by on_peer_lost; its messages go.
        if (st != TSU_OK && st != TSU_ERR_PEER_LOST)
          TSU_LOG_ERROR("queued message to rank %u failed: %s", it->dst, tsu_strerror(st));
        queued_[it->dst].fetch_sub(1, std::memory_order_release);
        queued_total_.fetch_sub(1, std::memory_order_release);
        it = queue_.erase(it);
        ++sent;
        continue;
      }
      blocked.push_back(it->dst);
    }
    ++it;
  }
  return sent;
}

void AmLayer::on_peer_lost(uint32_t rank) noexcept {
  {
    std::lock_guard lock(q_mu_);
    const auto dropped = std::erase_if(queue_, [&](const Queued& q) { return q.dst == rank; });
    queued_[rank].fetch_sub(static_cast<uint32_t>(dropped), std::memory_order_release);
    queued_total_.fetch_sub(dropped, std::memory_order_release);
  }
  remote_long_.on_peer_lost(rank);
  // A synchronization parked on this rank's message re-checks (it fails).
  core::wait_table::notify(&sync_arrived_);
}

void AmLayer::on_sync(void* ctx, uint32_t, const MessageHeader& h, const std::byte*) noexcept {
  auto* self = static_cast<AmLayer*>(ctx);
  {
    std::lock_guard lock(self->sync_mu_);
    self->sync_arrived_.emplace_back(h.args[0], static_cast<uint32_t>(h.args[1]));
  }
  // After the unlock: a waiter that counted itself in the wait table before
  // taking the lock either sees the arrival or is seen here (the mutex
  // orders the two, as seq_cst does in wait_table.hpp).
  core::wait_table::notify(&self->sync_arrived_);
}

bool AmLayer::sync_pending(const void* arg) noexcept {
  const auto* w = static_cast<const SyncWait*>(arg);
  {
    std::lock_guard lock(w->self->sync_mu_);
    const auto& v = w->self->sync_arrived_;
    if (std::find(v.begin(), v.end(), std::pair<uint64_t, uint32_t>{w->epoch, w->round}) !=
        v.end())
      return false;
  }
  return !w->self->rt_.peer_lost(w->from);
}

tsu_status_t AmLayer::sync_all() noexcept {
  const uint32_t n = rt_.size(), me = rt_.rank();
  const uint64_t epoch = ++sync_epoch_;
  for (uint32_t round = 0, dist = 1; dist < n; ++round, dist <<= 1) {
    MessageHeader h{};
    h.handler = kHandlerAmSync;
    h.args[0] = epoch;
    h.args[1] = round;
    const tsu_status_t st = send_or_queue((me + dist) % n, h, nullptr);
    if (st != TSU_OK) return st;
    // The rank this round waits for; if it is lost, nothing will come.
    const uint32_t from = (me + n - dist) % n;
    // Parked or asleep until the message (on_sync) or the rank's loss
    // (on_peer_lost) wakes it.
    const SyncWait w{this, epoch, round, from};
    core::BlockingWait wait(&sync_arrived_, rt_.manual_progress(), sync_pending, &w,
                            &rt_.engine().waiters_polling());
    for (;;) {
      {
        std::lock_guard lock(sync_mu_);
        auto it = std::find(sync_arrived_.begin(), sync_arrived_.end(),
                            std::pair<uint64_t, uint32_t>{epoch, round});
        if (it != sync_arrived_.end()) {
          sync_arrived_.erase(it);
          break;
        }
      }
      if (rt_.peer_lost(from))
        return core::fail(TSU_ERR_PEER_LOST, "synchronization: rank %u is lost", from);
      if (rt_.engine().progress()) wait.worked();
      else wait.idle();
    }
  }
  return TSU_OK;
}

tsu_status_t AmLayer::set_user_handler(uint32_t id, tsu_am_handler_t fn, void* ctx) noexcept {
  std::lock_guard lock(reg_mu_);
  UserEntry* e = nullptr;
  for (auto& p : entries_)
    if (p->id == id) e = p.get();
  if (!e) {
    auto fresh = std::unique_ptr<UserEntry>(new (std::nothrow) UserEntry{this, id, {nullptr}, ctx});
    if (!fresh) return TSU_ERR_NO_MEMORY;
    e = fresh.get();
    entries_.push_back(std::move(fresh));
  }
  e->ctx.store(ctx, std::memory_order_relaxed);
  e->fn.store(fn, std::memory_order_release);
  rt_.handlers().set(core::kFirstUserHandler + id, fn ? dispatch_user : nullptr, e);
  return TSU_OK;
}

void AmLayer::dispatch_user(void* ctx, uint32_t src, const MessageHeader& h,
                            const std::byte* payload) noexcept {
  auto* e = static_cast<UserEntry*>(ctx);
  const tsu_am_handler_t fn = e->fn.load(std::memory_order_acquire);
  if (!fn) return;
  tsu_am_token_s token{src, (h.flags & kFlagReply) == 0, false};
  const uint32_t nargs = h.flags & kFlagArgsMask;
  if (h.flags & kFlagLong) {
    LongRef ref;
    std::memcpy(&ref, payload, sizeof ref);
    std::byte* p = nullptr;
    if (ref.len &&
        e->layer->rt_.segments().translate(ref.seg, ref.offset, ref.len, p) != TSU_OK) {
      TSU_LOG_ERROR("long AM %u from rank %u names memory that is gone", e->id, src);
      return;
    }
    fn(&token, h.args, nargs, p, ref.len, e->ctx.load(std::memory_order_relaxed));
    return;
  }
  fn(&token, h.args, nargs, h.payload_len ? const_cast<std::byte*>(payload) : nullptr,
     h.payload_len, e->ctx.load(std::memory_order_relaxed));
}

tsu_status_t AmLayer::run_user_handler(uint32_t src, uint32_t id, const MessageHeader& h,
                                       void* payload, std::size_t len) noexcept {
  UserEntry* e = nullptr;
  {
    std::lock_guard lock(reg_mu_);
    for (auto& p : entries_)
      if (p->id == id) e = p.get();
  }
  // Entries are never freed before the layer: e stays valid without the lock.
  const tsu_am_handler_t fn = e ? e->fn.load(std::memory_order_acquire) : nullptr;
  if (!fn) {
    TSU_LOG_WARN("long AM from rank %u names handler %u, which is not registered", src, id);
    return TSU_ERR_INVALID_ARG;
  }
  tsu_am_token_s token{src, true, false};
  fn(&token, h.args, h.flags & kFlagArgsMask, payload, len, e->ctx.load(std::memory_order_relaxed));
  return TSU_OK;
}

// An error from the transport (a lost peer, no route) gets its message here,
// so every error an API call returns has one (tsu_last_error).
tsu_status_t AmLayer::transport_error(const char* fn, uint32_t dst, tsu_status_t st) noexcept {
  return core::fail(st, "%s: rank %u: %s", fn, dst, tsu_strerror(st));
}

tsu_status_t AmLayer::send_user(const char* fn, uint32_t dst, uint32_t id, const uint64_t* args,
                                uint32_t nargs, const void* payload, std::size_t len,
                                const tsu_gaddr_t* long_addr, const tsu_cb_t& cb) noexcept {
  if (dst >= rt_.size())
    return core::fail(TSU_ERR_BAD_RANK, "%s: rank %u >= job size %u", fn, dst, rt_.size());
  if (id > TSU_AM_MAX_HANDLER)
    return core::fail(TSU_ERR_INVALID_ARG, "%s: handler id %u > %u", fn, id, TSU_AM_MAX_HANDLER);
  if (nargs > TSU_AM_MAX_ARGS)
    return core::fail(TSU_ERR_INVALID_ARG, "%s: %u arguments > TSU_AM_MAX_ARGS (%u)", fn, nargs,
                      TSU_AM_MAX_ARGS);
  if ((nargs && !args) || (len && !payload))
    return core::fail(TSU_ERR_NULL_POINTER, "%s: args or payload is NULL", fn);
  transport::Messaging* t = rt_.message_route(dst);
  if (!t) return core::fail(TSU_ERR_UNREACHABLE, "%s: no transport reaches rank %u", fn, dst);
  MessageHeader h{};
  h.handler = static_cast<uint16_t>(core::kFirstUserHandler + id);
  h.flags = static_cast<uint16_t>(nargs);
  for (uint32_t i = 0; i < nargs; ++i) h.args[i] = args[i];
  if (!long_addr) {
    if (len > medium_max_)
      return core::fail(TSU_ERR_INVALID_ARG, "%s: payload of %zu B > medium maximum %zu B", fn,
                        len, medium_max_);
    h.payload_len = static_cast<uint32_t>(len);
    const tsu_status_t st = try_send(dst, h, payload);
    if (st == TSU_OK) runtime::run_callback(cb, TSU_OK);
    return st < 0 ? transport_error(fn, dst, st) : st;
  }
  if (long_addr->rank != dst)
    return core::fail(TSU_ERR_INVALID_ARG, "%s: destination address is on rank %u, not %u", fn,
                      long_addr->rank, dst);
  // Another node: the payload travels in messages, the target answers
  // (remote_long.hpp); the callback runs on that answer.
  if (!rt_.memory_route(dst)) {
    const tsu_status_t rst = remote_long_.send(dst, id, h, payload, len, *long_addr, cb);
    return rst < 0 ? transport_error(fn, dst, rst) : rst;
  }
  // Long: room in the ring first (so a refused request wrote nothing), then
  // the payload by RMA, then the notice.
  if (queued_[dst].load(std::memory_order_acquire))
    return rt_.peer_lost(dst) ? transport_error(fn, dst, TSU_ERR_PEER_LOST) : TSU_EAGAIN;
  transport::MemoryAccess* mem = rt_.memory_access(dst);
  transport::Access a;
  tsu_status_t st = mem ? mem->resolve(*long_addr, len, a) : TSU_ERR_UNREACHABLE;
  if (st == TSU_ERR_UNREACHABLE || st == TSU_ERR_UNSUPPORTED)
    return core::fail(st, "%s: rank %u's memory is not reachable from here", fn, dst);
  if (st != TSU_OK) {  // a target error: reported through the callback
    runtime::run_callback(cb, st);
    return TSU_OK;
  }
  if (len) {
    const transport::Access src{transport::Access::kDirect,
                                const_cast<std::byte*>(static_cast<const std::byte*>(payload)), 0,
                                0};
    st = rt_.copy_access(a, src, len);
    if (st != TSU_OK) {
      runtime::run_callback(cb, st);
      return TSU_OK;
    }
  }
  const LongRef ref{long_addr->seg, 0, long_addr->offset, len};
  h.flags = static_cast<uint16_t>(h.flags | kFlagLong);
  h.payload_len = sizeof ref;
  st = try_send(dst, h, &ref);
  // The payload is in place; if the ring filled up meanwhile, queue the
  // notice rather than refuse a request whose data was already written.
  if (st == TSU_EAGAIN) st = send_or_queue(dst, h, &ref);
  if (st == TSU_OK) runtime::run_callback(cb, TSU_OK);
  return st;
}

tsu_status_t AmLayer::reply(tsu_am_token_t* token, uint32_t id, const uint64_t* args,
                            uint32_t nargs, const void* payload, std::size_t len) noexcept {
  if (!token) return core::fail(TSU_ERR_NULL_POINTER, "tsu_am_reply: token is NULL");
  if (!token->can_reply)
    return core::fail(TSU_ERR_UNSUPPORTED, "tsu_am_reply: a reply handler cannot reply");
  if (token->replied)
    return core::fail(TSU_ERR_UNSUPPORTED, "tsu_am_reply: this message was already replied to");
  if (id > TSU_AM_MAX_HANDLER || nargs > TSU_AM_MAX_ARGS || len > medium_max_)
    return core::fail(TSU_ERR_INVALID_ARG,
                      "tsu_am_reply: id %u, %u arguments or %zu B payload out of range", id,
                      nargs, len);
  if ((nargs && !args) || (len && !payload))
    return core::fail(TSU_ERR_NULL_POINTER, "tsu_am_reply: args or payload is NULL");
  MessageHeader h{};
  h.handler = static_cast<uint16_t>(core::kFirstUserHandler + id);
  h.flags = static_cast<uint16_t>(nargs | kFlagReply);
  for (uint32_t i = 0; i < nargs; ++i) h.args[i] = args[i];
  h.payload_len = static_cast<uint32_t>(len);
  const tsu_status_t st = send_or_queue(token->src, h, payload);
  if (st == TSU_OK) token->replied = true;
  return st < 0 ? transport_error("tsu_am_reply", token->src, st) : st;
}

}  // namespace tsu::am
