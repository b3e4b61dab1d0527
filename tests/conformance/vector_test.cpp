// Conformance: vector (tsu_try_putv / getv) and strided (tsu_try_put_strided
// / get_strided) transfers on every route: one request, one completion; the
// right bytes land over sizes, strides, unaligned and zero-length pieces,
// requests small enough for one message and ones spanning many; a bad remote
// piece anywhere fails the request with its status and writes nothing; a
// bad local piece is refused at the call.
#include <gtest/gtest.h>

#include <vector>

#include "mp_util.hpp"

namespace {

using mp::barrier;

constexpr uint64_t kRemoteOff = 1u << 18;  // per writer 256 KiB at the target
constexpr uint64_t kRemote = 1u << 18;
constexpr uint64_t kLocalOff = 5u << 18;   // 256 KiB source, 256 KiB read-back
constexpr uint64_t kLocal = 1u << 18;

tsu_status_t wait_one(const std::function<tsu_status_t(tsu_cb_t)>& issue) {
  return mp::outcome(issue);
}

// Pieces: `count` pieces of varied lengths (some zero), odd offsets, spread
// over the remote region in a shuffled order; local side packed.
std::vector<tsu_piece_t> make_pieces(std::size_t count, uint64_t max_len, uint32_t salt) {
  std::vector<tsu_piece_t> v;
  uint64_t local = 3;
  const uint64_t slot = kRemote / count;
  for (std::size_t i = 0; i < count; ++i) {
    const uint64_t len = (i % 7 == 3) ? 0 : 1 + (i * 2654435761u + salt) % max_len;
    const uint64_t s = (i * 7919) % count;  // a permutation when gcd(count, 7919) == 1
    v.push_back(tsu_piece_t{kRemoteOff + s * slot + (i % 5), local, std::min(len, slot - 5)});
    local += v.back().len + (i % 3);
  }
  return v;
}

void run_vector_case(uint32_t target, std::size_t count, uint64_t max_len, uint32_t salt) {
  const uint32_t me = mp::rank();
  uint8_t* base = mp::main_base();
  auto pieces = make_pieces(count, max_len, salt);
  mp::fill_pattern(base + kLocalOff, kLocal, me, 0, salt);
  for (auto& p : pieces) p.local += kLocalOff;
  ASSERT_EQ(wait_one([&](tsu_cb_t cb) {
              return tsu_try_putv(target, TSU_SEG_MAIN, TSU_SEG_MAIN, pieces.data(), pieces.size(),
                                  cb);
            }),
            TSU_OK)
      << tsu_last_error();
  // Read back with a getv into the second half (same pieces, shifted locally).
  std::memset(base + kLocalOff + kLocal, 0, kLocal);
  auto back = pieces;
  for (auto& p : back) p.local += kLocal;
  ASSERT_EQ(wait_one([&](tsu_cb_t cb) {
              return tsu_try_getv(target, TSU_SEG_MAIN, TSU_SEG_MAIN, back.data(), back.size(), cb);
            }),
            TSU_OK)
      << tsu_last_error();
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    ASSERT_EQ(std::memcmp(base + pieces[i].local, base + back[i].local, pieces[i].len), 0)
        << "piece " << i << " of " << count << " (len " << pieces[i].len << ")";
  }
}

// Each rank writes the next rank's region in turn (one writer at a time, so
// pieces never race with another rank's).
TEST(Vector, PutvGetvRoundTrip) {
  const uint32_t me = mp::rank(), n = mp::size();
  const uint32_t next = (me + 1) % n;
  for (uint32_t writer = 0; writer < n; ++writer) {
    if (writer == me) {
      run_vector_case(next, 1, 5000, 1);
      run_vector_case(next, 13, 100, 2);           // one message
      run_vector_case(next, 601, 300, 3);          // many messages over udp
      run_vector_case(next, 37, 6000, 4);          // pieces larger than a datagram
      run_vector_case(next, 3001, 8, 5);           // only the entries need splitting
    }
    barrier();
  }
}

// 2-D and 3-D strided put, checked piece by piece with a plain get; then a
// strided get reads the same blocks back.
TEST(Vector, StridedPutGet) {
  const uint32_t me = mp::rank(), n = mp::size();
  const uint32_t next = (me + 1) % n;
  uint8_t* base = mp::main_base();
  struct Shape { uint64_t block, c0, c1, rs0, rs1, ls0, ls1; };
  const Shape shapes[] = {{8, 64, 1, 24, 0, 8, 0},        {13, 100, 1, 40, 0, 17, 0},
                          {1, 1000, 1, 3, 0, 1, 0},       {100, 10, 10, 128, 1500, 100, 1000},
                          {3000, 4, 3, 3100, 12500, 3001, 12004}, {0, 5, 5, 1, 1, 1, 1}};
  for (uint32_t writer = 0; writer < n; ++writer) {
    if (writer == me) {
      uint32_t salt = 10;
      for (const Shape& s : shapes) {
        ++salt;
        const tsu_strided_t shape{s.block, {s.c0, s.c1}, {s.rs0, s.rs1}, {s.ls0, s.ls1}};
        mp::fill_pattern(base + kLocalOff, kLocal, me, 0, salt);
        const tsu_gaddr_t dst = tsu_gaddr(next, TSU_SEG_MAIN, kRemoteOff + 5);
        ASSERT_EQ(wait_one([&](tsu_cb_t cb) {
                    return tsu_try_put_strided(dst, tsu_laddr(TSU_SEG_MAIN, kLocalOff + 1), &shape,
                                               cb);
                  }),
                  TSU_OK)
            << tsu_last_error();
        std::memset(base + kLocalOff + kLocal, 0, kLocal);
        ASSERT_EQ(wait_one([&](tsu_cb_t cb) {
                    return tsu_try_get_strided(tsu_laddr(TSU_SEG_MAIN, kLocalOff + kLocal + 1), dst,
                                               &shape, cb);
                  }),
                  TSU_OK)
            << tsu_last_error();
        for (uint64_t j = 0; j < s.c1; ++j)
          for (uint64_t i = 0; i < s.c0 && s.block; ++i) {
            const uint64_t l = 1 + i * s.ls0 + j * s.ls1;
            // Direct check of the target with a contiguous get.
            uint8_t* chk = base + kLocalOff + 2 * kLocal - 4096;
            ASSERT_EQ(mp::get_sync(tsu_laddr(TSU_SEG_MAIN, kLocalOff + 2 * kLocal - 4096),
                                   tsu_gaddr_add(dst, i * s.rs0 + j * s.rs1), s.block),
                      TSU_OK);
            ASSERT_EQ(std::memcmp(chk, base + kLocalOff + l, s.block), 0)
                << "block " << i << "," << j << " block size " << s.block;
            ASSERT_EQ(std::memcmp(base + kLocalOff + kLocal + l, base + kLocalOff + l, s.block), 0)
                << "strided get block " << i << "," << j;
          }
      }
    }
    barrier();
  }
}

// One bad remote piece (past the segment's end, or an unknown segment) among
// many: the request fails with its status and nothing is written, whether it
// fits one message or not.  A bad local piece is refused at the call.
TEST(Vector, BadPieceWritesNothing) {
  const uint32_t me = mp::rank(), n = mp::size();
  const uint32_t next = (me + 1) % n;
  uint8_t* base = mp::main_base();
  const uint64_t seg = mp::main_size();
  for (uint32_t writer = 0; writer < n; ++writer) {
    if (writer == me) {
      for (std::size_t count : {std::size_t{4}, std::size_t{700}}) {
        for (std::size_t bad_at : {std::size_t{0}, count / 2, count - 1}) {
          // Zero the target region first.
          std::memset(base + kLocalOff + kLocal, 0, kLocal);
          ASSERT_EQ(mp::put_sync(tsu_gaddr(next, TSU_SEG_MAIN, kRemoteOff),
                                 tsu_laddr(TSU_SEG_MAIN, kLocalOff + kLocal), kRemote),
                    TSU_OK);
          std::memset(base + kLocalOff, 0xab, kLocal);
          std::vector<tsu_piece_t> v;
          for (std::size_t i = 0; i < count; ++i)
            v.push_back(tsu_piece_t{kRemoteOff + i * 64, kLocalOff + i * 64, 48});
          v[bad_at].remote = seg - 16;  // runs 32 B past the end
          EXPECT_EQ(wait_one([&](tsu_cb_t cb) {
                      return tsu_try_putv(next, TSU_SEG_MAIN, TSU_SEG_MAIN, v.data(), v.size(), cb);
                    }),
                    TSU_ERR_OUT_OF_BOUNDS)
              << "count " << count << " bad piece " << bad_at;
          ASSERT_EQ(mp::get_sync(tsu_laddr(TSU_SEG_MAIN, kLocalOff + kLocal),
                                 tsu_gaddr(next, TSU_SEG_MAIN, kRemoteOff), kRemote),
                    TSU_OK);
          EXPECT_EQ(mp::check_fill(base + kLocalOff + kLocal, kRemote, 0), SIZE_MAX)
              << "a failed putv wrote (count " << count << ", bad piece " << bad_at << ")";
          // The same for a get: the caller's memory stays untouched.
          for (auto& p : v) p.local += kLocal;
          std::memset(base + kLocalOff + kLocal, 0x5a, kLocal);
          EXPECT_EQ(wait_one([&](tsu_cb_t cb) {
                      return tsu_try_getv(next, TSU_SEG_MAIN, TSU_SEG_MAIN, v.data(), v.size(), cb);
                    }),
                    TSU_ERR_OUT_OF_BOUNDS);
          EXPECT_EQ(mp::check_fill(base + kLocalOff + kLocal, kRemote, 0x5a), SIZE_MAX)
              << "a failed getv wrote";
        }
      }
      // Unknown remote segment.
      tsu_piece_t one{0, kLocalOff, 8};
      EXPECT_EQ(wait_one([&](tsu_cb_t cb) { return tsu_try_putv(next, 4242, TSU_SEG_MAIN, &one, 1, cb); }),
                TSU_ERR_BAD_SEGMENT);
      // Bad local piece: refused at the call, no callback.
      tsu_piece_t local_bad[2] = {{kRemoteOff, kLocalOff, 8}, {kRemoteOff + 8, seg - 4, 8}};
      EXPECT_EQ(tsu_try_putv(next, TSU_SEG_MAIN, TSU_SEG_MAIN, local_bad, 2, tsu_cb_none()),
                TSU_ERR_OUT_OF_BOUNDS);
      EXPECT_EQ(tsu_try_putv(next, TSU_SEG_MAIN, TSU_SEG_MAIN, nullptr, 2, tsu_cb_none()),
                TSU_ERR_NULL_POINTER);
      EXPECT_EQ(tsu_try_putv(n, TSU_SEG_MAIN, TSU_SEG_MAIN, local_bad, 1, tsu_cb_none()),
                TSU_ERR_BAD_RANK);
      // A strided shape whose last block runs past the end.
      const tsu_strided_t shape{64, {10, 1}, {seg / 9, 0}, {64, 0}};
      EXPECT_EQ(wait_one([&](tsu_cb_t cb) {
                  return tsu_try_put_strided(tsu_gaddr(next, TSU_SEG_MAIN, 100),
                                             tsu_laddr(TSU_SEG_MAIN, kLocalOff), &shape, cb);
                }),
                TSU_ERR_OUT_OF_BOUNDS);
      // Zero pieces: done at once.
      EXPECT_EQ(wait_one([&](tsu_cb_t cb) {
                  return tsu_try_putv(next, TSU_SEG_MAIN, TSU_SEG_MAIN, local_bad, 0, cb);
                }),
                TSU_OK);
    }
    barrier();
  }
}

}  // namespace
