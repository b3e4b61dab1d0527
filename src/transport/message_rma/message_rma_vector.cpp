// Vector and strided put/get over messages (MessageRma, Kind::kVector).
//
// A kRmaVecReq message carries k piece entries (remote offset, length, local
// offset: 24 B each; the local offset is only echoed back) and, for a put,
// the pieces' data after them.  args: [0] cookie, [1] segment | flags << 32
// (kFlagGet, kFlagCheck), [2] k.  The target resolves EVERY entry against
// its segment table before any byte moves; a get's reply (kRmaVecRep) has the
// same layout as a put request (entries, then data), so the origin places
// each piece by its echoed local offset.
//
// Packing: pieces (split where one does not fit) go into as few messages as
// the transport's message size allows.  A request that fits in one message
// is checked and applied there.  A larger one first sends only its entries
// (kFlagCheck, no data; as few messages as 24 B per piece allows) and moves
// data only when every check has answered TSU_OK: a bad piece anywhere fails
// the request before anything is written.
#include <cstring>
#include <vector>

#include "core/log.hpp"
#include "transport/message_rma/message_rma.hpp"
#include "transport/message_rma/message_wire.hpp"

namespace tsu::transport {

namespace {
constexpr uint64_t kFlagGet = 1;
constexpr uint64_t kFlagCheck = 2;
constexpr uint64_t kMaxVecGetInFlight = 4u << 20;  // bytes of get replies per op

struct Entry {
  uint64_t remote, len, local;
};


MessageHeader vec_header(uint16_t handler, uint64_t a0, uint64_t a1, uint64_t a2,
                         std::size_t payload_len) {
  return rma_header(handler, a0, a1, a2, 0, payload_len);
}

// Entries of a message, bounds-checked against its length: nullopt-like
// false when the message is malformed.
bool parse_entries(const MessageHeader& h, const std::byte* p, bool with_data,
                   std::vector<Entry>& out) {
  const uint64_t k = h.args[2];
  if (k > h.payload_len / 24) return false;
  out.resize(static_cast<std::size_t>(k));
  if (k) std::memcpy(out.data(), p, static_cast<std::size_t>(k) * 24);
  uint64_t data = 0;
  if (!with_data) return h.payload_len == k * 24;
  for (const Entry& e : out) {
    if (e.len > h.payload_len) return false;  // also keeps the sum from overflowing
    data += e.len;
  }
  return h.payload_len == k * 24 + data;
}
}  // namespace

bool MessageRma::vector_sent(const Op& op) const noexcept {
  return !op.vchecking && op.vpiece >= core::vector_of(op.cmd)->pieces.size();
}

bool MessageRma::send_next_vector(Op& op, uint64_t cookie, Messaging& t) noexcept {
  const core::VectorRequest& req = *core::vector_of(op.cmd);
  const std::size_t n = req.pieces.size();
  if (op.vpiece >= n) {
    // Checks all sent: once every one answered OK, start moving data.
    if (!op.vchecking || op.outstanding) return false;
    op.vchecking = false;
    op.vpiece = 0;
    op.vwithin = 0;
    if (!n) return false;
  }
  const std::size_t room0 = t.max_message_payload();
  const bool check = op.vchecking;
  if (!req.is_put && !check && uint64_t{op.outstanding} * room0 >= kMaxVecGetInFlight) return false;
  thread_local std::vector<Entry> entries;
  thread_local std::vector<std::byte> data, msg;
  entries.clear();
  data.clear();
  std::size_t room = room0;
  std::size_t piece = op.vpiece;
  uint64_t within = op.vwithin;
  // A get's reply carries the data: count it against the room too.
  const bool counts_data = !check;
  while (piece < n && room >= kVecEntry) {
    const core::VectorPiece& p = req.pieces[piece];
    const uint64_t left = p.len - within;
    uint64_t take = counts_data ? std::min<uint64_t>(left, room - kVecEntry) : left;
    if (take == 0 && left > 0) break;
    entries.push_back(Entry{p.remote + within, take, p.local + within});
    if (req.is_put && !check && take) {
      const std::size_t at = data.size();
      data.resize(at + take);
      const tsu_status_t st = host_.read_memory(
          tsu_gaddr(host_.host_rank(), req.local_seg, p.local + within), data.data() + at, take);
      if (st != TSU_OK) {
        fail(op, st);
        return false;
      }
    }
    room -= kVecEntry + (counts_data ? take : 0);
    within += take;
    if (within == p.len) {
      ++piece;
      within = 0;
    }
  }
  msg.resize(entries.size() * kVecEntry + data.size());
  if (!entries.empty()) std::memcpy(msg.data(), entries.data(), entries.size() * kVecEntry);
  if (!data.empty()) std::memcpy(msg.data() + entries.size() * kVecEntry, data.data(), data.size());
  const uint64_t flags = (req.is_put ? 0 : kFlagGet) | (check ? kFlagCheck : 0);
  const MessageHeader h = vec_header(kRmaVecReq, cookie, uint64_t{req.remote_seg} | (flags << 32),
                                     entries.size(), msg.size());
  const tsu_status_t st = t.send_message(op.peer, h, msg.data());
  if (st == TSU_EAGAIN) {
    op.in_backlog = true;
    backlog_.push_back(cookie);
    return false;
  }
  if (st != TSU_OK) {
    TSU_LOG_DEBUG("vector request to rank %u: sending %zu B failed: %s", op.peer, msg.size(),
                  tsu_strerror(st));
    fail(op, st);
    return false;
  }
  op.vpiece = piece;
  op.vwithin = within;
  op.sent += data.size();
  op.first_sent = true;
  ++op.outstanding;
  return true;
}

void MessageRma::on_vec_req(void* ctx, uint32_t src, const MessageHeader& h,
                            const std::byte* p) noexcept {
  auto& self = *static_cast<MessageRma*>(ctx);
  RmaHost& rt = self.host_;
  const tsu_seg_t seg = static_cast<tsu_seg_t>(h.args[1]);
  const uint64_t flags = h.args[1] >> 32;
  const bool get = flags & kFlagGet, check = flags & kFlagCheck;
  thread_local std::vector<Entry> entries;
  thread_local std::vector<Access> access;
  thread_local std::vector<std::byte> out;
  tsu_status_t st = parse_entries(h, p, !get && !check, entries) ? TSU_OK : TSU_ERR_INVALID_ARG;
  // Every piece first: one out of bounds fails the message, nothing moves.
  access.resize(entries.size());
  for (std::size_t i = 0; st == TSU_OK && i < entries.size(); ++i) {
    const Entry& e = entries[i];
    st = e.remote > UINT64_MAX - e.len
             ? TSU_ERR_OUT_OF_BOUNDS
             : rt.resolve(tsu_gaddr(rt.host_rank(), seg, e.remote), e.len, access[i]);
  }
  if (st != TSU_OK) TSU_LOG_DEBUG("vector request from rank %u (%llu pieces, %u B) failed: %s",
                                  src, static_cast<unsigned long long>(h.args[2]), h.payload_len,
                                  tsu_strerror(st));
  if (st != TSU_OK || check) {
    self.reply(src, vec_header(kRmaVecRep, h.args[0], status_arg(st), 0, 0), nullptr);
    return;
  }
  if (!get) {
    const std::byte* d = p + entries.size() * kVecEntry;
    for (std::size_t i = 0; st == TSU_OK && i < entries.size(); ++i) {
      st = rt.write_memory(tsu_gaddr(rt.host_rank(), seg, entries[i].remote), d, entries[i].len);
      d += entries[i].len;
    }
    self.reply(src, vec_header(kRmaVecRep, h.args[0], status_arg(st), 0, 0), nullptr);
    return;
  }
  // Get: the reply echoes the entries, then the data.
  uint64_t total = 0;
  for (const Entry& e : entries) total += e.len;
  Messaging* t = rt.message_route(src);
  if (!t || entries.size() * kVecEntry + total > t->max_message_payload()) {
    self.reply(src, vec_header(kRmaVecRep, h.args[0], status_arg(TSU_ERR_INVALID_ARG), 0, 0),
               nullptr);
    return;
  }
  out.resize(entries.size() * kVecEntry + total);
  if (!entries.empty()) std::memcpy(out.data(), entries.data(), entries.size() * kVecEntry);
  std::byte* d = out.data() + entries.size() * kVecEntry;
  for (std::size_t i = 0; st == TSU_OK && i < entries.size(); ++i) {
    st = rt.read_memory(tsu_gaddr(rt.host_rank(), seg, entries[i].remote), d, entries[i].len);
    d += entries[i].len;
  }
  if (st != TSU_OK)
    self.reply(src, vec_header(kRmaVecRep, h.args[0], status_arg(st), 0, 0), nullptr);
  else
    self.reply(src, vec_header(kRmaVecRep, h.args[0], status_arg(st), entries.size(), out.size()),
               out.data());
}

void MessageRma::on_vec_rep(void* ctx, uint32_t src, const MessageHeader& h,
                            const std::byte* p) noexcept {
  auto& self = *static_cast<MessageRma*>(ctx);
  const uint64_t cookie = h.args[0];
  Op* op = self.find(cookie);
  if (!op || op->peer != src || op->outstanding == 0 || op->kind != Kind::kVector) return;
  --op->outstanding;
  const tsu_status_t st = arg_status(h.args[1]);
  if (st != TSU_OK) self.fail(*op, st);
  const core::VectorRequest& req = *core::vector_of(op->cmd);
  if (st == TSU_OK && h.payload_len) {
    // Get data: place each piece at its echoed local offset (checked at the call).
    thread_local std::vector<Entry> entries;
    MessageHeader eh = h;
    eh.args[2] = h.args[2];
    if (req.is_put || !parse_entries(eh, p, true, entries)) {
      self.fail(*op, TSU_ERR_SYSTEM);
    } else {
      const std::byte* d = p + entries.size() * kVecEntry;
      for (const Entry& e : entries) {
        const tsu_status_t wst = self.host_.write_memory(
            tsu_gaddr(self.host_.host_rank(), req.local_seg, e.local), d, e.len);
        if (wst != TSU_OK) self.fail(*op, wst);
        d += e.len;
      }
    }
  }
  self.advance(cookie);
}

}  // namespace tsu::transport
