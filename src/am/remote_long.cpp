#include "am/remote_long.hpp"

#include <algorithm>
#include <cstring>
#include <new>
#include <vector>

#include "am/am_layer.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "runtime/progress_engine.hpp"
#include "runtime/runtime.hpp"

namespace tsu::am {

using core::MessageHeader;

namespace {
// The notice's payload: which handler, where the payload was written, and the
// sender's cookie for the ack.
struct NoticeBody {
  uint32_t id;
  uint32_t seg;
  uint64_t offset;
  uint64_t len;
  uint64_t cookie;
};
static_assert(sizeof(NoticeBody) == 32);

uint64_t status_arg(tsu_status_t st) { return static_cast<uint64_t>(static_cast<int64_t>(st)); }
tsu_status_t arg_status(uint64_t a) { return static_cast<tsu_status_t>(static_cast<int64_t>(a)); }
}  // namespace

RemoteLong::RemoteLong(AmLayer& am) : am_(am) {
  core::MessageHandlerTable& table = am.runtime().handlers();
  table.set(kHandlerAmLongData, on_data, this);
  table.set(kHandlerAmLongNotice, on_notice, this);
  table.set(kHandlerAmLongAck, on_ack, this);
}

uint64_t RemoteLong::add_pending(uint32_t dst, const tsu_cb_t& cb) noexcept {
  std::lock_guard lock(mu_);
  const uint64_t cookie = next_cookie_++;
  try {
    pending_.emplace(cookie, Pending{dst, cb});
  } catch (const std::bad_alloc&) {
    return 0;
  }
  return cookie;
}

void RemoteLong::complete(uint64_t cookie, tsu_status_t st, int64_t from) noexcept {
  tsu_cb_t cb{};
  {
    std::lock_guard lock(mu_);
    auto it = pending_.find(cookie);
    if (it == pending_.end()) return;  // already completed (peer loss)
    if (from >= 0 && it->second.dst != static_cast<uint64_t>(from)) {
      TSU_LOG_ERROR("long AM ack from rank %lld for a transfer to rank %u: ignored",
                    static_cast<long long>(from), it->second.dst);
      return;
    }
    cb = it->second.cb;
    pending_.erase(it);
  }
  runtime::run_callback(cb, st);
}

bool RemoteLong::forget(uint64_t cookie) noexcept {
  std::lock_guard lock(mu_);
  return pending_.erase(cookie) == 1;
}

bool RemoteLong::none_in_flight() const noexcept {
  std::lock_guard lock(mu_);
  return pending_.empty();
}

tsu_status_t RemoteLong::send(uint32_t dst, uint32_t id, const MessageHeader& notice,
                              const void* payload, std::size_t len, const tsu_gaddr_t& addr,
                              const tsu_cb_t& cb) noexcept {
  const std::size_t piece = am_.max_payload(dst);
  if (piece == 0) return TSU_ERR_UNREACHABLE;
  // Registered before the first message leaves: the ack may come at once.
  const uint64_t cookie = add_pending(dst, cb);
  if (!cookie) return core::fail(TSU_ERR_NO_MEMORY, "tsu_try_am_long: out of memory");
  const auto* bytes = static_cast<const std::byte*>(payload);
  MessageHeader data{};
  data.handler = kHandlerAmLongData;
  data.args[0] = addr.seg;
  data.args[1] = addr.offset;
  data.args[2] = len;
  MessageHeader n = notice;
  n.handler = kHandlerAmLongNotice;
  n.payload_len = sizeof(NoticeBody);
  const NoticeBody body{id, addr.seg, addr.offset, len, cookie};
  // The first message may be refused (TSU_EAGAIN: nothing sent, the caller
  // retries); once it is out, the rest is sent or queued in order.
  bool first = true;
  for (std::size_t off = 0; off < len || (first && len == 0); off += piece) {
    tsu_status_t st;
    if (len == 0) {
      st = am_.try_send(dst, n, &body);
    } else {
      data.args[3] = off;
      data.payload_len = static_cast<uint32_t>(std::min(piece, len - off));
      st = first ? am_.try_send(dst, data, bytes + off)
                 : am_.send_or_queue(dst, data, bytes + off);
    }
    if (st != TSU_OK && first) {
      // Refused, so no callback may run: unless the peer-loss handler (on
      // the progress thread) already completed the cookie, in which case
      // the request was accepted and its callback has the status.
      if (!forget(cookie)) return TSU_OK;
      return st;
    }
    if (st != TSU_OK) {
      complete(cookie, st);
      return TSU_OK;
    }
    if (len == 0) return TSU_OK;
    first = false;
  }
  const tsu_status_t st = am_.send_or_queue(dst, n, &body);
  if (st != TSU_OK) complete(cookie, st);
  return TSU_OK;
}

void RemoteLong::on_peer_lost(uint32_t rank) noexcept {
  std::vector<uint64_t> lost;
  {
    std::lock_guard lock(mu_);
    for (const auto& [cookie, p] : pending_)
      if (p.dst == rank) lost.push_back(cookie);
  }
  for (uint64_t cookie : lost) complete(cookie, TSU_ERR_PEER_LOST);
}

// ---- Target side -------------------------------------------------------------

void RemoteLong::on_data(void* ctx, uint32_t, const MessageHeader& h,
                         const std::byte* payload) noexcept {
  auto* self = static_cast<RemoteLong*>(ctx);
  const uint64_t total = h.args[2], at = h.args[3];
  std::byte* dst = nullptr;
  // The whole range is checked for every piece, so a bad destination writes
  // nothing at all; the notice reports the error.
  if (self->am_.runtime().segments().translate(static_cast<tsu_seg_t>(h.args[0]), h.args[1],
                                               total, dst) != TSU_OK)
    return;
  if (at > total || h.payload_len > total - at) return;  // malformed: the notice still answers
  if (h.payload_len) std::memcpy(dst + at, payload, h.payload_len);
}

void RemoteLong::on_notice(void* ctx, uint32_t src, const MessageHeader& h,
                           const std::byte* payload) noexcept {
  auto* self = static_cast<RemoteLong*>(ctx);
  if (h.payload_len != sizeof(NoticeBody)) {
    TSU_LOG_ERROR("long AM notice from rank %u is malformed (%u B)", src, h.payload_len);
    return;
  }
  NoticeBody body;
  std::memcpy(&body, payload, sizeof body);
  std::byte* p = nullptr;
  tsu_status_t st = self->am_.runtime().segments().translate(body.seg, body.offset, body.len, p);
  if (st != TSU_OK) {
    TSU_LOG_WARN("long AM %u from rank %u: destination (segment %u, offset %llu, %llu B): %s",
                 body.id, src, body.seg, static_cast<unsigned long long>(body.offset),
                 static_cast<unsigned long long>(body.len), tsu_strerror(st));
  } else {
    st = self->am_.run_user_handler(src, body.id, h, body.len ? p : nullptr, body.len);
  }
  MessageHeader ack{};
  ack.handler = kHandlerAmLongAck;
  ack.args[0] = body.cookie;
  ack.args[1] = status_arg(st);
  const tsu_status_t ast = self->am_.send_or_queue(src, ack, nullptr);
  if (ast != TSU_OK && ast != TSU_ERR_PEER_LOST)
    TSU_LOG_ERROR("long AM ack to rank %u failed: %s", src, tsu_strerror(ast));
}

void RemoteLong::on_ack(void* ctx, uint32_t src, const MessageHeader& h,
                        const std::byte*) noexcept {
  static_cast<RemoteLong*>(ctx)->complete(h.args[0], arg_status(h.args[1]), src);
}

}  // namespace tsu::am
