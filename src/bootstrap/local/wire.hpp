// Wire format of the local bootstrap protocol, spoken over tsurun's Unix
// socket.  Shared by the client (local_bootstrap.cpp) and the server
// (tools/tsurun/bootstrap_server.cpp); header-only, standard library only.
//
// Frame:  u32 length | u8 type | payload (length - 1 bytes)
//   `length` counts the type byte and the payload, 1 <= length <= kMaxFrame.
//   All integers are little-endian, written byte by byte (no struct punning).
//
// Handshake (auth.hpp; nothing else is accepted before it completes, and
// frames before it are limited to kMaxHandshakeFrame bytes):
//   Hello    u32 version, u32 rank, u32 size, client nonce (32)
//                                              -> Challenge server nonce (32),
//                                                 service proof (32)
//   Auth     rank proof (32)                   -> HelloOk
//   The rank checks the service's proof before it sends its own; the service
//   checks the rank's proof (constant time), then claims the rank: a rank is
//   claimed by one connection, once per job.
// Requests (client -> server), each answered by exactly one reply, in order:
//   Put      u32 key_len, key, value (rest)    -> PutOk     (stored before the reply;
//                                                 a key is written once: putting
//                                                 another value is an error)
//   Get      key (whole payload)               -> Value     value (whole payload);
//                                                 held until some rank puts `key`
//   Barrier  u64 epoch                         -> BarrierDone u64 epoch; held until
//                                                 all ranks sent the same epoch
//   Finalize (empty)                           -> FinalizeOk
// Any request may instead be answered by Error (UTF-8 message); the server
// then closes the connection.  Epochs count a rank's barriers from 0, so a
// rank that skipped or repeated a barrier is caught instead of silently
// matching the wrong one.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tsu::bootstrap::wire {

inline constexpr uint32_t kProtocolVersion = 2;
inline constexpr uint32_t kMaxFrame = 64u << 20;  // bounds memory a bad peer can make us hold
inline constexpr uint32_t kMaxKey = 4096;
inline constexpr size_t kHeaderSize = 5;  // u32 length + u8 type
inline constexpr uint32_t kMaxHandshakeFrame = 128;  // before authentication

enum class MsgType : uint8_t {
  kHello = 1,
  kPut = 2,
  kGet = 3,
  kBarrier = 4,
  kFinalize = 5,
  kAuth = 6,
  kHelloOk = 0x81,
  kPutOk = 0x82,
  kValue = 0x83,
  kBarrierDone = 0x84,
  kFinalizeOk = 0x85,
  kChallenge = 0x86,
  kError = 0xff,
};

inline bool is_known_type(uint8_t t) {
  return (t >= 1 && t <= 6) || (t >= 0x81 && t <= 0x86) || t == 0xff;
}

// Appends little-endian fields to a byte buffer.
class Writer {
 public:
  void u8(uint8_t v) { buf_.push_back(std::byte{v}); }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) buf_.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xffu));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) buf_.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xffu));
  }
  void bytes(std::span<const std::byte> b) { buf_.insert(buf_.end(), b.begin(), b.end()); }
  void str(std::string_view s) { bytes(std::as_bytes(std::span<const char>(s.data(), s.size()))); }
  std::vector<std::byte>& data() { return buf_; }

 private:
  std::vector<std::byte> buf_;
};

// Reads little-endian fields from a payload; a short read sets !ok() and
// returns zeros, so callers check ok() once at the end.
class Reader {
 public:
  explicit Reader(std::span<const std::byte> b) : b_(b) {}
  uint32_t u32() { return static_cast<uint32_t>(take(4)); }
  uint64_t u64() { return take(8); }
  std::span<const std::byte> bytes(size_t n) {
    if (b_.size() - pos_ < n) {
      ok_ = false;
      return {};
    }
    auto s = b_.subspan(pos_, n);
    pos_ += n;
    return s;
  }
  std::span<const std::byte> rest() { return bytes(b_.size() - pos_); }
  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == b_.size(); }

 private:
  uint64_t take(size_t n) {
    auto s = bytes(n);
    uint64_t v = 0;
    for (size_t i = 0; i < s.size(); ++i) v |= static_cast<uint64_t>(s[i]) << (8 * i);
    return v;
  }
  std::span<const std::byte> b_;
  size_t pos_ = 0;
  bool ok_ = true;
};

inline std::string_view as_string(std::span<const std::byte> b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

// Builds a complete frame (header + payload).
inline std::vector<std::byte> make_frame(MsgType type, std::span<const std::byte> payload = {}) {
  Writer w;
  w.u32(static_cast<uint32_t>(payload.size() + 1));
  w.u8(static_cast<uint8_t>(type));
  w.bytes(payload);
  return std::move(w.data());
}

struct Frame {
  MsgType type{};
  std::vector<std::byte> payload;
};

// Reassembles frames from a byte stream that arrives in arbitrary pieces.
class FrameDecoder {
 public:
  enum class Result { kFrame, kNeedMore, kBad };

  void feed(std::span<const std::byte> b) { buf_.insert(buf_.end(), b.begin(), b.end()); }
  // Frames longer than `max` (<= kMaxFrame) are refused from now on.
  void set_limit(uint32_t max) { limit_ = max; }
  // Bytes fed but not yet returned as frames.
  size_t buffered() const { return buf_.size() - pos_; }

  // On kBad, `error` says why; the stream cannot be resynchronised after that.
  Result next(Frame& out, std::string& error) {
    if (buf_.size() - pos_ < kHeaderSize) {
      compact();
      return Result::kNeedMore;
    }
    Reader r(std::span<const std::byte>(buf_).subspan(pos_, kHeaderSize));
    const uint32_t len = r.u32();
    const auto type = static_cast<uint8_t>(r.bytes(1)[0]);
    if (len < 1 || len > limit_) {
      error = "bad frame length " + std::to_string(len);
      return Result::kBad;
    }
    if (!is_known_type(type)) {
      error = "unknown frame type " + std::to_string(type);
      return Result::kBad;
    }
    if (buf_.size() - pos_ < 4 + size_t{len}) {
      compact();
      return Result::kNeedMore;
    }
    out.type = static_cast<MsgType>(type);
    const auto first = buf_.begin() + static_cast<std::ptrdiff_t>(pos_ + kHeaderSize);
    out.payload.assign(first, first + static_cast<std::ptrdiff_t>(len - 1));
    pos_ += 4 + size_t{len};
    return Result::kFrame;
  }

 private:
  // Drops consumed bytes lazily so a burst of small frames is not quadratic.
  void compact() {
    if (pos_ > 0) {
      buf_.erase(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(pos_));
      pos_ = 0;
    }
  }
  std::vector<std::byte> buf_;
  size_t pos_ = 0;
  uint32_t limit_ = kMaxFrame;
};

// A request as the server sees it, checked field by field (parse_request).
struct Request {
  MsgType type{};
  uint32_t rank = 0, size = 0;           // Hello
  std::array<uint8_t, 32> token{};       // Hello: client nonce; Auth: rank proof
  std::string key;                       // Put, Get
  std::span<const std::byte> value;      // Put: points into the frame's payload
  uint64_t epoch = 0;                    // Barrier
};

// Pure function: validates a request frame.  On false, `error` says why
// (the server sends it back and drops the connection).
inline bool parse_request(const Frame& f, Request& out, std::string& error) {
  Reader r(f.payload);
  out = Request{};
  out.type = f.type;
  auto take_token = [&] {
    const auto b = r.bytes(out.token.size());
    for (size_t i = 0; i < b.size(); ++i) out.token[i] = static_cast<uint8_t>(b[i]);
  };
  switch (f.type) {
    case MsgType::kHello: {
      const uint32_t version = r.u32();
      if (r.ok() && version != kProtocolVersion) {
        error = "protocol version " + std::to_string(version) + ", tsurun speaks " + std::to_string(kProtocolVersion);
        return false;
      }
      out.rank = r.u32();
      out.size = r.u32();
      take_token();
      if (!r.ok() || !r.at_end()) {
        error = "malformed Hello";
        return false;
      }
      return true;
    }
    case MsgType::kAuth:
      take_token();
      if (!r.ok() || !r.at_end()) {
        error = "malformed Auth";
        return false;
      }
      return true;
    case MsgType::kPut: {
      const uint32_t klen = r.u32();
      if (!r.ok() || klen == 0 || klen > kMaxKey) {
        error = "malformed Put";
        return false;
      }
      out.key = std::string(as_string(r.bytes(klen)));
      out.value = r.rest();
      if (!r.ok()) {
        error = "malformed Put";
        return false;
      }
      return true;
    }
    case MsgType::kGet:
      if (f.payload.empty() || f.payload.size() > kMaxKey) {
        error = "malformed Get";
        return false;
      }
      out.key = std::string(as_string(f.payload));
      return true;
    case MsgType::kBarrier:
      out.epoch = r.u64();
      if (!r.ok() || !r.at_end()) {
        error = "malformed Barrier";
        return false;
      }
      return true;
    case MsgType::kFinalize:
      if (!f.payload.empty()) {
        error = "malformed Finalize";
        return false;
      }
      return true;
    default:
      error = "unexpected frame type " + std::to_string(static_cast<int>(f.type));
      return false;
  }
}

// The service's Challenge as the rank sees it.
inline bool parse_challenge(const Frame& f, std::array<uint8_t, 32>& server_nonce,
                            std::array<uint8_t, 32>& service_proof) {
  if (f.type != MsgType::kChallenge || f.payload.size() != 64) return false;
  for (size_t i = 0; i < 32; ++i) {
    server_nonce[i] = static_cast<uint8_t>(f.payload[i]);
    service_proof[i] = static_cast<uint8_t>(f.payload[32 + i]);
  }
  return true;
}

}  // namespace tsu::bootstrap::wire
