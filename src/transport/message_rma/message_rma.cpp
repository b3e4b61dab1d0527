#include "transport/message_rma/message_rma.hpp"
#include "transport/message_rma/message_wire.hpp"

#include <algorithm>
#include <cstring>

#include "core/atomic_exec.hpp"
#include "core/log.hpp"

namespace tsu::transport {

using core::CommandKind;
using core::atomic_load_operand;
using core::atomic_op_fetches;
using core::atomic_op_valid;
using core::atomic_store_result;

namespace {
constexpr uint64_t kMaxGetInFlight = 4u << 20;  // per op: bounds the target's reply queue

uint32_t lo32(uint64_t a) { return static_cast<uint32_t>(a); }
uint32_t hi32(uint64_t a) { return static_cast<uint32_t>(a >> 32); }

// End offset of a whole request's range at the target, saturating: an
// overflowing range can never be in bounds, and must still be refused.
uint64_t range_end(uint64_t offset, uint64_t len) {
  return len > UINT64_MAX - offset ? UINT64_MAX : offset + len;
}

MessageHeader header(uint16_t handler, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3,
                     std::size_t payload_len) {
  return rma_header(handler, a0, a1, a2, a3, payload_len);
}
}  // namespace

void MessageRma::register_handlers(MessageHandlerTable& table) {
  table.set(kRmaPutReq, on_put_req, this);
  table.set(kRmaGetReq, on_get_req, this);
  table.set(kRmaAtomicReq, on_atomic_req, this);
  table.set(kRmaCopyReq, on_copy_req, this);
  for (uint16_t h : {kRmaPutRep, kRmaGetRep, kRmaAtomicRep, kRmaCopyRep}) table.set(h, on_reply, this);
  table.set(kRmaVecReq, on_vec_req, this);
  table.set(kRmaVecRep, on_vec_rep, this);
}

Messaging* MessageRma::transport_to(uint32_t rank) const noexcept {
  return host_.message_route(rank);
}

uint64_t MessageRma::alloc(const Command& cmd) noexcept {
  uint32_t idx;
  if (!free_.empty()) {
    idx = free_.back();
    free_.pop_back();
  } else {
    idx = static_cast<uint32_t>(ops_.size());
    ops_.emplace_back();
  }
  Op& op = ops_[idx];
  const uint32_t gen = op.gen + 1;
  op = Op{};
  op.gen = gen;
  op.used = true;
  op.cmd = cmd;
  return (uint64_t{gen} << 32) | idx;
}

MessageRma::Op* MessageRma::find(uint64_t cookie) noexcept {
  const uint32_t idx = lo32(cookie);
  if (idx >= ops_.size()) return nullptr;
  Op& op = ops_[idx];
  return op.used && op.gen == hi32(cookie) ? &op : nullptr;
}

tsu_status_t MessageRma::start(const Command& cmd, uint32_t completion_id) noexcept {
  const uint64_t cookie = alloc(cmd);
  Op& op = *find(cookie);
  op.completion_id = completion_id;
  if (cmd.kind == CommandKind::kAtomic) {
    op.kind = Kind::kAtomic;
    op.peer = cmd.dst.rank;
  } else if (cmd.kind == CommandKind::kVector) {
    op.kind = Kind::kVector;
    op.peer = cmd.dst.rank;
    Messaging* t = transport_to(op.peer);
    const auto& req = *core::vector_of(cmd);
    // One message when the pieces and their data fit; else check first.
    op.vchecking = !t || req.pieces.size() * kVecEntry + req.total > t->max_message_payload();
  } else {
    const bool dst_mem = host_.memory_route(cmd.dst.rank);
    const bool src_mem = host_.memory_route(cmd.src.rank);
    op.kind = src_mem ? Kind::kPut : dst_mem ? Kind::kGet : Kind::kForward;
    op.peer = src_mem ? cmd.dst.rank : cmd.src.rank;
    op.status = check_local_side(op);
  }
  watch(op);
  return start_op(cookie);
}

void MessageRma::watch(Op& op) noexcept {
  if (transport_to(op.peer)) {
    host_.watch_peer(op.peer);
    op.watched = true;
  }
}

// The side this process reaches (a put's source, a get's destination) is
// checked whole before the first piece leaves: a bad local range must not
// leave the pieces before it written at the peer.  The peer's side is
// checked whole by the target with every piece (on_put_req, on_get_req).
tsu_status_t MessageRma::check_local_side(const Op& op) const noexcept {
  Access a;
  switch (op.kind) {
    case Kind::kPut: return host_.resolve(op.cmd.src, op.cmd.len, a);
    case Kind::kGet: return host_.resolve(op.cmd.dst, op.cmd.len, a);
    default: return TSU_OK;
  }
}

tsu_status_t MessageRma::start_op(uint64_t cookie) noexcept {
  advance(cookie);
  Op* op = find(cookie);
  if (op && !op->forwarded && op->outstanding == 0 && !op->in_backlog) {
    // Failed before anything was sent: the executor finishes the record.
    const tsu_status_t st = op->status != TSU_OK ? op->status : TSU_ERR_SYSTEM;
    release(*op, cookie);
    return st;
  }
  return core::kStarted;
}

void MessageRma::advance(uint64_t cookie) noexcept {
  for (;;) {
    Op* op = find(cookie);
    if (!op || !send_next(*op, cookie)) break;
  }
  maybe_complete(cookie);
}

bool MessageRma::send_next(Op& op, uint64_t cookie) noexcept {
  if (op.status != TSU_OK || op.in_backlog) return false;
  Messaging* t = transport_to(op.peer);
  if (!t) {
    fail(op, TSU_ERR_UNREACHABLE);
    return false;
  }
  const Command& c = op.cmd;
  const std::size_t chunk = t->max_message_payload();
  MessageHeader h;
  const void* payload = nullptr;
  std::size_t n = 0;
  alignas(8) std::byte small[16];
  thread_local std::vector<std::byte> bounce;
  switch (op.kind) {
    case Kind::kPut: {
      if (op.first_sent && op.sent >= c.len) return false;
      n = static_cast<std::size_t>(std::min<uint64_t>(chunk, c.len - op.sent));
      Access a;
      const tsu_gaddr_t src = tsu_gaddr_add(c.src, op.sent);
      tsu_status_t st = host_.resolve(src, n, a);
      if (st == TSU_OK && a.kind != Access::kDirect) {
        bounce.resize(n);
        st = host_.read_memory(src, bounce.data(), n);
        payload = bounce.data();
      } else {
        payload = a.ptr;
      }
      if (st != TSU_OK) {
        fail(op, st);
        return false;
      }
      // args[3]: where the whole put ends, so the target refuses every piece
      // of a put that does not fit (nothing is written), not just the last.
      h = header(kRmaPutReq, cookie, c.dst.seg, c.dst.offset + op.sent,
                 range_end(c.dst.offset, c.len), n);
      break;
    }
    case Kind::kGet: {
      if (op.first_sent && op.sent >= c.len) return false;
      if (uint64_t{op.outstanding} * chunk >= kMaxGetInFlight) return false;
      n = static_cast<std::size_t>(std::min<uint64_t>(chunk, c.len - op.sent));
      // args[3]: where the whole get ends (checked whole by the target, so a
      // get that does not fit brings no piece back).
      h = header(kRmaGetReq, cookie, uint64_t{c.src.seg} | (uint64_t{n} << 32),
                 c.src.offset + op.sent, range_end(c.src.offset, c.len), 0);
      break;
    }
    case Kind::kAtomic: {
      if (op.first_sent) return false;
      std::memcpy(small, &c.compare, 8);
      payload = small;
      h = header(kRmaAtomicReq, cookie,
                 uint64_t{c.dst.seg} | (uint64_t{c.aop} << 32) | (uint64_t{c.atype} << 40),
                 c.dst.offset, c.operand, 8);
      break;
    }
    case Kind::kVector:
      return send_next_vector(op, cookie, *t);
    case Kind::kForward: {
      if (op.first_sent) return false;
      // The destination travels in the payload: rank, segment, offset.
      std::memcpy(small, &c.dst.rank, 4);
      std::memcpy(small + 4, &c.dst.seg, 4);
      std::memcpy(small + 8, &c.dst.offset, 8);
      payload = small;
      h = header(kRmaCopyReq, cookie, c.src.seg, c.src.offset, c.len, 16);
      break;
    }
  }
  const tsu_status_t st = t->send_message(op.peer, h, payload);
  if (st == TSU_EAGAIN) {
    op.in_backlog = true;
    backlog_.push_back(cookie);
    return false;
  }
  if (st != TSU_OK) {
    fail(op, st);
    return false;
  }
  op.sent += n;
  op.first_sent = true;
  ++op.outstanding;
  return true;
}

void MessageRma::fail(Op& op, tsu_status_t st) noexcept {
  if (op.status == TSU_OK) op.status = st;
}

void MessageRma::maybe_complete(uint64_t cookie) noexcept {
  Op* op = find(cookie);
  if (!op || op->outstanding || op->in_backlog) return;
  const bool all_sent =
      op->first_sent && (op->kind == Kind::kVector ? vector_sent(*op)
                         : op->kind == Kind::kAtomic || op->kind == Kind::kForward ||
                             op->sent >= op->cmd.len);
  if (!all_sent && op->status == TSU_OK) return;
  if (!op->first_sent && !op->forwarded && op->status != TSU_OK) return;  // start_op reports it
  const tsu_status_t st = op->status;
  const bool fwd = op->forwarded;
  const uint32_t origin = op->origin, id = op->completion_id;
  const uint64_t ocookie = op->origin_cookie;
  release(*op, cookie);
  if (fwd) {
    reply(origin, header(kRmaCopyRep, ocookie, status_arg(st), 0, 0, 0), nullptr);
  } else {
    host_.complete(id, st);
  }
}

void MessageRma::release(Op& op, uint64_t cookie) noexcept {
  if (op.kind == Kind::kVector) delete core::vector_of(op.cmd);
  if (op.watched) {
    op.watched = false;
    host_.unwatch_peer(op.peer);
  }
  op.used = false;
  free_.push_back(lo32(cookie));
}

void MessageRma::reply(uint32_t dst, const MessageHeader& h, const void* payload) noexcept {
  Messaging* t = transport_to(dst);
  if (!t) return;
  if (replies_.empty()) {
    const tsu_status_t st = t->send_message(dst, h, payload);
    if (st != TSU_EAGAIN) {
      if (st != TSU_OK && st != TSU_ERR_PEER_LOST)
        TSU_LOG_WARN("reply to rank %u failed: %s", dst, tsu_strerror(st));
      return;
    }
  }
  const auto* p = static_cast<const std::byte*>(payload);
  replies_.push_back(Reply{dst, h, std::vector<std::byte>(p, p + (p ? h.payload_len : 0))});
}

std::size_t MessageRma::pump() noexcept {
  std::size_t work = 0;
  while (!replies_.empty()) {
    Reply& r = replies_.front();
    const tsu_status_t st =
        transport_to(r.dst)->send_message(r.dst, r.h, r.payload.empty() ? nullptr : r.payload.data());
    if (st == TSU_EAGAIN) break;
    replies_.pop_front();
    ++work;
  }
  for (std::size_t n = backlog_.size(); n > 0 && !backlog_.empty(); --n) {
    const uint64_t cookie = backlog_.front();
    backlog_.pop_front();
    Op* op = find(cookie);
    if (!op) continue;
    op->in_backlog = false;
    const uint64_t before = op->sent + op->outstanding;
    advance(cookie);
    op = find(cookie);
    if (!op || op->sent + op->outstanding != before) ++work;
  }
  return work;
}

void MessageRma::on_peer_lost(uint32_t rank) noexcept {
  for (uint32_t i = 0; i < ops_.size(); ++i) {
    Op& op = ops_[i];
    if (!op.used || op.peer != rank) continue;
    fail(op, TSU_ERR_PEER_LOST);
    op.outstanding = 0;
    op.first_sent = true;
    op.in_backlog = false;  // its backlog entry goes stale with the generation
    maybe_complete((uint64_t{op.gen} << 32) | i);
  }
  std::erase_if(replies_, [&](const Reply& r) { return r.dst == rank; });
}

// ---- Target side -----------------------------------------------------------

// A piece at `piece` of a request whose whole range ends at `end` (both in
// this rank's segment of `piece`): the whole rest of the range must fit, so
// that a request running past the segment's end fails at every piece and
// writes (or returns) nothing.  Pieces before this one were checked the same
// way, so together the whole range is checked before any byte moves.
tsu_status_t MessageRma::check_whole(const tsu_gaddr_t& piece, uint64_t end,
                                    std::size_t piece_len) const noexcept {
  if (end == UINT64_MAX) return TSU_ERR_OUT_OF_BOUNDS;  // the range overflowed
  if (end < piece.offset || end - piece.offset < piece_len) return TSU_ERR_INVALID_ARG;
  Access a;
  return host_.resolve(piece, static_cast<std::size_t>(end - piece.offset), a);
}

void MessageRma::on_put_req(void* ctx, uint32_t src, const MessageHeader& h,
                           const std::byte* p) noexcept {
  auto& self = *static_cast<MessageRma*>(ctx);
  RmaHost& rt = self.host_;
  const tsu_gaddr_t dst = tsu_gaddr(rt.host_rank(), lo32(h.args[1]), h.args[2]);
  tsu_status_t st = self.check_whole(dst, h.args[3], h.payload_len);
  if (st == TSU_OK) st = rt.write_memory(dst, p, h.payload_len);
  self.reply(src, header(kRmaPutRep, h.args[0], status_arg(st), h.payload_len, 0, 0), nullptr);
}

void MessageRma::on_get_req(void* ctx, uint32_t src, const MessageHeader& h,
                           const std::byte*) noexcept {
  auto& self = *static_cast<MessageRma*>(ctx);
  RmaHost& rt = self.host_;
  const std::size_t len = hi32(h.args[1]);
  const tsu_gaddr_t from = tsu_gaddr(rt.host_rank(), lo32(h.args[1]), h.args[2]);
  Access a;
  tsu_status_t st = len <= rt.message_route(src)->max_message_payload()
                        ? self.check_whole(from, h.args[3], len)
                        : TSU_ERR_INVALID_ARG;
  if (st == TSU_OK) st = rt.resolve(from, len, a);
  thread_local std::vector<std::byte> bounce;
  const void* data = a.ptr;
  if (st == TSU_OK && a.kind != Access::kDirect) {
    bounce.resize(len);
    st = rt.read_memory(from, bounce.data(), len);
    data = bounce.data();
  }
  // args[2] of the reply: the piece's offset (the origin places it).
  if (st != TSU_OK)
    self.reply(src, header(kRmaGetRep, h.args[0], status_arg(st), h.args[2], 0, 0), nullptr);
  else
    self.reply(src, header(kRmaGetRep, h.args[0], status_arg(st), h.args[2], 0, len), data);
}

void MessageRma::on_atomic_req(void* ctx, uint32_t src, const MessageHeader& h,
                              const std::byte* p) noexcept {
  auto& self = *static_cast<MessageRma*>(ctx);
  RmaHost& rt = self.host_;
  const auto op = static_cast<tsu_aop_t>((h.args[1] >> 32) & 0xff);
  const auto type = static_cast<tsu_atype_t>((h.args[1] >> 40) & 0xff);
  uint64_t compare = 0;
  if (h.payload_len >= 8) std::memcpy(&compare, p, 8);
  tsu_status_t st = TSU_ERR_INVALID_ARG;
  uint64_t result = 0;
  if (atomic_op_valid(op, type)) {
    // The result is written as the type's width; read it back the same way.
    alignas(8) std::byte out[8] = {};
    st = rt.execute_atomic(tsu_gaddr(rt.host_rank(), lo32(h.args[1]), h.args[2]), op, type, h.args[3],
                           compare, out);
    if (st == TSU_OK && atomic_op_fetches(op)) result = atomic_load_operand(out, type);
  }
  self.reply(src, header(kRmaAtomicRep, h.args[0], status_arg(st), result, 0, 0), nullptr);
}

void MessageRma::on_copy_req(void* ctx, uint32_t src, const MessageHeader& h,
                            const std::byte* p) noexcept {
  auto& self = *static_cast<MessageRma*>(ctx);
  RmaHost& rt = self.host_;
  Command cmd{};
  cmd.kind = CommandKind::kCopy;
  cmd.src = tsu_gaddr(rt.host_rank(), lo32(h.args[1]), h.args[2]);
  cmd.len = h.args[3];
  tsu_status_t st = TSU_OK;
  if (h.payload_len != 16) {
    st = TSU_ERR_INVALID_ARG;
  } else {
    std::memcpy(&cmd.dst.rank, p, 4);
    std::memcpy(&cmd.dst.seg, p + 4, 4);
    std::memcpy(&cmd.dst.offset, p + 8, 8);
    if (cmd.dst.rank >= rt.host_size()) st = TSU_ERR_BAD_RANK;
  }
  if (st == TSU_OK && rt.memory_route(cmd.dst.rank)) {
    st = rt.execute_copy(cmd.dst, cmd.src, cmd.len);
  } else if (st == TSU_OK) {
    // Destination on another node: this rank puts its own memory there.
    const uint64_t cookie = self.alloc(cmd);
    Op& op = *self.find(cookie);
    op.kind = Kind::kPut;
    op.peer = cmd.dst.rank;
    op.forwarded = true;
    op.origin = src;
    op.origin_cookie = h.args[0];
    self.watch(op);
    op.status = self.check_local_side(op);
    if (op.status != TSU_OK) op.first_sent = true;  // nothing to send: reply at once
    self.advance(cookie);
    return;
  }
  self.reply(src, header(kRmaCopyRep, h.args[0], status_arg(st), 0, 0, 0), nullptr);
}

void MessageRma::on_reply(void* ctx, uint32_t src, const MessageHeader& h,
                         const std::byte* p) noexcept {
  auto& self = *static_cast<MessageRma*>(ctx);
  const uint64_t cookie = h.args[0];
  Op* op = self.find(cookie);
  if (!op || op->peer != src || op->outstanding == 0) return;  // stale (e.g. after a failure)
  --op->outstanding;
  const tsu_status_t st = arg_status(h.args[1]);
  if (st != TSU_OK) self.fail(*op, st);
  switch (h.handler) {
    case kRmaGetRep:
      if (st == TSU_OK) {
        const uint64_t piece = h.args[2];
        const uint64_t at = piece - op->cmd.src.offset;
        if (piece < op->cmd.src.offset || at > op->cmd.len ||
            h.payload_len > op->cmd.len - at) {
          self.fail(*op, TSU_ERR_SYSTEM);
        } else {
          const tsu_status_t wst =
              self.host_.write_memory(tsu_gaddr_add(op->cmd.dst, at), p, h.payload_len);
          if (wst != TSU_OK) self.fail(*op, wst);
        }
      }
      self.advance(cookie);  // room for more get requests
      return;
    case kRmaAtomicRep:
      if (st == TSU_OK && op->cmd.result &&
          atomic_op_fetches(static_cast<tsu_aop_t>(op->cmd.aop)))
        atomic_store_result(op->cmd.result, static_cast<tsu_atype_t>(op->cmd.atype), h.args[2]);
      break;
    default:
      break;
  }
  self.maybe_complete(cookie);
}

}  // namespace tsu::transport
