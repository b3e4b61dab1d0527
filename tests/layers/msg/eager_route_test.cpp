// Which protocol a tagged message to a rank on another node takes over a
// network route (Messaging::eager_max: TSU_OFI_EAGER_MAX over ofi,
// TSU_UDP_EAGER_MAX over udp): eager up to the route's limit, rendezvous
// above.  Two ranks on two hosts exchange messages of the sizes the
// environment names, both ways at once; each send must be counted under the
// protocol expected for its size, and every byte must arrive:
//   EAGER_SIZES=8193,12288   sizes that must go eager
//   RNDV_SIZES=16384,65536   sizes that must go by rendezvous
// Over ofi, tsunagi raises tcp;ofi_rxm's eager limit only while its endpoint
// opens: the process environment after tsu_init must be as the user left it
// (FI_OFI_RXM_EAGER_LIMIT as given, unset where not given; over udp nothing
// sets it).
#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "mp_util.hpp"
#include "tsunagi/msg.h"

namespace {

std::vector<size_t> sizes_from(const char* name) {
  std::vector<size_t> out;
  const char* v = std::getenv(name);
  std::stringstream in(v ? v : "");
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(std::stoul(item));
  return out;
}

tsu_msg_counters_t counters() {
  tsu_msg_counters_t c{};
  EXPECT_EQ(tsu_msg_counters(&c), TSU_OK);
  return c;
}

unsigned char pattern(size_t len, uint32_t from, size_t i) {
  return static_cast<unsigned char>(len * 3 + from * 101 + i * 7 + (i >> 9));
}

// One message each way between ranks 0 and 1; returns this rank's counters
// before and after its send.
void exchange(size_t len, tsu_msg_counters_t& before, tsu_msg_counters_t& after) {
  const uint32_t me = mp::rank(), peer = me ^ 1u;
  std::vector<unsigned char> out(len), in(len + 64, 0xee);
  for (size_t i = 0; i < len; ++i) out[i] = pattern(len, me, i);
  mp::Done r, s;
  tsu_msg_status_t st{};
  ASSERT_EQ(tsu_try_recv(peer, len, TSU_TAG_EXACT, in.data(), in.size(), &st, r.cb(), nullptr),
            TSU_OK)
      << tsu_last_error();
  mp::barrier();  // both receives posted
  before = counters();
  ASSERT_EQ(mp::issue([&] { return tsu_try_send(peer, len, out.data(), len, s.cb()); }), TSU_OK)
      << tsu_last_error();
  after = counters();
  ASSERT_TRUE(s.wait());
  ASSERT_TRUE(r.wait());
  EXPECT_EQ(s.st.load(), TSU_OK) << len;
  EXPECT_EQ(r.st.load(), TSU_OK) << len;
  EXPECT_EQ(st.length, len);
  EXPECT_EQ(st.source, peer);
  size_t wrong = 0;
  for (size_t i = 0; i < len; ++i) wrong += in[i] != pattern(len, peer, i);
  EXPECT_EQ(wrong, 0u) << len << " B: bytes differ";
  EXPECT_EQ(in[len], 0xee) << len << " B: written past the message";
  mp::barrier();
}

TEST(EagerRoute, SizesTakeTheExpectedProtocol) {
  ASSERT_EQ(mp::size(), 2u) << "two ranks, one per host";
  uint32_t n0 = 0, n1 = 0;
  ASSERT_EQ(tsu_node_of(0, &n0), TSU_OK);
  ASSERT_EQ(tsu_node_of(1, &n1), TSU_OK);
  ASSERT_NE(n0, n1) << "the ranks must be on two hosts (the route under test is the network)";
  const std::vector<size_t> eager = sizes_from("EAGER_SIZES"), rndv = sizes_from("RNDV_SIZES");
  ASSERT_FALSE(eager.empty() && rndv.empty()) << "set EAGER_SIZES and/or RNDV_SIZES";
  for (size_t len : eager) {
    tsu_msg_counters_t b{}, a{};
    exchange(len, b, a);
    EXPECT_EQ(a.eager - b.eager, 1u) << len << " B should have gone eager";
    EXPECT_EQ(a.rendezvous - b.rendezvous, 0u) << len << " B should have gone eager";
  }
  for (size_t len : rndv) {
    tsu_msg_counters_t b{}, a{};
    exchange(len, b, a);
    EXPECT_EQ(a.rendezvous - b.rendezvous, 1u) << len << " B should have gone by rendezvous";
    EXPECT_EQ(a.eager - b.eager, 0u) << len << " B should have gone by rendezvous";
  }
}

TEST(EagerRoute, LeavesTheEnvironmentAsItWas) {
  // The fixture's settings (the ofi_netns_test ENV list) are what the user
  // gave; tsu_init has run by now.
  const char* given = std::getenv("RXM_EAGER_LIMIT_GIVEN");
  const char* now = std::getenv("FI_OFI_RXM_EAGER_LIMIT");
  if (!given || !*given)
    EXPECT_EQ(now, nullptr) << "FI_OFI_RXM_EAGER_LIMIT left set to " << now;
  else
    EXPECT_STREQ(now, given);
}

}  // namespace
