// libFuzzer target: the udp datagram parser (a pure function) on arbitrary
// bytes.  It must never read outside the input, crash or accept a datagram
// without a valid MAC (or, with payload authentication, a valid tag).  Half
// the inputs are re-sealed with the fuzz key so the fuzzer also explores the
// checks after authentication.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "transport/udp/datagram.hpp"

using namespace tsu::transport::udp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Secret key{0x1111222233334444ull, 0x5555666677778888ull};
  std::vector<std::byte> buf(size);
  if (size) std::memcpy(buf.data(), data, size);
  ParsedDatagram out;
  ParseStatus st = parse_datagram(buf, key, 0, 4, 1408, out);
  if (st == ParseStatus::kOk) __builtin_trap();  // a random input cannot carry our MAC
  static const PayloadKey tag_key = [] {
    PayloadKey k;
    for (unsigned i = 0; i < sizeof k.k; ++i) k.k[i] = static_cast<unsigned char>(i * 7 + 1);
    return k;
  }();
  if (parse_datagram(buf, key, 0, 4, 1408, out, &tag_key) == ParseStatus::kOk) __builtin_trap();
  // Re-seal: a valid MAC over whatever header the fuzzer made.
  if (size >= kHeaderSize && (data[0] & 1)) {
    WireHeader h;
    std::memcpy(&h, buf.data(), kHeaderSize);
    h.payload_crc = crc32c(buf.data() + kHeaderSize, size - kHeaderSize);
    seal_header(h, key);
    std::memcpy(buf.data(), &h, kHeaderSize);
    st = parse_datagram(buf, key, 0, 4, 1408, out);
    if (st == ParseStatus::kOk) {
      if (out.payload.size() != out.h.payload_len || out.h.src_rank >= 4 || out.h.dst_rank != 0)
        __builtin_trap();
      if (out.payload.data() + out.payload.size() != buf.data() + buf.size()) __builtin_trap();
    }
    // With payload authentication: the re-sealed header alone is not enough,
    // a tag over the whole of it is.
    if (data[0] & 2) {
      if (parse_datagram(buf, key, 0, 4, 1408, out, &tag_key) == ParseStatus::kOk) __builtin_trap();
      std::vector<std::byte> tagged(buf);
      tagged.resize(buf.size() + kTagSize);
      WireHeader th;
      std::memcpy(&th, buf.data(), kHeaderSize);
      seal_tag(tagged.data(), buf.size(), tag_key, th.src_rank, size);
      const ParseStatus ts = parse_datagram(tagged, key, 0, 4, 1408, out, &tag_key);
      if (ts != st) __builtin_trap();  // the tag verifies; the rest decides as without it
      if (ts == ParseStatus::kOk && out.payload.data() + out.payload.size() != tagged.data() + buf.size())
        __builtin_trap();
    }
  }
  return 0;
}
