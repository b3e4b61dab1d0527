// Wire format of the udp transport: one fixed header per datagram, then the
// payload.  Little-endian (asserted), no padding.  Every datagram carries a
// MAC: SipHash-1-3 keyed with the 128-bit job secret over the header (with
// `mac` zeroed), and the header carries the CRC32C of the payload, so a
// datagram from outside the job (other key), a garbled one (CRC or MAC
// mismatch) or a truncated one (length mismatch) is rejected before anything
// reads its fields.  Replays inside the job are caught by sequence numbers
// (reliability.hpp).  This protects against accidents and other jobs, not
// against an on-path attacker who can see traffic (CRC32C is not a MAC).
//
// Payload authentication (TSU_UDP_AUTH=1, every rank alike): each datagram
// also ends in a 24-byte trailer, a u64 counter and a 16-byte tag:
// ChaCha20-Poly1305 (IETF, libsodium) with an empty message and the whole
// datagram before the tag - sealed header, payload, counter - as associated
// data, under a 256-bit key derived from the job secret.  The nonce is the
// sender's rank and its counter, which counts every datagram the rank seals,
// so no nonce repeats under the job's key.  A datagram whose tag does not
// verify is dropped as kBadTag before its fields are used, so an on-path
// attacker can neither forge nor alter traffic; replays of data die on
// sequence numbers, replayed acknowledgements are stale.  The payload is not
// encrypted.
//
// Types:
//   kData  seq = this datagram's number, payload = a fragment of a message
//          (flags kFirst / kLast; the first fragment starts with the
//          40-byte core::MessageHeader).  Also acknowledges (ack/sack).
//   kAck   pure acknowledgement; payload = extended selective-ack bitmap
//          (bit i: seq ack+1+i arrived), at most kMaxSackBytes.
//   kPing  keep-alive: the peer answers with an immediate kAck (flag kPong).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>

namespace tsu::transport::udp {

static_assert(std::endian::native == std::endian::little, "wire format is little-endian");

inline constexpr uint32_t kMagic = 0x47555354;  // "TSUG"
inline constexpr uint8_t kVersion = 1;

enum DatagramType : uint8_t { kData = 1, kAck = 2, kPing = 3 };
// kDupSeen (data or ack): a duplicate arrived since the sender's previous
// datagram to us, i.e. one of our retransmissions was spurious (D-SACK's
// signal, RFC 8985 section 6.2): the peer widens its reordering window.
// kPacked (data, with kFirst | kLast): several whole messages back to back,
// each a core::MessageHeader and its payload (small messages sent in one
// batch share a datagram; fragment.hpp).
enum DatagramFlags : uint8_t { kFirst = 1, kLast = 2, kPong = 4, kDupSeen = 8, kPacked = 16 };

struct WireHeader {
  uint32_t magic;
  uint8_t version;
  uint8_t type;
  uint8_t flags;
  uint8_t reserved;     // 0
  uint32_t src_rank;
  uint32_t dst_rank;
  uint32_t seq;         // kData: this datagram's sequence number
  uint32_t ack;         // every seq < ack has arrived
  uint64_t sack;        // bit i: seq ack+1+i has arrived
  uint64_t ts;          // sender's clock (ns) when transmitted
  uint64_t echo_ts;     // ts of the datagram this acknowledges (0: none)
  uint32_t payload_len; // bytes after the header
  uint32_t payload_crc; // CRC32C of the payload
  uint64_t mac;         // SipHash-1-3(secret, header with mac = 0)
};
static_assert(sizeof(WireHeader) == 64);

inline constexpr std::size_t kHeaderSize = sizeof(WireHeader);
inline constexpr std::size_t kMaxSackBytes = 512;  // 4096 extra sack bits in a kAck

struct Secret {
  uint64_t k0 = 0, k1 = 0;
};

// The key of the payload tag (TSU_UDP_AUTH) and the tag's size.
struct PayloadKey {
  unsigned char k[32] = {};
};
inline constexpr std::size_t kTagSize = 24;  // u64 counter + 16-byte tag

// Why a datagram was rejected (or kOk).  Each has a drop counter.
enum class ParseStatus : uint8_t {
  kOk,
  kTruncated,  // shorter than a header, or payload_len disagrees with the size
  kForeign,    // wrong magic/version: not ours at all
  kBadMac,     // MAC mismatch: another job, or a garbled header
  kBadCrc,     // payload garbled
  kMalformed,  // authenticated but inconsistent (bad type, flags, ranks, sizes)
  kBadTag,     // payload authentication on, and the datagram's tag is wrong
  kTooLong,    // authenticated data, but more payload than this rank's TSU_UDP_MTU allows
  kCount
};
const char* parse_status_name(ParseStatus s) noexcept;

struct ParsedDatagram {
  WireHeader h;
  std::span<const std::byte> payload;
};

// Pure function: validates `bytes` as a datagram of the job keyed by `key`
// sent to rank `me` of a job of `size` ranks; with `tag_key`, the datagram
// must also end in a valid tag (which is not part of the payload).  Writes
// `out` only on kOk.  Never reads outside `bytes`.
ParseStatus parse_datagram(std::span<const std::byte> bytes, const Secret& key, uint32_t me,
                           uint32_t size, uint32_t max_payload, ParsedDatagram& out,
                           const PayloadKey* tag_key = nullptr) noexcept;

// Lets libsodium pick its fastest implementations (SIMD Poly1305 is several
// times the portable one); idempotent.  False if libsodium cannot start.
bool init_tag_crypto() noexcept;

// Writes the trailer (counter and tag) of the `len` bytes at `datagram` (a
// sealed header of rank `src` and its payload) right after them: the buffer
// must hold len + kTagSize bytes.  `counter` must never repeat for `src`.
void seal_tag(std::byte* datagram, std::size_t len, const PayloadKey& key, uint32_t src,
              uint64_t counter) noexcept;

// Completes a header in place (crc of `payload` must already be in h) and
// computes its MAC.
void seal_header(WireHeader& h, const Secret& key) noexcept;

uint32_t crc32c(const std::byte* data, std::size_t len) noexcept;
uint64_t siphash13(const Secret& key, const void* data, std::size_t len) noexcept;

}  // namespace tsu::transport::udp
