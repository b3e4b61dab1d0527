// Wire format of the local bootstrap protocol, spoken over tsurun's Unix
// socket.  Shared by the client (local_bootstrap.cpp) and the server
// (tools/tsurun/bootstrap_server.cpp); header-only, standard library only.
//
// Frame:  u32 length | u8 type | payload (length - 1 bytes)
//   `length` counts the type byte and the payload, 1 <= length <= kMaxFrame.
//   All integers are little-endian, written byte by byte (no struct punning).
//
// Requests (client -> server), each answered by exactly one reply, in order:
//   Hello    u32 version, u32 rank, u32 size   -> HelloOk   (must come first)
//   Put      u32 key_len, key, value (rest)    -> PutOk     (stored before the reply)
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

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tsu::bootstrap::wire {

inline constexpr uint32_t kProtocolVersion = 1;
inline constexpr uint32_t kMaxFrame = 64u << 20;  // bounds memory a bad peer can make us hold
inline constexpr uint32_t kMaxKey = 4096;
inline constexpr size_t kHeaderSize = 5;  // u32 length + u8 type

enum class MsgType : uint8_t {
  kHello = 1,
  kPut = 2,
  kGet = 3,
  kBarrier = 4,
  kFinalize = 5,
  kHelloOk = 0x81,
  kPutOk = 0x82,
  kValue = 0x83,
  kBarrierDone = 0x84,
  kFinalizeOk = 0x85,
  kError = 0xff,
};

inline bool is_known_type(uint8_t t) {
  return (t >= 1 && t <= 5) || (t >= 0x81 && t <= 0x85) || t == 0xff;
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

  // On kBad, `error` says why; the stream cannot be resynchronised after that.
  Result next(Frame& out, std::string& error) {
    if (buf_.size() - pos_ < kHeaderSize) {
      compact();
      return Result::kNeedMore;
    }
    Reader r(std::span<const std::byte>(buf_).subspan(pos_, kHeaderSize));
    const uint32_t len = r.u32();
    const auto type = static_cast<uint8_t>(r.bytes(1)[0]);
    if (len < 1 || len > kMaxFrame) {
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
};

}  // namespace tsu::bootstrap::wire
