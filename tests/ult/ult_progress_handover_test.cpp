// Progress handed back from a ULT scheduler's workers to the thread that
// steps back while they poll: the progress thread (thread mode) or
// tsu_barrier's helper (manual progress).  While rank 1's idle worker polls
// (TSU_ULT_SPIN_US is long here), that thread naps
// (ProgressEngine::driven_by_others).  Then rank 1's only worker runs a
// spawned thread that spins, without polling, until an active message from
// rank 0 has been handled on rank 1.  Rank 1's main pthread sits in
// tsu_barrier meanwhile, so only the napping thread can run that handler: it
// must notice that the polls stopped and poll again.  If it did not, the
// spinning thread would never end and tsurun's timeout would fail the test.
// Several rounds, with values checked; between rounds rank 0 keeps rank 1's
// worker busy with ordinary remote create+joins (so the napper naps again).
#include <tsunagi/tsunagi.h>
#include <tsunagi/ult.h>

#include "rank_check.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <thread>

namespace {

using ult_test::g_failed;
using ult_test::g_rank;

enum : uint32_t { kEcho = 1, kSpinUntilReleased = 2 };
constexpr uint32_t kAmRelease = 40;
constexpr uint64_t kRounds = 6;
constexpr int kEchoes = 300;

std::atomic<uint64_t> g_released{0};  // kAmRelease messages handled here

void echo(const void* arg, size_t len, void* value, size_t* vlen) {
  uint64_t x = 0;
  if (len == sizeof x) __builtin_memcpy(&x, arg, sizeof x);
  x = x * 7 + 3;
  __builtin_memcpy(value, &x, sizeof x);
  *vlen = sizeof x;
}

// Spins (no tsunagi call, no yield: the worker polls nothing meanwhile)
// until the round's release message has been handled on this rank.
void spin_until_released(const void* arg, size_t len, void* value, size_t* vlen) {
  uint64_t round = 0;
  if (len == sizeof round) __builtin_memcpy(&round, arg, sizeof round);
  while (g_released.load(std::memory_order_acquire) <= round) {
  }
  const uint64_t out = round * 3 + 1;
  __builtin_memcpy(value, &out, sizeof out);
  *vlen = sizeof out;
}

uint64_t join_u64(tsu_ult_t t) {
  uint64_t v = 0;
  size_t len = 0;
  CHECK(tsu_ult_join_value(t, &v, sizeof v, &len) == TSU_OK);
  CHECK(len == sizeof v);
  return v;
}

void rank0_rounds() {
  for (uint64_t round = 0; round < kRounds; ++round) {
    // Rank 1's worker polls and runs threads: its napper steps back.
    for (int i = 0; i < kEchoes; ++i) {
      const uint64_t x = round * 1000 + static_cast<uint64_t>(i);
      tsu_ult_t t;
      CHECK(tsu_ult_spawn(&t, 1, kEcho, &x, sizeof x, nullptr) == TSU_OK);
      CHECK(join_u64(t) == x * 7 + 3);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    tsu_ult_t spinner;
    CHECK(tsu_ult_spawn(&spinner, 1, kSpinUntilReleased, &round, sizeof round, nullptr) ==
          TSU_OK);
    // Long enough for the spinner to have started and the napper to be in
    // a nap; nothing depends on it but how well the test covers the path.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    tsu_status_t st;
    while ((st = tsu_try_am_short(1, kAmRelease, nullptr, 0, tsu_cb_none())) == TSU_EAGAIN)
      tsu_progress();
    CHECK(st == TSU_OK);
    CHECK(join_u64(spinner) == round * 3 + 1);
  }
}

}  // namespace

int main() {
  if (tsu_init(nullptr) != TSU_OK) {
    std::fprintf(stderr, "tsu_init: %s\n", tsu_last_error());
    return 1;
  }
  uint32_t size = 0;
  tsu_rank(&g_rank);
  tsu_size(&size);
  if (size != 2) {
    std::fprintf(stderr, "run with 2 ranks\n");
    tsu_finalize();
    return 1;
  }
  tsu_ult_config_t cfg{};
  cfg.struct_size = sizeof cfg;
  cfg.field_mask = TSU_ULT_CONFIG_WORKERS;
  cfg.workers = 1;  // rank 1's one worker is the one that spins
  CHECK(tsu_ult_init(&cfg) == TSU_OK);
  CHECK(tsu_ult_register(kEcho, echo) == TSU_OK);
  CHECK(tsu_ult_register(kSpinUntilReleased, spin_until_released) == TSU_OK);
  CHECK(tsu_am_register(kAmRelease,
                        [](tsu_am_token_t*, const uint64_t*, uint32_t, void*, size_t, void*) {
                          g_released.fetch_add(1, std::memory_order_acq_rel);
                        },
                        nullptr) == TSU_OK);
  CHECK(tsu_barrier() == TSU_OK);
  if (g_rank == 0) rank0_rounds();
  // Rank 1 waits here for all the rounds: its main pthread polls nothing.
  CHECK(tsu_barrier() == TSU_OK);
  if (g_rank == 1) CHECK(g_released.load() == kRounds);
  CHECK(tsu_ult_finalize() == TSU_OK);
  tsu_finalize();
  if (g_failed == 0 && g_rank == 0) std::printf("progress handover: %llu rounds ok\n",
                                                static_cast<unsigned long long>(kRounds));
  return g_failed == 0 ? 0 : 1;
}
