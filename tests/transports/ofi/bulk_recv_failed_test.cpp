// A large tagged message whose receive fails at the receiver while its
// sender is alive must fail at the sender too, not leave it waiting.
//
// Over ofi the payload of a rendezvous-sized message is a provider send
// (fi_tsend) that the receiver's fi_trecv takes once the RTS matched; the
// sender's request completes with that send, which tcp;ofi_rxm completes
// only when the receiver has read the payload.  TSU_OFI_TEST_FAULT=
// bulk_recv_refused_last makes the provider refuse every bulk receive from
// the last rank at the post (as rxm does with FI_EOTHER); the receive is held
// until that rank is heard from a keep-alive interval later, then fails with
// the provider's error.  The receiver then tells the sender with a FIN
// carrying the error (before 2026-11-29 nothing did, and the send waited for
// ever).  Afterwards the pair still works both ways.
//
// Two ranks as two nodes over ofi (tsurun --ranks-per-node 1); the CMake test
// sets TSU_NET=ofi, the fault, TSU_OFI_EAGER_MAX=0 (64 KiB by rendezvous) and
// a short TSU_OFI_KEEPALIVE.
#include <gtest/gtest.h>

#include <vector>

#include "mp_util.hpp"
#include "tsunagi/msg.h"

namespace {

constexpr std::size_t kLarge = 64u << 10;

unsigned char pattern(uint32_t from, std::size_t i) {
  return static_cast<unsigned char>(from * 37 + i * 11 + (i >> 10));
}

std::size_t wrong_bytes(const std::vector<unsigned char>& in, std::size_t len, uint32_t from) {
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < len; ++i) wrong += in[i] != pattern(from, i);
  return wrong;
}

// One tagged message from `from` to `to` of `len` bytes; both sides check
// their status against the expected ones, the receiver its bytes when OK.
void message(uint32_t from, uint32_t to, uint64_t tag, std::size_t len, tsu_status_t want_send,
             tsu_status_t want_recv) {
  const uint32_t me = mp::rank();
  if (me == to) {
    std::vector<unsigned char> in(len, 0);
    mp::Done r;
    tsu_msg_status_t st{};
    ASSERT_EQ(tsu_try_recv(from, tag, TSU_TAG_EXACT, in.data(), len, &st, r.cb(), nullptr), TSU_OK)
        << tsu_last_error();
    mp::barrier();  // posted before the send
    ASSERT_TRUE(r.wait("the receive"));
    EXPECT_EQ(r.st.load(), want_recv) << len << " B: " << tsu_strerror(r.st.load());
    EXPECT_EQ(r.calls.load(), 1);
    if (want_recv == TSU_OK) {
      EXPECT_EQ(st.length, len);
      EXPECT_EQ(wrong_bytes(in, len, from), 0u) << len << " B: bytes differ";
    }
  } else if (me == from) {
    std::vector<unsigned char> out(len);
    for (std::size_t i = 0; i < len; ++i) out[i] = pattern(me, i);
    mp::barrier();
    mp::Done s;
    ASSERT_EQ(mp::issue([&] { return tsu_try_send(to, tag, out.data(), len, s.cb()); }), TSU_OK)
        << tsu_last_error();
    ASSERT_TRUE(s.wait("the send (it must not wait for ever)"));
    EXPECT_EQ(s.st.load(), want_send) << len << " B: " << tsu_strerror(s.st.load());
    EXPECT_EQ(s.calls.load(), 1);
  }
  mp::barrier();
}

TEST(OfiBulkReceiveFailed, TheSenderLearnsOfIt) {
  ASSERT_EQ(mp::size(), 2u);
  uint32_t n0 = 0, n1 = 0;
  ASSERT_EQ(tsu_node_of(0, &n0), TSU_OK);
  ASSERT_EQ(tsu_node_of(1, &n1), TSU_OK);
  ASSERT_NE(n0, n1) << "the ranks must be on two nodes (the route under test is ofi)";
  // Rank 1 (the last) sends 64 KiB: rank 0's bulk receive is refused, held
  // while rank 1 answers pings, then fails; rank 1's send fails with it.
  message(1, 0, 1, kLarge, TSU_ERR_SYSTEM, TSU_ERR_SYSTEM);
  // The pair still works: a small message from rank 1 (eager, no bulk
  // receive) and a large one to rank 1 (bulk receives from rank 0 are not
  // refused).
  message(1, 0, 2, 8, TSU_OK, TSU_OK);
  message(0, 1, 3, kLarge, TSU_OK, TSU_OK);
}

}  // namespace
