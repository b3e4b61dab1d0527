// libFuzzer target: the bootstrap wire decoder and request parser
// (src/bootstrap/local/wire.hpp), as tsurun's service runs them on bytes
// from an unauthenticated connection.  The input is cut into pieces of
// fuzzer-chosen sizes (the stream arrives in arbitrary recv() chunks); the
// first frames are held to the handshake limit, later ones to kMaxFrame,
// like a connection that authenticated.  It must never crash, read outside
// a frame, return a frame over the limit, or accept a request whose fields
// do not fit its frame.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "bootstrap/local/wire.hpp"

namespace wire = tsu::bootstrap::wire;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  // First byte: chunking seed; the rest is the stream.
  const uint8_t seed = data[0];
  const auto stream = std::as_bytes(std::span(data + 1, size - 1));
  wire::FrameDecoder dec;
  dec.set_limit(wire::kMaxHandshakeFrame);
  uint32_t limit = wire::kMaxHandshakeFrame;
  size_t pos = 0, step = 0, frames = 0;
  bool bad = false;
  while (pos < stream.size() && !bad) {
    const size_t chunk = 1 + ((seed + 7 * step++) % 61);
    const size_t n = std::min(chunk, stream.size() - pos);
    dec.feed(stream.subspan(pos, n));
    pos += n;
    for (;;) {
      wire::Frame f;
      std::string err;
      const auto r = dec.next(f, err);
      if (r == wire::FrameDecoder::Result::kNeedMore) break;
      if (r == wire::FrameDecoder::Result::kBad) {
        if (err.empty()) __builtin_trap();  // a refusal always says why
        bad = true;
        break;
      }
      if (f.payload.size() + 1 > limit) __builtin_trap();
      if (!wire::is_known_type(static_cast<uint8_t>(f.type))) __builtin_trap();
      wire::Request q;
      if (wire::parse_request(f, q, err)) {
        if (q.type != f.type) __builtin_trap();
        if (q.type == wire::MsgType::kPut) {
          // The value lies inside the payload, after the key.
          const auto* lo = f.payload.data();
          const auto* hi = lo + f.payload.size();
          if (q.value.size() && (q.value.data() < lo || q.value.data() + q.value.size() > hi)) __builtin_trap();
          if (q.key.empty() || q.key.size() > wire::kMaxKey) __builtin_trap();
          if (4 + q.key.size() + q.value.size() != f.payload.size()) __builtin_trap();
        }
        if (q.type == wire::MsgType::kGet && (q.key.empty() || q.key.size() > wire::kMaxKey)) __builtin_trap();
        if ((q.type == wire::MsgType::kHello && f.payload.size() != 44) ||
            (q.type == wire::MsgType::kAuth && f.payload.size() != 32))
          __builtin_trap();
      } else if (err.empty()) {
        __builtin_trap();
      }
      std::array<uint8_t, 32> nonce, proof;
      if (wire::parse_challenge(f, nonce, proof) && f.payload.size() != 64) __builtin_trap();
      // After two frames the connection counts as authenticated.
      if (++frames == 2) {
        dec.set_limit(wire::kMaxFrame);
        limit = wire::kMaxFrame;
      }
    }
    if (dec.buffered() > size_t{limit} + 4 + 61) __builtin_trap();  // never holds more than one frame
  }
  // Round trip: a frame we build decodes to itself.
  if (!bad && stream.size() < 4096) {
    const auto frame = wire::make_frame(wire::MsgType::kPut, stream);
    wire::FrameDecoder d2;
    d2.feed(frame);
    wire::Frame f;
    std::string err;
    if (d2.next(f, err) != wire::FrameDecoder::Result::kFrame) __builtin_trap();
    if (f.payload.size() != stream.size() ||
        (!stream.empty() && std::memcmp(f.payload.data(), stream.data(), stream.size()) != 0))
      __builtin_trap();
  }
  return 0;
}
