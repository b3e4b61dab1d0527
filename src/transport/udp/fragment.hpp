// Fragmentation and reassembly.  A message (40-byte core::MessageHeader +
// payload) travels as consecutive data datagrams of at most `max_fragment`
// bytes each; the first carries kFirst, the last kLast.  Because datagrams are
// delivered to the reassembler in sequence order, reassembly is appending:
// a single-datagram message is dispatched straight from the datagram.
// Packing goes the other way: small messages sent in one batch share a
// datagram (kPacked), split again by for_each_packed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "core/message.hpp"
#include "transport/udp/datagram.hpp"

namespace tsu::transport::udp {

inline constexpr std::size_t kMsgHeaderSize = sizeof(core::MessageHeader);

inline std::size_t fragment_count(std::size_t message_bytes, std::size_t max_fragment) {
  return (message_bytes + max_fragment - 1) / max_fragment;
}

// Calls on_message(header, payload) for each message of a kPacked datagram's
// payload, after checking that the whole payload is well formed (whole
// messages, each within max_message); false, and no call, otherwise.
template <typename F>
bool for_each_packed(std::span<const std::byte> body, std::size_t max_message, F&& on_message) {
  for (int pass = 0; pass < 2; ++pass) {
    std::size_t off = 0;
    while (off < body.size()) {
      if (body.size() - off < kMsgHeaderSize) return false;
      core::MessageHeader hdr;
      std::memcpy(&hdr, body.data() + off, kMsgHeaderSize);
      if (hdr.payload_len > max_message || hdr.payload_len > body.size() - off - kMsgHeaderSize)
        return false;
      if (pass == 1) on_message(hdr, body.data() + off + kMsgHeaderSize);
      off += kMsgHeaderSize + hdr.payload_len;
    }
  }
  return true;
}

class Reassembler {
 public:
  enum class Result { kNone, kMessage, kError };

  // Feeds the next in-order fragment.  On kMessage, `hdr` and `payload` are
  // valid until the next call; a reassembled one (holds_message()) must be
  // taken before the next feed.
  Result feed(std::span<const std::byte> frag, uint8_t flags, std::size_t max_message,
              core::MessageHeader& hdr, const std::byte*& payload) {
    if (flags & kFirst) {
      if (!buf_.empty()) {  // previous message lost its tail: protocol error
        buf_.clear();
        return Result::kError;
      }
      if (frag.size() < kMsgHeaderSize) return Result::kError;
      std::memcpy(&hdr, frag.data(), kMsgHeaderSize);
      const std::size_t total = kMsgHeaderSize + std::size_t{hdr.payload_len};
      if (hdr.payload_len > max_message) return Result::kError;
      if (flags & kLast) {
        if (frag.size() != total) return Result::kError;
        payload = frag.data() + kMsgHeaderSize;
        return Result::kMessage;
      }
      if (frag.size() >= total) return Result::kError;
      expected_ = total;
      buf_.reserve(total);
      buf_.assign(frag.begin(), frag.end());
      return Result::kNone;
    }
    if (buf_.empty()) return Result::kError;  // continuation without a start
    if (buf_.size() + frag.size() > expected_) {
      buf_.clear();
      return Result::kError;
    }
    buf_.insert(buf_.end(), frag.begin(), frag.end());
    if (!(flags & kLast)) return Result::kNone;
    if (buf_.size() != expected_) {
      buf_.clear();
      return Result::kError;
    }
    std::memcpy(&hdr, buf_.data(), kMsgHeaderSize);
    payload = buf_.data() + kMsgHeaderSize;
    done_ = true;
    return Result::kMessage;
  }
  bool idle() const noexcept { return buf_.empty(); }
  // Whether the last kMessage was reassembled here (more than one fragment;
  // else its payload pointed into the datagram).
  bool holds_message() const noexcept { return done_; }
  // Hands over the reassembled message (header + payload) so it is
  // dispatched from this buffer instead of being copied again; `spare`
  // (empty, capacity kept from an earlier message) becomes the next buffer.
  std::vector<std::byte> take(std::vector<std::byte>&& spare) {
    std::vector<std::byte> out;
    out.swap(buf_);
    buf_ = std::move(spare);
    buf_.clear();
    done_ = false;
    return out;
  }

 private:
  std::vector<std::byte> buf_;
  std::size_t expected_ = 0;
  bool done_ = false;
};

}  // namespace tsu::transport::udp
