// Collectives through shared memory (coll/node_coll.hpp): teams whose members
// share a node.  Checks what the message-path tests do not reach: sizes on
// both sides of the small path's buffer (data in the layer area vs Cross
// Memory Attach from the user's buffers), every root, more collectives in
// flight than a slot has buffers (the reuse guard), in place, teams of every
// shape (by node, across pseudo-nodes: tsurun --ranks-per-node; those fall
// back to messages, or go hierarchical), more node teams than a rank has
// slots (the rest use messages), and TSU_COLL_NODE=0 for comparison.
#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <vector>

#include "coll_util.hpp"
#include "msg_util.hpp"
#include "tsunagi/tsunagi.h"

namespace {

using namespace coll_test;

// Around the tiny lines (56 B) and the 8 KiB buffers of the small path, and
// staged over several chunks.
const std::size_t kSizes[] = {0, 1, 7, 56, 57, 8191, 8192, 8193, 70001, 600000};

unsigned char byte_of(uint32_t r, std::size_t i, uint32_t salt) {
  return static_cast<unsigned char>(r * 31 + i * 7 + salt);
}

void broadcast_every_root(tsu_team_t team, std::size_t bytes) {
  const uint32_t n = team_size(team), me = team_rank(team);
  for (uint32_t root = 0; root < n; ++root) {
    std::vector<unsigned char> buf(bytes + 1, 0xEE);
    if (me == root)
      for (std::size_t i = 0; i < bytes; ++i) buf[i] = byte_of(root, i, 1);
    Flag f;
    ASSERT_EQ(tsu_try_broadcast(team, buf.data(), bytes, root, f.cb()), TSU_OK);
    f.wait();
    for (std::size_t i = 0; i < bytes; ++i)
      ASSERT_EQ(buf[i], byte_of(root, i, 1)) << "broadcast root " << root << " bytes " << bytes;
    ASSERT_EQ(buf[bytes], 0xEE) << "broadcast wrote past the end";
  }
}

void gathers(tsu_team_t team, std::size_t bytes) {
  const uint32_t n = team_size(team), me = team_rank(team);
  std::vector<unsigned char> mine(bytes), a2a_in(bytes * n);
  for (std::size_t i = 0; i < bytes; ++i) mine[i] = byte_of(me, i, 2);
  for (uint32_t j = 0; j < n; ++j)
    for (std::size_t i = 0; i < bytes; ++i) a2a_in[j * bytes + i] = byte_of(me * 5 + j, i, 3);
  for (uint32_t root = 0; root < n; ++root) {
    std::vector<unsigned char> all(bytes * n + 1, 0xEE);
    Flag f;
    ASSERT_EQ(tsu_try_gather(team, mine.data(), me == root ? all.data() : nullptr, bytes, root,
                             f.cb()), TSU_OK);
    f.wait();
    if (me != root) continue;
    for (uint32_t r = 0; r < n; ++r)
      for (std::size_t i = 0; i < bytes; ++i)
        ASSERT_EQ(all[r * bytes + i], byte_of(r, i, 2)) << "gather root " << root;
  }
  std::vector<unsigned char> all(bytes * n + 1, 0xEE), out(bytes * n + 1, 0xEE);
  Flag g, h;
  ASSERT_EQ(tsu_try_allgather(team, mine.data(), all.data(), bytes, g.cb()), TSU_OK);
  ASSERT_EQ(tsu_try_alltoall(team, a2a_in.data(), out.data(), bytes, h.cb()), TSU_OK);
  g.wait();
  h.wait();
  for (uint32_t r = 0; r < n; ++r)
    for (std::size_t i = 0; i < bytes; ++i) {
      ASSERT_EQ(all[r * bytes + i], byte_of(r, i, 2)) << "allgather bytes " << bytes;
      ASSERT_EQ(out[r * bytes + i], byte_of(r * 5 + me, i, 3)) << "alltoall bytes " << bytes;
    }
  EXPECT_EQ(all[bytes * n], 0xEE);
  EXPECT_EQ(out[bytes * n], 0xEE);
}

void reductions(tsu_team_t team, std::size_t bytes) {
  const uint32_t n = team_size(team), me = team_rank(team);
  const std::size_t count = bytes / sizeof(int64_t);
  for (tsu_op_t op : {TSU_OP_SUM, TSU_OP_MAX}) {
    std::vector<int64_t> src, expect;
    reduction_case<int64_t>(op, me, n, count, src, expect);
    std::vector<int64_t> dst(count + 1, -99);
    Flag f;
    ASSERT_EQ(tsu_try_allreduce(team, src.data(), dst.data(), count, TSU_DT_INT64, op, f.cb()), TSU_OK);
    f.wait();
    ASSERT_TRUE(same(dst.data(), expect.data(), count)) << "allreduce count " << count;
    EXPECT_EQ(dst[count], -99);
    std::vector<int64_t> inplace = src;
    Flag g;
    ASSERT_EQ(tsu_try_allreduce(team, inplace.data(), inplace.data(), count, TSU_DT_INT64, op, g.cb()),
              TSU_OK);
    g.wait();
    ASSERT_TRUE(same(inplace.data(), expect.data(), count)) << "in place, count " << count;
    for (uint32_t root = 0; root < n; ++root) {
      std::vector<int64_t> out(count, -1);
      Flag r;
      ASSERT_EQ(tsu_try_reduce(team, src.data(), me == root ? out.data() : nullptr, count,
                               TSU_DT_INT64, op, root, r.cb()), TSU_OK);
      r.wait();
      if (me == root) {
        ASSERT_TRUE(same(out.data(), expect.data(), count)) << "reduce root " << root;
      }
      // In place at the root (dst == src); the others' src is left alone.
      std::vector<int64_t> io = src;
      Flag q;
      ASSERT_EQ(tsu_try_reduce(team, io.data(), me == root ? io.data() : nullptr, count,
                               TSU_DT_INT64, op, root, q.cb()), TSU_OK);
      q.wait();
      ASSERT_TRUE(same(io.data(), me == root ? expect.data() : src.data(), count))
          << "in-place reduce root " << root << " count " << count;
    }
  }
}

void every_collective(tsu_team_t team) {
  for (std::size_t bytes : kSizes) {
    broadcast_every_root(team, bytes);
    gathers(team, bytes);
    reductions(team, bytes);
  }
}

// More collectives in flight than a slot has buffers, small and large mixed,
// then checked: the reuse guard keeps every buffer until its readers are done.
void deep_overlap(tsu_team_t team) {
  const uint32_t n = team_size(team), me = team_rank(team);
  constexpr int kOps = 13;
  std::vector<std::unique_ptr<Flag>> flags;
  std::vector<std::vector<uint64_t>> sums(kOps);
  std::vector<std::vector<unsigned char>> bufs(kOps);
  std::vector<uint64_t> src(20000);
  std::iota(src.begin(), src.end(), uint64_t{me});
  for (int k = 0; k < kOps; ++k) {
    const std::size_t count = k % 3 == 0 ? src.size() : static_cast<std::size_t>(k + 1);
    sums[k].assign(count, 0);
    flags.push_back(std::make_unique<Flag>());
    ASSERT_EQ(tsu_try_allreduce(team, src.data(), sums[k].data(), count, TSU_DT_UINT64, TSU_OP_SUM,
                                flags.back()->cb()), TSU_OK);
    const std::size_t bytes = k % 4 == 1 ? 50000 : static_cast<std::size_t>(k * 10);
    const uint32_t root = static_cast<uint32_t>(k) % n;
    bufs[k].assign(bytes, 0);
    if (me == root)
      for (std::size_t i = 0; i < bytes; ++i) bufs[k][i] = byte_of(root, i, static_cast<uint32_t>(k));
    flags.push_back(std::make_unique<Flag>());
    ASSERT_EQ(tsu_try_broadcast(team, bufs[k].data(), bytes, root, flags.back()->cb()), TSU_OK);
    flags.push_back(std::make_unique<Flag>());
    ASSERT_EQ(tsu_try_barrier(team, flags.back()->cb()), TSU_OK);
  }
  for (auto& f : flags) f->wait();
  for (int k = 0; k < kOps; ++k) {
    for (std::size_t i = 0; i < sums[k].size(); ++i)
      ASSERT_EQ(sums[k][i], uint64_t{n} * (n - 1) / 2 + uint64_t{n} * i) << "op " << k;
    const uint32_t root = static_cast<uint32_t>(k) % n;
    for (std::size_t i = 0; i < bufs[k].size(); ++i)
      ASSERT_EQ(bufs[k][i], byte_of(root, i, static_cast<uint32_t>(k))) << "broadcast " << k;
  }
}

uint32_t my_node_color() {
  uint32_t node = 0;
  EXPECT_EQ(tsu_node_of(mp::rank(), &node), TSU_OK);
  return node;
}

TEST(CollNode, EveryCollectiveEverySizeWorld) { every_collective(TSU_TEAM_WORLD); }

TEST(CollNode, DeepOverlapWorld) { deep_overlap(TSU_TEAM_WORLD); }

TEST(CollNode, BeyondTheStage) {
  // Larger than a slot's 1 MiB stage: Cross Memory Attach from user buffers.
  const std::size_t bytes = (std::size_t{1} << 20) + 24;
  broadcast_every_root(TSU_TEAM_WORLD, bytes);
  reductions(TSU_TEAM_WORLD, bytes);
  gathers(TSU_TEAM_WORLD, bytes / mp::size() + 8);
}

TEST(CollNode, TeamsByNodeByParityAndReversed) {
  const uint32_t n = mp::size(), me = mp::rank();
  tsu_team_t by_node = TSU_TEAM_NULL, parity = TSU_TEAM_NULL, reversed = TSU_TEAM_NULL;
  ASSERT_EQ(tsu_team_split(TSU_TEAM_WORLD, static_cast<int32_t>(my_node_color()), me, &by_node), TSU_OK);
  ASSERT_EQ(tsu_team_split(TSU_TEAM_WORLD, static_cast<int32_t>(me % 2), me, &parity), TSU_OK);
  ASSERT_EQ(tsu_team_split(TSU_TEAM_WORLD, 0, n - me, &reversed), TSU_OK);
  // Interleaved on three teams and the world.
  for (tsu_team_t t : {by_node, parity, reversed}) {
    deep_overlap(t);
    for (std::size_t bytes : {std::size_t{8}, std::size_t{8193}, std::size_t{70001}}) {
      broadcast_every_root(t, bytes);
      gathers(t, bytes);
      reductions(t, bytes);
    }
  }
  uint64_t one = 1, a = 0, b = 0, c = 0;
  Flag fa, fb, fc;
  ASSERT_EQ(tsu_try_allreduce(by_node, &one, &a, 1, TSU_DT_UINT64, TSU_OP_SUM, fa.cb()), TSU_OK);
  ASSERT_EQ(tsu_try_allreduce(TSU_TEAM_WORLD, &one, &b, 1, TSU_DT_UINT64, TSU_OP_SUM, fb.cb()), TSU_OK);
  ASSERT_EQ(tsu_try_allreduce(reversed, &one, &c, 1, TSU_DT_UINT64, TSU_OP_SUM, fc.cb()), TSU_OK);
  fa.wait();
  fb.wait();
  fc.wait();
  EXPECT_EQ(a, team_size(by_node));
  EXPECT_EQ(b, n);
  EXPECT_EQ(c, n);
  for (tsu_team_t t : {by_node, parity, reversed}) EXPECT_EQ(tsu_team_free(t), TSU_OK);
}

// Gathers, allgathers and alltoalls of several sizes in flight at once
// (across pseudo-nodes: hierarchical ones queue behind each other), checked
// after all completed.
void overlapped_gathers(tsu_team_t team) {
  const uint32_t n = team_size(team), me = team_rank(team);
  constexpr uint32_t kOps = 9;
  const std::size_t sizes[] = {3, 100, 9000};
  std::vector<std::vector<unsigned char>> in(kOps), out(kOps);
  std::vector<std::unique_ptr<Flag>> flags;
  for (uint32_t k = 0; k < kOps; ++k) {
    const std::size_t bytes = sizes[k % 3];
    const uint32_t kind = k % 3, root = k % n, salt = 10 + k;
    in[k].resize(kind == 2 ? bytes * n : bytes);
    for (std::size_t i = 0; i < in[k].size(); ++i) in[k][i] = byte_of(me, i, salt);
    out[k].assign(bytes * n, 0xEE);
    flags.push_back(std::make_unique<Flag>());
    tsu_status_t st = TSU_OK;
    if (kind == 0)
      st = tsu_try_gather(team, in[k].data(), me == root ? out[k].data() : nullptr, bytes, root,
                          flags.back()->cb());
    else if (kind == 1)
      st = tsu_try_allgather(team, in[k].data(), out[k].data(), bytes, flags.back()->cb());
    else
      st = tsu_try_alltoall(team, in[k].data(), out[k].data(), bytes, flags.back()->cb());
    ASSERT_EQ(st, TSU_OK);
  }
  for (auto& f : flags) f->wait();
  for (uint32_t k = 0; k < kOps; ++k) {
    const std::size_t bytes = sizes[k % 3];
    const uint32_t kind = k % 3, root = k % n, salt = 10 + k;
    if (kind == 0 && me != root) continue;
    for (uint32_t r = 0; r < n; ++r)
      for (std::size_t i = 0; i < bytes; ++i) {
        // alltoall: block r came from rank r, its block `me`
        const std::size_t at = kind == 2 ? me * bytes + i : i;
        ASSERT_EQ(out[k][r * bytes + i], byte_of(r, at, salt)) << "op " << k << " from " << r;
      }
  }
}

// Many small rooted collectives in flight, of sizes that wrap the small
// data ring (32 KiB) several times before anyone waits: a root runs ahead
// until the bytes it reuses were read by every peer.
void small_ring_wrap(tsu_team_t team) {
  const uint32_t n = team_size(team), me = team_rank(team);
  constexpr uint32_t kOps = 48;
  std::vector<std::vector<unsigned char>> bufs(kOps), got(kOps);
  std::vector<std::unique_ptr<Flag>> flags;
  for (uint32_t k = 0; k < kOps; ++k) {
    const std::size_t bytes = 57 + (k * 997) % 3000;
    const uint32_t root = (k / 3) % n;
    bufs[k].assign(bytes, 0);
    if (me == root || k % 2)
      for (std::size_t i = 0; i < bytes; ++i) bufs[k][i] = byte_of(k % 2 ? me : root, i, k);
    flags.push_back(std::make_unique<Flag>());
    if (k % 2 == 0) {
      ASSERT_EQ(tsu_try_broadcast(team, bufs[k].data(), bytes, root, flags.back()->cb()), TSU_OK);
    } else {
      got[k].assign(me == root ? bytes * n : 0, 0xEE);
      ASSERT_EQ(tsu_try_gather(team, bufs[k].data(), me == root ? got[k].data() : nullptr, bytes / (n + 1) + 1,
                               root, flags.back()->cb()), TSU_OK);
    }
  }
  for (auto& f : flags) f->wait();
  for (uint32_t k = 0; k < kOps; ++k) {
    const uint32_t root = (k / 3) % n;
    if (k % 2 == 0) {
      for (std::size_t i = 0; i < bufs[k].size(); ++i)
        ASSERT_EQ(bufs[k][i], byte_of(root, i, k)) << "broadcast " << k;
    } else if (me == root) {
      const std::size_t bytes = bufs[k].size() / (n + 1) + 1;
      for (uint32_t r = 0; r < n; ++r)
        for (std::size_t i = 0; i < bytes; ++i)
          ASSERT_EQ(got[k][r * bytes + i], byte_of(r, i, k)) << "gather " << k << " from " << r;
    }
  }
}

TEST(CollNode, SmallRingWrap) { small_ring_wrap(TSU_TEAM_WORLD); }

// Tiny gathers (their root publishes no data: it copies its own block)
// between tiny allgathers and reductions from the same roots, more in flight
// than a slot has tiny lines (1024): a member's line a gather left unwritten
// is read by the next op that uses it only once rewritten for that op.
void tiny_gathers_between_others(tsu_team_t team) {
  const uint32_t n = team_size(team), me = team_rank(team);
  constexpr uint32_t kOps = 2600;
  std::vector<int64_t> in(kOps), out(std::size_t{kOps} * n, -1);
  std::vector<std::unique_ptr<Flag>> flags;
  for (uint32_t k = 0; k < kOps; ++k) {
    in[k] = int64_t{k} * 1000 + me;
    const uint32_t root = (k / 3) % n;
    int64_t* to = out.data() + std::size_t{k} * n;
    flags.push_back(std::make_unique<Flag>());
    tsu_status_t st = TSU_OK;
    if (k % 3 == 0) {
      st = tsu_try_gather(team, &in[k], me == root ? to : nullptr, sizeof(int64_t), root, flags.back()->cb());
    } else if (k % 3 == 1) {
      st = tsu_try_allgather(team, &in[k], to, sizeof(int64_t), flags.back()->cb());
    } else {
      st = tsu_try_reduce(team, &in[k], me == root ? to : nullptr, 1, TSU_DT_INT64, TSU_OP_SUM, root,
                          flags.back()->cb());
    }
    ASSERT_EQ(st, TSU_OK) << "op " << k;
  }
  for (auto& f : flags) f->wait();
  for (uint32_t k = 0; k < kOps; ++k) {
    const uint32_t root = (k / 3) % n;
    const int64_t* got = out.data() + std::size_t{k} * n;
    if (k % 3 == 2) {
      if (me == root) {
        ASSERT_EQ(got[0], int64_t{k} * 1000 * n + int64_t{n} * (n - 1) / 2) << "reduce " << k;
      }
    } else if (k % 3 == 1 || me == root) {
      for (uint32_t r = 0; r < n; ++r) ASSERT_EQ(got[r], int64_t{k} * 1000 + r) << "op " << k << " from " << r;
    }
  }
}

TEST(CollNode, TinyGathersBetweenOthers) { tiny_gathers_between_others(TSU_TEAM_WORLD); }

// Staged alltoalls that fill the 1 MiB stage (a member stages every block
// but its own, packed, in 64 KiB chunks the blocks straddle; n - 1 blocks
// of almost 1 MiB / (n - 1) each, so 2 ranks stage blocks of almost 1 MiB),
// three in flight with a staged allgather between them: each waits for the
// stage its previous readers still copy out of.
TEST(CollNode, StagedAlltoallsFillTheStage) {
  const tsu_team_t team = TSU_TEAM_WORLD;
  const uint32_t n = team_size(team), me = team_rank(team);
  if (n < 2) GTEST_SKIP() << "needs 2 ranks";
  const std::size_t bytes = ((std::size_t{1} << 20) - 40) / (n - 1);
  constexpr uint32_t kOps = 3;
  std::vector<std::vector<unsigned char>> in(kOps), out(kOps);
  std::vector<unsigned char> mine(bytes / 3), all(bytes / 3 * n, 0xEE);
  for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = byte_of(me, i, 40);
  std::vector<std::unique_ptr<Flag>> flags;
  for (uint32_t k = 0; k < kOps; ++k) {
    in[k].resize(bytes * n);
    for (std::size_t i = 0; i < in[k].size(); ++i) in[k][i] = byte_of(me, i, 41 + k);
    out[k].assign(bytes * n, 0xEE);
    flags.push_back(std::make_unique<Flag>());
    ASSERT_EQ(tsu_try_alltoall(team, in[k].data(), out[k].data(), bytes, flags.back()->cb()), TSU_OK);
    if (k == 0) {
      flags.push_back(std::make_unique<Flag>());
      ASSERT_EQ(tsu_try_allgather(team, mine.data(), all.data(), mine.size(), flags.back()->cb()), TSU_OK);
    }
  }
  for (auto& f : flags) f->wait();
  for (uint32_t k = 0; k < kOps; ++k)
    for (uint32_t r = 0; r < n; ++r)
      for (std::size_t i = 0; i < bytes; ++i)
        ASSERT_EQ(out[k][r * bytes + i], byte_of(r, me * bytes + i, 41 + k)) << "alltoall " << k << " from " << r;
  for (uint32_t r = 0; r < n; ++r)
    for (std::size_t i = 0; i < mine.size(); ++i)
      ASSERT_EQ(all[r * mine.size() + i], byte_of(r, i, 40)) << "allgather from " << r;
}

TEST(CollNode, InterleavedAndUnevenTeams) {
  // Across pseudo-nodes (tsurun --ranks-per-node 2): `mixed` alternates
  // between the nodes in team-rank order (node members not adjacent), and
  // `uneven` leaves rank 1 out so that its node has fewer members than the
  // others (leaders exchange padded blocks).  On one node: plain node teams.
  const uint32_t n = mp::size(), me = mp::rank();
  tsu_team_t mixed = TSU_TEAM_NULL, uneven = TSU_TEAM_NULL;
  ASSERT_EQ(tsu_team_split(TSU_TEAM_WORLD, 0, (me % 2) * n + me, &mixed), TSU_OK);
  ASSERT_EQ(tsu_team_split(TSU_TEAM_WORLD, me == 1 ? -1 : 0, n - me, &uneven), TSU_OK);
  std::vector<tsu_team_t> teams{mixed, TSU_TEAM_WORLD};
  if (uneven != TSU_TEAM_NULL) teams.push_back(uneven);
  for (tsu_team_t t : teams) {
    overlapped_gathers(t);
    for (std::size_t bytes : {std::size_t{0}, std::size_t{8}, std::size_t{3000}, std::size_t{70001}})
      gathers(t, bytes);
  }
  if (uneven != TSU_TEAM_NULL) {
    reductions(uneven, 800);
    broadcast_every_root(uneven, 100);
  }
  EXPECT_EQ(tsu_team_free(mixed), TSU_OK);
  if (uneven != TSU_TEAM_NULL) {
    EXPECT_EQ(tsu_team_free(uneven), TSU_OK);
  }
}

TEST(CollNode, MoreTeamsThanSlots) {
  // Each split takes a slot on its members; past the last one teams use
  // messages.  Every team stays correct, freed or not.
  const uint32_t me = mp::rank();
  std::vector<tsu_team_t> teams;
  for (int k = 0; k < 20; ++k) {
    tsu_team_t t = TSU_TEAM_NULL;
    ASSERT_EQ(tsu_team_split(TSU_TEAM_WORLD, 0, (me + static_cast<uint32_t>(k)) % mp::size(), &t),
              TSU_OK);
    teams.push_back(t);
    uint64_t mine = me + 1, sum = 0;
    Flag f;
    ASSERT_EQ(tsu_try_allreduce(t, &mine, &sum, 1, TSU_DT_UINT64, TSU_OP_SUM, f.cb()), TSU_OK);
    f.wait();
    const uint64_t n = mp::size();
    EXPECT_EQ(sum, n * (n + 1) / 2) << "team " << k;
    if (k % 3 == 2) {
      EXPECT_EQ(tsu_team_free(teams[k - 1]), TSU_OK);
      teams[k - 1] = TSU_TEAM_NULL;
    }
  }
  broadcast_every_root(teams.back(), 9000);
}

}  // namespace
