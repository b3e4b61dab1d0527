// The udp transport in one process: the datagram parser, and two (or three)
// transports on 127.0.0.1 exchanging messages through the seeded impairment
// stage (loss, reordering, duplication, corruption, delay): every message is
// delivered exactly once, in order, intact.  Also: foreign, truncated and
// corrupted datagrams injected at a transport's port are dropped and counted;
// a transport whose peer vanished declares it lost.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <string>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "core/message.hpp"
#include "transport/udp/datagram.hpp"
#include "transport/udp/impair.hpp"
#include "transport/udp/interface_mtu.hpp"
#include "transport/udp/udp_plugin.hpp"
#include "transport/udp/udp_transport.hpp"

using namespace tsu;
using namespace tsu::transport::udp;

namespace {

const Secret kKey{0x0123456789abcdefull, 0xfedcba9876543210ull};

std::vector<std::byte> make_datagram(uint8_t type, uint32_t src, uint32_t dst, uint32_t seq,
                                     std::vector<std::byte> payload, const Secret& key = kKey,
                                     uint8_t flags = kFirst | kLast) {
  WireHeader h{};
  h.type = type;
  h.flags = type == kData ? flags : 0;
  h.src_rank = src;
  h.dst_rank = dst;
  h.seq = seq;
  h.payload_len = static_cast<uint32_t>(payload.size());
  h.payload_crc = crc32c(payload.data(), payload.size());
  seal_header(h, key);
  std::vector<std::byte> d(sizeof h + payload.size());
  std::memcpy(d.data(), &h, sizeof h);
  if (!payload.empty()) std::memcpy(d.data() + sizeof h, payload.data(), payload.size());
  return d;
}

// The udp settings table (TSU_UDP_*): its documented defaults are
// UdpConfig's initializers, bad values name the variable, and the checks
// between fields hold.
TEST(UdpSettings, DefaultsBadValuesAndCrossChecks) {
  const auto& table = tsu::transport::udp::udp_settings();
  std::map<std::string, std::string> vars;
  const tsu::core::GetEnv env = [&](const char* n) -> const char* {
    auto it = vars.find(n);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
  UdpConfig from_table;
  from_table.mtu = 1;
  std::string error;
  ASSERT_EQ(table.apply(from_table, env, error), TSU_OK) << error;
  const auto expected = table.describe(UdpConfig{});
  const auto actual = table.describe(from_table);
  for (std::size_t i = 0; i < actual.size(); ++i) {
    EXPECT_EQ(actual[i].value, expected[i].value) << actual[i].env;
    EXPECT_EQ(actual[i].env.rfind("TSU_UDP_", 0), 0u) << actual[i].env;
  }
  const std::pair<const char*, const char*> bad[] = {
      {"TSU_UDP_ADDR", "10.0.0"},   {"TSU_UDP_PORT", "70000"},   {"TSU_UDP_MTU", "100"},
      {"TSU_UDP_WINDOW", "1000"},   {"TSU_UDP_QUEUE", "3"},      {"TSU_UDP_MAX_MESSAGE", "1"},
      {"TSU_UDP_RTO_MIN", "1ns"},   {"TSU_UDP_GSO", "2"},        {"TSU_UDP_CWND_MIN", "0"},
      {"TSU_UDP_SOCKBUF", "2G"}};
  for (const auto& [var, value] : bad) {
    vars = {{var, value}};
    UdpConfig c;
    EXPECT_EQ(table.apply(c, env, error), TSU_ERR_CONFIG) << var << "=" << value;
    EXPECT_NE(error.find(var), std::string::npos) << error;
  }
  vars = {{"TSU_UDP_WINDOW", "64"}, {"TSU_UDP_QUEUE", "32"}};
  UdpConfig c;
  EXPECT_EQ(table.apply(c, env, error), TSU_ERR_CONFIG);
  EXPECT_NE(error.find("TSU_UDP_QUEUE"), std::string::npos) << error;
  vars = {{"TSU_UDP_ADDR", "127.0.0.2"}, {"TSU_UDP_KEEPALIVE", "2s"}, {"TSU_UDP_PEER_TIMEOUT", "3s"}};
  ASSERT_EQ(table.apply(c, env, error), TSU_OK) << error;
  EXPECT_TRUE(c.bind_ip_given);
  EXPECT_EQ(c.bind_ip, "127.0.0.2");
  EXPECT_EQ(c.keepalive_ns, 2'000'000'000u);
}

TEST(UdpSettings, MtuAutoFollowsTheInterface) {
  using namespace tsu::transport::udp;
  EXPECT_EQ(auto_datagram_bytes(0), 1472u);       // unknown interface
  EXPECT_EQ(auto_datagram_bytes(1500), 1472u);    // Ethernet
  EXPECT_EQ(auto_datagram_bytes(1450), 1422u);    // a tunnel
  EXPECT_EQ(auto_datagram_bytes(9000), 8972u);    // jumbo frames
  EXPECT_EQ(auto_datagram_bytes(65536), 8972u);   // loopback: capped
  EXPECT_EQ(auto_datagram_bytes(200), 256u);      // floor
  EXPECT_EQ(interface_mtu("0.0.0.0"), 0u);
  EXPECT_EQ(interface_mtu("192.0.2.1"), 0u);      // TEST-NET-1: on no interface here
  EXPECT_EQ(interface_mtu("not an address"), 0u);
  // Loopback's MTU as the kernel reports it.
  if (FILE* f = std::fopen("/sys/class/net/lo/mtu", "r")) {
    unsigned lo = 0;
    const int got = std::fscanf(f, "%u", &lo);
    std::fclose(f);
    if (got == 1) {
      EXPECT_EQ(interface_mtu("127.0.0.1"), lo);
    }
  }
  const auto& table = udp_settings();
  std::map<std::string, std::string> vars;
  const tsu::core::GetEnv env = [&](const char* n) -> const char* {
    auto it = vars.find(n);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
  std::string error;
  UdpConfig c;
  ASSERT_EQ(table.apply(c, env, error), TSU_OK) << error;
  EXPECT_FALSE(c.mtu_given);
  vars = {{"TSU_UDP_MTU", "9000"}};
  ASSERT_EQ(table.apply(c, env, error), TSU_OK) << error;
  EXPECT_TRUE(c.mtu_given);
  EXPECT_EQ(c.mtu, 9000u);
  vars = {{"TSU_UDP_MTU", "auto"}};
  ASSERT_EQ(table.apply(c, env, error), TSU_OK) << error;
  EXPECT_FALSE(c.mtu_given);
}

TEST(UdpDatagram, RoundTrip) {
  auto d = make_datagram(kData, 1, 0, 7, std::vector<std::byte>(100, std::byte{5}));
  ParsedDatagram p;
  ASSERT_EQ(parse_datagram(d, kKey, 0, 2, 1408, p), ParseStatus::kOk);
  EXPECT_EQ(p.h.seq, 7u);
  EXPECT_EQ(p.payload.size(), 100u);
}

// Payload authentication (TSU_UDP_AUTH): a tag after the payload.
PayloadKey tag_key(unsigned char fill) {
  PayloadKey k;
  std::memset(k.k, fill, sizeof k.k);
  return k;
}
std::vector<std::byte> with_tag(std::vector<std::byte> d, const PayloadKey& k) {
  const std::size_t n = d.size();
  d.resize(n + kTagSize);
  static uint64_t counter = 0;
  seal_tag(d.data(), n, k, 1, counter++);
  return d;
}

TEST(UdpDatagram, TagRoundTrip) {
  const auto k = tag_key(7);
  auto d = with_tag(make_datagram(kData, 1, 0, 7, std::vector<std::byte>(100, std::byte{5})), k);
  ParsedDatagram p;
  ASSERT_EQ(parse_datagram(d, kKey, 0, 2, 1408, p, &k), ParseStatus::kOk);
  EXPECT_EQ(p.payload.size(), 100u);  // the tag is not payload
  EXPECT_EQ(p.payload.data() + 100, d.data() + d.size() - kTagSize);
  // A receiver without payload authentication does not take it either.
  EXPECT_EQ(parse_datagram(d, kKey, 0, 2, 1408, p), ParseStatus::kTruncated);
}

TEST(UdpDatagram, TamperedPayloadDroppedWithTag) {
  const auto k = tag_key(7);
  const auto good = with_tag(make_datagram(kData, 1, 0, 7, std::vector<std::byte>(100, std::byte{5})), k);
  ParsedDatagram p;
  // Flip each bit of the payload and the tag: always kBadTag, never accepted,
  // even when the attacker fixes the CRC (which it can: CRC32C is no MAC).
  for (std::size_t i = kHeaderSize; i < good.size(); ++i) {
    for (int b = 0; b < 8; ++b) {
      auto bad = good;
      bad[i] ^= std::byte{static_cast<unsigned char>(1u << b)};
      EXPECT_EQ(parse_datagram(bad, kKey, 0, 2, 1408, p, &k), ParseStatus::kBadTag) << i << ":" << b;
    }
  }
  // An attacker who knows the header key (the SipHash MAC) still cannot
  // alter the payload: re-sealed header with a matching CRC, old tag.
  auto forged = make_datagram(kData, 1, 0, 7, std::vector<std::byte>(100, std::byte{6}));
  forged.insert(forged.end(), good.end() - kTagSize, good.end());
  EXPECT_EQ(parse_datagram(forged, kKey, 0, 2, 1408, p, &k), ParseStatus::kBadTag);
  // Without payload authentication that forgery goes through: the reason for TSU_UDP_AUTH.
  forged.resize(forged.size() - kTagSize);
  EXPECT_EQ(parse_datagram(forged, kKey, 0, 2, 1408, p), ParseStatus::kOk);
  // Another key, a truncated tag.
  const auto other = tag_key(8);
  EXPECT_EQ(parse_datagram(good, kKey, 0, 2, 1408, p, &other), ParseStatus::kBadTag);
  EXPECT_NE(parse_datagram(std::span(good.data(), good.size() - 1), kKey, 0, 2, 1408, p, &k), ParseStatus::kOk);
  EXPECT_EQ(parse_datagram(std::span(good.data(), kHeaderSize + 3), kKey, 0, 2, 1408, p, &k),
            ParseStatus::kTruncated);
}

TEST(UdpDatagram, Rejections) {
  const auto good = make_datagram(kData, 1, 0, 7, std::vector<std::byte>(100, std::byte{5}));
  ParsedDatagram p;
  // Truncated at every length.
  for (std::size_t n = 0; n < good.size(); ++n)
    EXPECT_NE(parse_datagram(std::span(good.data(), n), kKey, 0, 2, 1408, p), ParseStatus::kOk) << n;
  // Another job's key.
  EXPECT_EQ(parse_datagram(good, Secret{1, 2}, 0, 2, 1408, p), ParseStatus::kBadMac);
  // Every single-bit flip anywhere is caught.
  for (std::size_t i = 0; i < good.size(); ++i) {
    for (int b = 0; b < 8; ++b) {
      auto bad = good;
      bad[i] ^= std::byte{static_cast<unsigned char>(1u << b)};
      EXPECT_NE(parse_datagram(bad, kKey, 0, 2, 1408, p), ParseStatus::kOk) << i << ":" << b;
    }
  }
  // Not for me, from outside the job, from myself, bad type.
  EXPECT_EQ(parse_datagram(make_datagram(kData, 1, 3, 0, {std::byte{1}}), kKey, 0, 4, 1408, p),
            ParseStatus::kMalformed);
  EXPECT_EQ(parse_datagram(make_datagram(kData, 9, 0, 0, {std::byte{1}}), kKey, 0, 4, 1408, p),
            ParseStatus::kMalformed);
  EXPECT_EQ(parse_datagram(make_datagram(kData, 0, 0, 0, {std::byte{1}}), kKey, 0, 4, 1408, p),
            ParseStatus::kMalformed);
  EXPECT_EQ(parse_datagram(make_datagram(9, 1, 0, 0, {}), kKey, 0, 4, 1408, p),
            ParseStatus::kMalformed);
  // Authentic data with more payload than this rank's datagram size (ranks
  // whose TSU_UDP_MTU differ) has its own reason, which the transport reports.
  EXPECT_EQ(parse_datagram(good, kKey, 0, 2, 99, p), ParseStatus::kTooLong);
  EXPECT_EQ(parse_datagram(good, kKey, 0, 2, 100, p), ParseStatus::kOk);
  // Foreign junk.
  std::vector<std::byte> junk(200, std::byte{0x41});
  EXPECT_EQ(parse_datagram(junk, kKey, 0, 2, 1408, p), ParseStatus::kForeign);
}

TEST(UdpDatagram, FlagsAllowedPerType) {
  ParsedDatagram p;
  // Data may say "duplicate seen"; unknown flag bits are malformed.
  EXPECT_EQ(parse_datagram(make_datagram(kData, 1, 0, 0, {std::byte{1}}, kKey, kFirst | kLast | kDupSeen),
                           kKey, 0, 2, 1408, p),
            ParseStatus::kOk);
  EXPECT_EQ(parse_datagram(make_datagram(kData, 1, 0, 0, {std::byte{1}}, kKey, kFirst | 0x40), kKey, 0,
                           2, 1408, p),
            ParseStatus::kMalformed);
  EXPECT_EQ(parse_datagram(make_datagram(kData, 1, 0, 0, {std::byte{1}}, kKey, kPong), kKey, 0, 2, 1408, p),
            ParseStatus::kMalformed);
  // Acks may carry kPong and kDupSeen, pings no flag at all.
  auto with_flags = [](uint8_t type, uint8_t flags) {
    WireHeader h{};
    h.type = type;
    h.flags = flags;
    h.src_rank = 1;
    h.dst_rank = 0;
    h.payload_crc = crc32c(nullptr, 0);
    seal_header(h, kKey);
    std::vector<std::byte> d(sizeof h);
    std::memcpy(d.data(), &h, sizeof h);
    return d;
  };
  EXPECT_EQ(parse_datagram(with_flags(kAck, kPong | kDupSeen), kKey, 0, 2, 1408, p), ParseStatus::kOk);
  EXPECT_EQ(parse_datagram(with_flags(kAck, kFirst), kKey, 0, 2, 1408, p), ParseStatus::kMalformed);
  EXPECT_EQ(parse_datagram(with_flags(kPing, kDupSeen), kKey, 0, 2, 1408, p), ParseStatus::kMalformed);
}

TEST(UdpImpair, Spec) {
  ImpairConfig c;
  std::string err;
  ASSERT_TRUE(parse_impair_spec("loss=10,reorder=25,dup=5,corrupt=1,delay=2ms,jitter=1ms,seed=9", c, err)) << err;
  EXPECT_EQ(c.loss, 10);
  EXPECT_EQ(c.delay_ns, 2'000'000u);
  EXPECT_EQ(c.seed, 9u);
  EXPECT_FALSE(parse_impair_spec("loss=200", c, err));
  EXPECT_FALSE(parse_impair_spec("bogus=1", c, err));
}

// ---- Transports in one process ---------------------------------------------

struct Received {
  std::vector<std::vector<uint64_t>> seqs;  // per sender: args[0] in arrival order
  uint64_t bytes = 0;
  bool corrupt = false;
};

void on_msg(void* ctx, uint32_t src, const core::MessageHeader& h, const std::byte* p) noexcept {
  auto* r = static_cast<Received*>(ctx);
  r->seqs[src].push_back(h.args[0]);
  for (uint32_t i = 0; i < h.payload_len; ++i)
    if (p[i] != std::byte{static_cast<unsigned char>((h.args[0] + i) & 0xff)}) r->corrupt = true;
  r->bytes += h.payload_len;
}

struct Node {
  std::unique_ptr<UdpTransport> t;
  core::MessageHandlerTable table;
  Received rx;
};

std::vector<std::unique_ptr<Node>> make_nodes(uint32_t n, UdpConfig cfg) {
  std::vector<std::unique_ptr<Node>> nodes;
  for (uint32_t r = 0; r < n; ++r) {
    auto node = std::make_unique<Node>();
    node->t = std::make_unique<UdpTransport>(r, n, kKey, cfg);
    std::string err;
    EXPECT_EQ(node->t->open(err), TSU_OK) << err;
    node->rx.seqs.resize(n);
    node->table.set(300, on_msg, &node->rx);
    nodes.push_back(std::move(node));
  }
  for (auto& a : nodes)
    for (uint32_t r = 0; r < n; ++r) a->t->set_peer_address(r, nodes[r]->t->local_address());
  return nodes;
}

// Every node sends `count` messages (sizes cycling up to several datagrams)
// to every other node; all must arrive exactly once and in order.  `batched`:
// each sender's messages of a round go between batch_begin/batch_end, as the
// engine's executor sends them (small ones then share datagrams).
void exchange(const std::string& impair, uint32_t n, int count, std::size_t max_size,
              bool batched = false, bool gso = true, bool gro = true, bool auth = false) {
  UdpConfig cfg;
  cfg.impair = impair;
  cfg.auth = auth;
  cfg.auth_key = tag_key(3);
  cfg.gso = gso;
  cfg.gro = gro;
  cfg.min_rto_ns = 1'000'000;
  cfg.initial_rto_ns = 5'000'000;
  auto nodes = make_nodes(n, cfg);
  std::vector<std::vector<int>> next(n, std::vector<int>(n, 0));
  std::vector<std::byte> payload(max_size);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(40);
  for (;;) {
    bool all_sent = true;
    for (uint32_t s = 0; s < n; ++s) {
      for (uint32_t d = 0; d < n; ++d) {
        if (s == d) continue;
        if (batched) nodes[s]->t->batch_begin();
        while (next[s][d] < count) {
          const uint64_t id = static_cast<uint64_t>(next[s][d]);
          const std::size_t len = (id * 977) % max_size;
          for (std::size_t i = 0; i < len; ++i) payload[i] = std::byte{static_cast<unsigned char>((id + i) & 0xff)};
          core::MessageHeader h{};
          h.handler = 300;
          h.payload_len = static_cast<uint32_t>(len);
          h.args[0] = id;
          const tsu_status_t st = nodes[s]->t->send_message(d, h, payload.data());
          if (st == TSU_EAGAIN) break;
          ASSERT_EQ(st, TSU_OK);
          ++next[s][d];
        }
        if (batched) nodes[s]->t->batch_end();
        all_sent = all_sent && next[s][d] == count;
      }
    }
    for (auto& node : nodes) node->t->poll(node->table);
    bool done = all_sent;
    for (uint32_t d = 0; d < n && done; ++d)
      for (uint32_t s = 0; s < n && done; ++s)
        if (s != d && nodes[d]->rx.seqs[s].size() < static_cast<std::size_t>(count)) done = false;
    if (done) break;
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "exchange did not finish";
  }
  // Let stray duplicates arrive, then check.
  for (int i = 0; i < 200; ++i) {
    for (auto& node : nodes) node->t->poll(node->table);
    usleep(100);
  }
  for (uint32_t d = 0; d < n; ++d) {
    EXPECT_FALSE(nodes[d]->rx.corrupt);
    for (uint32_t s = 0; s < n; ++s) {
      if (s == d) continue;
      const auto& seq = nodes[d]->rx.seqs[s];
      ASSERT_EQ(seq.size(), static_cast<std::size_t>(count)) << s << "->" << d;
      for (int i = 0; i < count; ++i) ASSERT_EQ(seq[i], static_cast<uint64_t>(i)) << "order " << s << "->" << d;
    }
  }
  if (batched) {  // the batches really shared datagrams
    uint64_t packed = 0, errors = 0;
    for (auto& node : nodes) {
      packed += node->t->stats().msgs_packed;
      errors += node->t->stats().reassembly_errors;
    }
    EXPECT_GT(packed, static_cast<uint64_t>(count));
    EXPECT_EQ(errors, 0u);
  }
  if (!impair.empty()) {
    uint64_t retrans = 0, drops = 0;
    for (auto& node : nodes) {
      const UdpStats st = node->t->stats();
      retrans += st.retransmits;
      for (auto x : st.drops) drops += x;
      node->t->print_stats(stderr);
    }
    if (impair.find("loss") != std::string::npos) {
      EXPECT_GT(retrans, 0u);
    }
    if (impair.find("corrupt") != std::string::npos) {
      EXPECT_GT(drops, 0u);
    }
  }
}

TEST(UdpTransport, Clean) { exchange("", 2, 2000, 5000); }
TEST(UdpTransport, Loss10) { exchange("loss=10,seed=1", 2, 1500, 5000); }
TEST(UdpTransport, Reorder25) { exchange("reorder=25,seed=2", 2, 1500, 5000); }
TEST(UdpTransport, Dup5Corrupt1) { exchange("dup=5,corrupt=1,seed=3", 3, 800, 5000); }
TEST(UdpTransport, Delay) { exchange("delay=2ms,jitter=1ms,seed=4", 2, 800, 3000); }
TEST(UdpTransport, Everything) {
  exchange("loss=10,reorder=25,dup=5,corrupt=1,delay=2ms,jitter=1ms,seed=5", 3, 500, 4000);
}
TEST(UdpTransport, LargeMessages) { exchange("loss=3,seed=6", 2, 40, 250000); }
// Payload authentication on: corrupted datagrams die on the tag, data stays exact.
TEST(UdpTransport, PayloadAuthCorrupt) {
  exchange("dup=5,corrupt=2,seed=9", 3, 800, 5000, false, true, true, /*auth=*/true);
}
TEST(UdpTransport, PayloadAuthLargeMessages) {
  exchange("loss=3,seed=6", 2, 40, 250000, false, true, true, /*auth=*/true);
}
TEST(UdpTransport, LargeMessagesWithoutSegmentation) {
  exchange("loss=3,seed=6", 2, 40, 250000, false, /*gso=*/false);
}
TEST(UdpTransport, LargeMessagesSegmentedWithoutCoalescing) {
  exchange("loss=3,seed=6", 2, 40, 250000, false, /*gso=*/true, /*gro=*/false);
}
TEST(UdpTransport, ReorderDupCorruptWithoutCoalescing) {
  exchange("reorder=25,dup=5,corrupt=1,seed=8", 2, 500, 5000, false, true, /*gro=*/false);
}

// Coalesced receives (UDP_GRO): a segmented send arrives as one buffer whose
// segment size cuts it back into the datagrams that were sent.
TEST(UdpSocketTest, CoalescedReceiveCutsBackIntoTheSentDatagrams) {
  UdpSocket tx, rx;
  std::string err;
  ASSERT_TRUE(tx.open("127.0.0.1", 0, 1u << 20, err)) << err;
  ASSERT_TRUE(rx.open("127.0.0.1", 0, 1u << 20, err)) << err;
  if (!rx.enable_coalescing()) GTEST_SKIP() << "kernel without UDP_GRO";
  std::vector<std::size_t> lens(30, 1000);
  lens.push_back(333);  // the short last one of the group
  lens.push_back(1000);  // starts a second group
  std::vector<std::vector<std::byte>> bufs(lens.size());
  for (std::size_t i = 0; i < lens.size(); ++i) {
    bufs[i].resize(lens[i]);
    for (std::size_t j = 0; j < lens[i]; ++j) bufs[i][j] = std::byte{static_cast<unsigned char>(i * 13 + j)};
    tx.stage(bufs[i].data(), lens[i], rx.local());
  }
  EXPECT_EQ(tx.flush(0), lens.size());
  std::vector<std::byte> storage(4 * UdpSocket::kMaxGsoBytes);
  std::vector<UdpSocket::RxBuf> rb(4);
  std::size_t got = 0, coalesced = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (got < lens.size() && std::chrono::steady_clock::now() < deadline) {
    for (std::size_t i = 0; i < rb.size(); ++i)
      rb[i] = UdpSocket::RxBuf{storage.data() + i * UdpSocket::kMaxGsoBytes, UdpSocket::kMaxGsoBytes, 0, {}, 0};
    const std::size_t n = rx.receive(rb.data(), rb.size());
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t seg = rb[i].segment ? rb[i].segment : rb[i].len;
      coalesced += rb[i].segment != 0;
      for (std::size_t off = 0; off < rb[i].len; off += seg, ++got) {
        ASSERT_LT(got, lens.size());
        const std::size_t len = std::min(seg, rb[i].len - off);
        ASSERT_EQ(len, lens[got]) << "datagram " << got;
        ASSERT_EQ(std::memcmp(rb[i].data + off, bufs[got].data(), len), 0) << "datagram " << got;
      }
    }
    if (!n) usleep(100);
  }
  EXPECT_EQ(got, lens.size());
  EXPECT_GT(coalesced, 0u);
  EXPECT_EQ(rx.received, lens.size());
}

// A reassembled message is handed over with its buffer (no copy); the spare
// buffer given back takes the next message, and single-datagram messages
// still point into their datagram.
TEST(UdpReassembly, TakeHandsOverTheBufferAndReusesTheSpare) {
  Reassembler r;
  const std::size_t frag = 100;
  auto message = [](uint64_t id, std::size_t len) {
    core::MessageHeader h{};
    h.handler = 300;
    h.payload_len = static_cast<uint32_t>(len);
    h.args[0] = id;
    std::vector<std::byte> m(kMsgHeaderSize + len);
    std::memcpy(m.data(), &h, kMsgHeaderSize);
    for (std::size_t i = 0; i < len; ++i) m[kMsgHeaderSize + i] = std::byte{static_cast<unsigned char>(id + i)};
    return m;
  };
  std::vector<std::byte> spare;
  for (uint64_t id = 1; id <= 3; ++id) {
    const std::vector<std::byte> m = message(id, 250 + id);
    core::MessageHeader hdr;
    const std::byte* payload = nullptr;
    Reassembler::Result res = Reassembler::Result::kNone;
    const std::size_t n = fragment_count(m.size(), frag);
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t off = i * frag, len = std::min(frag, m.size() - off);
      const uint8_t flags = static_cast<uint8_t>((i == 0 ? kFirst : 0) | (i + 1 == n ? kLast : 0));
      res = r.feed(std::span<const std::byte>(m.data() + off, len), flags, 1u << 20, hdr, payload);
      ASSERT_EQ(res, i + 1 == n ? Reassembler::Result::kMessage : Reassembler::Result::kNone);
    }
    ASSERT_TRUE(r.holds_message());
    EXPECT_EQ(hdr.args[0], id);
    const std::byte* spare_data = spare.data();
    const bool had_spare = spare.capacity() > 0;
    std::vector<std::byte> got = r.take(std::move(spare));
    EXPECT_EQ(got, m);
    EXPECT_EQ(payload, got.data() + kMsgHeaderSize);  // the pointer feed gave stays valid
    EXPECT_FALSE(r.holds_message());
    EXPECT_TRUE(r.idle());
    if (had_spare) {
      EXPECT_NE(spare_data, got.data());
    }
    spare = std::move(got);  // dispatched: back as the next spare
    spare.clear();
  }
  // One datagram: the payload points into it, nothing to take.
  const std::vector<std::byte> one = message(9, 20);
  core::MessageHeader hdr;
  const std::byte* payload = nullptr;
  ASSERT_EQ(r.feed(one, kFirst | kLast, 1u << 20, hdr, payload), Reassembler::Result::kMessage);
  EXPECT_FALSE(r.holds_message());
  EXPECT_EQ(payload, one.data() + kMsgHeaderSize);
}

// Segmented sends (UDP_SEGMENT): a batch of datagrams of mixed lengths to two
// receivers arrives as the same datagrams, each intact and separate; only
// runs of equal length (plus one shorter last) to one address are grouped.
TEST(UdpSocketTest, SegmentedSendsArriveAsTheSameDatagrams) {
  UdpSocket tx, rx1, rx2;
  std::string err;
  ASSERT_TRUE(tx.open("127.0.0.1", 0, 1u << 20, err)) << err;
  ASSERT_TRUE(rx1.open("127.0.0.1", 0, 1u << 20, err)) << err;
  ASSERT_TRUE(rx2.open("127.0.0.1", 0, 1u << 20, err)) << err;
  // Lengths: a run of 70 full ones (more than one group), a short one, a
  // longer one after a short one, then alternating destinations.
  std::vector<std::size_t> lens(70, 1400);
  for (std::size_t l : {700u, 1400u, 1400u, 90u, 1400u, 1400u, 1400u, 64u, 64u}) lens.push_back(l);
  std::vector<int> to(lens.size(), 1);
  for (std::size_t i = 75; i < lens.size(); ++i) to[i] = (i % 2) ? 1 : 2;
  std::vector<std::vector<std::byte>> bufs(lens.size());
  for (std::size_t i = 0; i < lens.size(); ++i) {
    bufs[i].resize(lens[i]);
    for (std::size_t j = 0; j < lens[i]; ++j) bufs[i][j] = std::byte{static_cast<unsigned char>(i * 7 + j)};
    tx.stage(bufs[i].data(), lens[i], to[i] == 1 ? rx1.local() : rx2.local());
  }
  EXPECT_EQ(tx.flush(0), lens.size());
  EXPECT_EQ(tx.sent, lens.size());
  EXPECT_EQ(tx.send_dropped, 0u);
  EXPECT_GT(tx.gso_sends, 0u);
  // Each receiver gets its datagrams in order, with their own lengths.
  for (int r = 1; r <= 2; ++r) {
    UdpSocket& s = r == 1 ? rx1 : rx2;
    std::vector<std::size_t> want;
    for (std::size_t i = 0; i < lens.size(); ++i)
      if (to[i] == r) want.push_back(i);
    std::vector<std::byte> storage(UdpSocket::kBatch * 2048);
    std::vector<UdpSocket::RxBuf> rb(UdpSocket::kBatch);
    std::size_t got = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (got < want.size() && std::chrono::steady_clock::now() < deadline) {
      for (std::size_t i = 0; i < rb.size(); ++i) rb[i] = UdpSocket::RxBuf{storage.data() + i * 2048, 2048, 0, {}, 0};
      const std::size_t n = s.receive(rb.data(), rb.size());
      for (std::size_t i = 0; i < n && got < want.size(); ++i, ++got) {
        const std::size_t k = want[got];
        ASSERT_EQ(rb[i].len, lens[k]) << "datagram " << k;
        ASSERT_EQ(std::memcmp(rb[i].data, bufs[k].data(), lens[k]), 0) << "datagram " << k;
      }
      if (!n) usleep(100);
    }
    EXPECT_EQ(got, want.size()) << "receiver " << r;
  }
}

// Small messages sent in one batch share datagrams (kPacked), and still
// arrive exactly once, in order, intact -- also when packed datagrams are
// lost, reordered and duplicated.
TEST(UdpTransport, PackedBatches) { exchange("", 2, 3000, 300, true); }
TEST(UdpTransport, PackedBatchesUnderLossReorderDup) {
  exchange("loss=10,reorder=25,dup=5,seed=8", 3, 1500, 600, true);
}

TEST(UdpTransport, InjectedGarbageIsDroppedAndCounted) {
  UdpConfig cfg;
  auto nodes = make_nodes(2, cfg);
  const sockaddr_in to = nodes[0]->t->local_address();
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  ASSERT_GE(fd, 0);
  auto send = [&](const std::vector<std::byte>& d) {
    sendto(fd, d.data(), d.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to);
  };
  std::mt19937 rng(1);
  const auto good = make_datagram(kData, 1, 0, 0, std::vector<std::byte>(64, std::byte{1}));
  int sent = 0;
  for (int i = 0; i < 100; ++i) {
    std::vector<std::byte> junk(rng() % 1500);
    for (auto& b : junk) b = std::byte{static_cast<unsigned char>(rng())};
    send(junk);                                              // foreign
    send(std::vector<std::byte>(good.begin(), good.begin() + (rng() % good.size())));  // truncated
    auto bad = good;
    bad[rng() % bad.size()] ^= std::byte{0x10};
    send(bad);                                               // corrupted
    send(make_datagram(kData, 1, 0, 0, {std::byte{1}}, Secret{5, 6}));  // other job
    sent += 4;
  }
  usleep(20000);
  for (int i = 0; i < 50; ++i) nodes[0]->t->poll(nodes[0]->table);
  const UdpStats st = nodes[0]->t->stats();
  uint64_t drops = 0;
  for (auto x : st.drops) drops += x;
  EXPECT_EQ(drops, static_cast<uint64_t>(sent));
  EXPECT_EQ(st.msgs_delivered, 0u);
  EXPECT_TRUE(nodes[0]->rx.seqs[1].empty());
  close(fd);
}

TEST(UdpTransport, ReplayedDatagramIsNotAppliedTwice) {
  UdpConfig cfg;
  auto nodes = make_nodes(2, cfg);
  const sockaddr_in to = nodes[0]->t->local_address();
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  std::vector<std::byte> msg(sizeof(core::MessageHeader));
  core::MessageHeader h{};
  h.handler = 300;
  std::memcpy(msg.data(), &h, sizeof h);
  const auto d = make_datagram(kData, 1, 0, 0, msg);
  for (int i = 0; i < 5; ++i) sendto(fd, d.data(), d.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to);
  usleep(20000);
  for (int i = 0; i < 20; ++i) nodes[0]->t->poll(nodes[0]->table);
  EXPECT_EQ(nodes[0]->rx.seqs[1].size(), 1u);
  EXPECT_EQ(nodes[0]->t->stats().duplicates, 4u);
  close(fd);
}

struct LostLog {
  std::vector<uint32_t> lost;
};
void on_lost(void* ctx, uint32_t rank) noexcept { static_cast<LostLog*>(ctx)->lost.push_back(rank); }

// Keep-alives every 20 ms, a peer lost after 300 ms of silence.
UdpConfig fast_liveness() {
  UdpConfig cfg;
  cfg.keepalive_ns = 20'000'000;
  cfg.peer_timeout_ns = 300'000'000;
  return cfg;
}

TEST(UdpTransport, SilentPeerIsDeclaredLost) {
  auto nodes = make_nodes(2, fast_liveness());
  LostLog log;
  nodes[0]->t->set_peer_lost_handler(on_lost, &log);
  core::MessageHeader h{};
  h.handler = 300;
  ASSERT_EQ(nodes[0]->t->send_message(1, h, nullptr), TSU_OK);
  // Poll for a while, past the timeout: an idle peer is not lost (not monitored).
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
  while (std::chrono::steady_clock::now() < until) {
    for (auto& n : nodes) n->t->poll(n->table);
    usleep(1000);
  }
  EXPECT_TRUE(log.lost.empty());
  EXPECT_FALSE(nodes[0]->t->is_peer_lost(1));
  // Node 1 dies.
  nodes[1].reset();
  ASSERT_EQ(nodes[0]->t->send_message(1, h, nullptr), TSU_OK);
  const auto start = std::chrono::steady_clock::now();
  while (log.lost.empty() && std::chrono::steady_clock::now() - start < std::chrono::seconds(3)) {
    nodes[0]->t->poll(nodes[0]->table);
    usleep(1000);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(log.lost.size(), 1u);
  EXPECT_EQ(log.lost[0], 1u);
  EXPECT_LT(s, 0.6);
  EXPECT_TRUE(nodes[0]->t->is_peer_lost(1));
  EXPECT_EQ(nodes[0]->t->send_message(1, h, nullptr), TSU_ERR_PEER_LOST);
}

// Keep-alives go only to monitored peers: one a wait watches, or one with
// data in flight.  An idle peer is neither pinged nor declared lost however
// long it is silent, and a watch started after a long silence counts the
// silence from its start.
TEST(UdpTransport, OnlyWatchedPeersArePingedAndLost) {
  auto nodes = make_nodes(2, fast_liveness());
  LostLog log;
  nodes[0]->t->set_peer_lost_handler(on_lost, &log);
  const auto poll_for = [&](int ms) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < until) {
      for (auto& n : nodes)
        if (n) n->t->poll(n->table);
      usleep(1000);
    }
  };
  core::MessageHeader h{};
  h.handler = 300;
  ASSERT_EQ(nodes[0]->t->send_message(1, h, nullptr), TSU_OK);
  // Acknowledged, then idle for 20 keep-alive intervals, past the timeout.
  poll_for(400);
  EXPECT_EQ(nodes[0]->t->stats().pings_sent, 0u);
  EXPECT_EQ(nodes[1]->t->stats().pings_sent, 0u);
  EXPECT_TRUE(log.lost.empty());
  // Watched: pinged while silent (node 1 only answers), not lost.
  nodes[0]->t->watch_peer(1);
  poll_for(150);
  const uint64_t pinged = nodes[0]->t->stats().pings_sent;
  EXPECT_GE(pinged, 2u);
  EXPECT_EQ(nodes[1]->t->stats().pings_sent, 0u);
  EXPECT_TRUE(log.lost.empty());
  // Unwatched: no more pings.
  nodes[0]->t->unwatch_peer(1);
  nodes[0]->t->poll(nodes[0]->table);
  const uint64_t at_unwatch = nodes[0]->t->stats().pings_sent;
  EXPECT_LE(at_unwatch, pinged + 1);
  poll_for(150);
  EXPECT_EQ(nodes[0]->t->stats().pings_sent, at_unwatch);
  // Watched again, then node 1 dies: lost about one timeout later.
  nodes[0]->t->watch_peer(1);
  nodes[0]->t->poll(nodes[0]->table);
  nodes[1].reset();
  const auto start = std::chrono::steady_clock::now();
  while (log.lost.empty() && std::chrono::steady_clock::now() - start < std::chrono::seconds(3)) {
    nodes[0]->t->poll(nodes[0]->table);
    usleep(1000);
  }
  ASSERT_EQ(log.lost.size(), 1u);
  EXPECT_EQ(log.lost[0], 1u);
  EXPECT_TRUE(nodes[0]->t->is_peer_lost(1));
}

}  // namespace

// ---- Congestion control and RTT estimation (congestion.hpp) -----------------
using tsu::transport::udp::CongestionControl;
using tsu::transport::udp::RttEstimator;

TEST(UdpCongestion, MinRttFollowsTheSmallestSample) {
  RttEstimator r(20'000'000, 10'000'000, 1'000'000'000);
  EXPECT_EQ(r.min_rtt(), 0u);  // nothing measured yet: srtt (0)
  for (uint64_t s : {80'000u, 50'000u, 120'000u, 60'000u}) r.sample(s);
  EXPECT_EQ(r.min_rtt(), 50'000u);
  EXPECT_GT(r.srtt(), 50'000u);
  EXPECT_EQ(r.rto(), 10'000'000u);  // clamped to the floor
}

TEST(UdpCongestion, LossWithoutQueueKeepsTheWindow) {
  CongestionControl cc(32, 4, 1024);
  // srtt hardly above the path minimum: random loss, the window stays and
  // slow start ends (ssthresh = cwnd).
  ASSERT_TRUE(cc.on_loss(10, 40, 60'000, 50'000));
  EXPECT_DOUBLE_EQ(cc.cwnd(), 32.0);
  EXPECT_DOUBLE_EQ(cc.ssthresh(), 32.0);
  EXPECT_EQ(cc.random_losses(), 1u);
  EXPECT_EQ(cc.reductions(), 0u);
  // Growth after that is additive (+1/cwnd per acknowledged datagram).
  cc.on_una(40);
  cc.on_ack(32);
  EXPECT_NEAR(cc.cwnd(), 33.0, 0.05);
}

TEST(UdpCongestion, LossBehindAQueueShrinksTheWindowOncePerEpoch) {
  CongestionControl cc(100, 4, 1024);
  // 5 ms of queueing (a tbf bottleneck): congestion.
  ASSERT_TRUE(cc.on_loss(10, 200, 5'050'000, 50'000));
  EXPECT_DOUBLE_EQ(cc.cwnd(), 100 * CongestionControl::kBeta);
  EXPECT_EQ(cc.reductions(), 1u);
  // Another loss from the same flight (seq < 200) is the same event.
  EXPECT_FALSE(cc.on_loss(150, 220, 5'050'000, 50'000));
  EXPECT_DOUBLE_EQ(cc.cwnd(), 100 * CongestionControl::kBeta);
  // Once everything sent before the first loss is acknowledged, the next
  // loss reacts again.
  cc.on_una(200);
  ASSERT_TRUE(cc.on_loss(210, 300, 5'050'000, 50'000));
  EXPECT_DOUBLE_EQ(cc.cwnd(), 100 * CongestionControl::kBeta * CongestionControl::kBeta);
  EXPECT_EQ(cc.reductions(), 2u);
}

TEST(UdpCongestion, TimeoutCollapsesTheWindow) {
  CongestionControl cc(64, 4, 1024);
  cc.on_timeout(100);
  EXPECT_DOUBLE_EQ(cc.cwnd(), 4.0);
  EXPECT_DOUBLE_EQ(cc.ssthresh(), 32.0);
  cc.on_una(100);
  cc.on_ack(10);  // slow start again up to ssthresh
  EXPECT_DOUBLE_EQ(cc.cwnd(), 14.0);
}

TEST(UdpPacking, SplitsWholeMessagesAndRejectsMalformedBodies) {
  std::vector<std::byte> body;
  auto add = [&](uint64_t id, uint32_t len) {
    core::MessageHeader h{};
    h.handler = 300;
    h.payload_len = len;
    h.args[0] = id;
    const auto* hb = reinterpret_cast<const std::byte*>(&h);
    body.insert(body.end(), hb, hb + sizeof h);
    body.insert(body.end(), len, std::byte{static_cast<unsigned char>(id)});
  };
  add(1, 0);
  add(2, 17);
  add(3, 5);
  std::vector<uint64_t> seen;
  EXPECT_TRUE(for_each_packed(body, 1024, [&](const core::MessageHeader& h, const std::byte* p) {
    seen.push_back(h.args[0]);
    for (uint32_t i = 0; i < h.payload_len; ++i) EXPECT_EQ(p[i], std::byte{static_cast<unsigned char>(h.args[0])});
  }));
  EXPECT_EQ(seen, (std::vector<uint64_t>{1, 2, 3}));
  // Cut anywhere inside the last message, or a payload above the limit: nothing delivered.
  for (std::size_t cut = 1; cut < kMsgHeaderSize + 5; ++cut) {
    seen.clear();
    EXPECT_FALSE(for_each_packed(std::span(body.data(), body.size() - cut), 1024,
                                 [&](const core::MessageHeader& h, const std::byte*) { seen.push_back(h.args[0]); }))
        << cut;
    EXPECT_TRUE(seen.empty());
  }
  EXPECT_FALSE(for_each_packed(body, 16, [&](const core::MessageHeader&, const std::byte*) { FAIL(); }));
}

TEST(UdpCongestion, SpuriousTimeoutIsUndone) {
  CongestionControl cc(200, 4, 1024);
  cc.on_timeout(500);
  EXPECT_DOUBLE_EQ(cc.cwnd(), 4.0);
  cc.undo_timeout();  // an original transmission was acknowledged after all
  EXPECT_DOUBLE_EQ(cc.cwnd(), 200.0);
  EXPECT_EQ(cc.undone_timeouts(), 1u);
  cc.undo_timeout();  // only once per timeout
  EXPECT_EQ(cc.undone_timeouts(), 1u);
  // A timeout confirmed by a retransmission's ack stays.
  cc.on_timeout(900);
  cc.forget_undo();
  cc.undo_timeout();
  EXPECT_DOUBLE_EQ(cc.cwnd(), 4.0);
}
