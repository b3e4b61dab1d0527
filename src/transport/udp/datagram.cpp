#include "transport/udp/datagram.hpp"

#include <sodium.h>

#include <cstring>

namespace tsu::transport::udp {

namespace {

inline uint64_t rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

struct SipState {
  uint64_t v0, v1, v2, v3;
  void round() {
    v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32);
    v2 += v3; v3 = rotl(v3, 16); v3 ^= v2;
    v0 += v3; v3 = rotl(v3, 21); v3 ^= v0;
    v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32);
  }
};

// Software CRC32C (Castagnoli, reflected 0x82F63B78), one table.
struct CrcTable {
  uint32_t t[256];
  constexpr CrcTable() : t() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c >> 1) ^ ((c & 1) ? 0x82F63B78u : 0u);
      t[i] = c;
    }
  }
};
constexpr CrcTable kCrcTable;

uint32_t crc32c_soft(uint32_t crc, const std::byte* p, std::size_t len) noexcept {
  for (std::size_t i = 0; i < len; ++i)
    crc = kCrcTable.t[(crc ^ static_cast<uint8_t>(p[i])) & 0xffu] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t crc32c_hw(uint32_t crc, const std::byte* p,
                                                      std::size_t len) noexcept {
  uint64_t c = crc;
  while (len >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    c = __builtin_ia32_crc32di(c, w);
    p += 8;
    len -= 8;
  }
  auto c32 = static_cast<uint32_t>(c);
  while (len--) c32 = __builtin_ia32_crc32qi(c32, static_cast<uint8_t>(*p++));
  return c32;
}
const bool kHaveSse42 = __builtin_cpu_supports("sse4.2");
#endif

}  // namespace

uint32_t crc32c(const std::byte* data, std::size_t len) noexcept {
#if defined(__x86_64__)
  if (kHaveSse42) return ~crc32c_hw(~0u, data, len);
#endif
  return ~crc32c_soft(~0u, data, len);
}

uint64_t siphash13(const Secret& key, const void* data, std::size_t len) noexcept {
  SipState s{key.k0 ^ 0x736f6d6570736575ull, key.k1 ^ 0x646f72616e646f6dull,
             key.k0 ^ 0x6c7967656e657261ull, key.k1 ^ 0x7465646279746573ull};
  const auto* p = static_cast<const unsigned char*>(data);
  const std::size_t full = len & ~std::size_t{7};
  for (std::size_t i = 0; i < full; i += 8) {
    uint64_t m;
    std::memcpy(&m, p + i, 8);
    s.v3 ^= m;
    s.round();
    s.v0 ^= m;
  }
  uint64_t b = static_cast<uint64_t>(len) << 56;
  for (std::size_t i = 0; i < (len & 7); ++i) b |= static_cast<uint64_t>(p[full + i]) << (8 * i);
  s.v3 ^= b;
  s.round();
  s.v0 ^= b;
  s.v2 ^= 0xff;
  s.round();
  s.round();
  s.round();
  return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

void seal_header(WireHeader& h, const Secret& key) noexcept {
  h.magic = kMagic;
  h.version = kVersion;
  h.reserved = 0;
  h.mac = 0;
  h.mac = siphash13(key, &h, sizeof h);
}

const char* parse_status_name(ParseStatus s) noexcept {
  switch (s) {
    case ParseStatus::kOk: return "ok";
    case ParseStatus::kTruncated: return "truncated";
    case ParseStatus::kForeign: return "foreign";
    case ParseStatus::kBadMac: return "bad_mac";
    case ParseStatus::kBadCrc: return "bad_crc";
    case ParseStatus::kMalformed: return "malformed";
    case ParseStatus::kBadTag: return "bad_tag";
    case ParseStatus::kTooLong: return "too_long";
    case ParseStatus::kCount: break;
  }
  return "?";
}

namespace {
void tag_nonce(unsigned char (&nonce)[crypto_aead_chacha20poly1305_IETF_NPUBBYTES], uint32_t src,
               const std::byte* counter) noexcept {
  static_assert(crypto_aead_chacha20poly1305_IETF_NPUBBYTES == 12);
  std::memcpy(nonce, &src, 4);
  std::memcpy(nonce + 4, counter, 8);
}
}  // namespace

bool init_tag_crypto() noexcept { return sodium_init() >= 0; }

void seal_tag(std::byte* datagram, std::size_t len, const PayloadKey& key, uint32_t src,
              uint64_t counter) noexcept {
  std::memcpy(datagram + len, &counter, 8);
  unsigned char nonce[crypto_aead_chacha20poly1305_IETF_NPUBBYTES];
  tag_nonce(nonce, src, datagram + len);
  unsigned long long tag_len = 0;
  unsigned char none = 0;  // the (empty) message and ciphertext: libsodium wants non-null pointers
  crypto_aead_chacha20poly1305_ietf_encrypt_detached(
      &none, reinterpret_cast<unsigned char*>(datagram + len + 8), &tag_len, &none, 0,
      reinterpret_cast<const unsigned char*>(datagram), len + 8, nullptr, nonce, key.k);
}

ParseStatus parse_datagram(std::span<const std::byte> bytes, const Secret& key, uint32_t me,
                           uint32_t size, uint32_t max_payload, ParsedDatagram& out,
                           const PayloadKey* tag_key) noexcept {
  if (bytes.size() < kHeaderSize + (tag_key ? kTagSize : 0)) return ParseStatus::kTruncated;
  WireHeader h;
  std::memcpy(&h, bytes.data(), kHeaderSize);
  if (h.magic != kMagic || h.version != kVersion) return ParseStatus::kForeign;
  const uint64_t mac = h.mac;
  h.mac = 0;
  if (siphash13(key, &h, sizeof h) != mac) return ParseStatus::kBadMac;
  h.mac = mac;
  if (tag_key) {
    // The tag covers everything before it; nothing else is read until it
    // verifies (libsodium compares in constant time).
    const std::size_t body = bytes.size() - kTagSize;
    unsigned char nonce[crypto_aead_chacha20poly1305_IETF_NPUBBYTES];
    tag_nonce(nonce, h.src_rank, bytes.data() + body);
    unsigned char none = 0;  // empty message, as in seal_tag
    if (crypto_aead_chacha20poly1305_ietf_decrypt_detached(
            &none, nullptr, &none, 0, reinterpret_cast<const unsigned char*>(bytes.data() + body + 8),
            reinterpret_cast<const unsigned char*>(bytes.data()), body + 8, nonce, tag_key->k) != 0)
      return ParseStatus::kBadTag;
    bytes = bytes.first(body);
  }
  if (h.payload_len != bytes.size() - kHeaderSize) return ParseStatus::kTruncated;
  const auto payload = bytes.subspan(kHeaderSize);
  if (crc32c(payload.data(), payload.size()) != h.payload_crc) return ParseStatus::kBadCrc;
  // Authenticated: now the fields must make sense.
  if (h.reserved != 0 || h.dst_rank != me || h.src_rank >= size || h.src_rank == me)
    return ParseStatus::kMalformed;
  switch (h.type) {
    case kData:
      if (h.payload_len > max_payload) return ParseStatus::kTooLong;
      if (h.payload_len == 0 || (h.flags & ~(kFirst | kLast | kDupSeen | kPacked)) ||
          ((h.flags & kPacked) && (h.flags & (kFirst | kLast)) != (kFirst | kLast)))
        return ParseStatus::kMalformed;
      break;
    case kAck:
      if (h.payload_len > kMaxSackBytes || (h.flags & ~(kPong | kDupSeen))) return ParseStatus::kMalformed;
      break;
    case kPing:
      if (h.payload_len != 0 || h.flags) return ParseStatus::kMalformed;
      break;
    default:
      return ParseStatus::kMalformed;
  }
  out.h = h;
  out.payload = payload;
  return ParseStatus::kOk;
}

}  // namespace tsu::transport::udp
