// A ULT's floating-point environment across switches (docs/ult.md,
// "Floating-point state"): rounding mode and the status flags other than
// FE_INEXACT stay each thread's own; FE_INEXACT does too with
// TSU_ULT_FP_FLAGS=exact, and by default reads as raised once the thread has
// switched (x86, src/ult/fp_state.hpp).  And the setting is validated.
#include <gtest/gtest.h>
#include <tsunagi/ult.h>

#include <cfenv>
#include <cstddef>
#include <cstdlib>
#include <string>

namespace {

// One worker, so the threads below take turns on one pthread.
tsu_status_t start(int fp_flags /* -1: not set */) {
  tsu_ult_config_t cfg{};
  cfg.struct_size = sizeof cfg;
  cfg.field_mask = TSU_ULT_CONFIG_WORKERS;
  cfg.workers = 1;
  if (fp_flags >= 0) {
    cfg.field_mask |= TSU_ULT_CONFIG_FP_FLAGS;
    cfg.fp_flags = fp_flags;
  }
  return tsu_ult_init(&cfg);
}

class UltFpState : public ::testing::Test {
 protected:
  void TearDown() override {
    if (tsu_ult_workers()) {
      EXPECT_EQ(tsu_ult_finalize(), TSU_OK);
    }
  }
};

// SSE arithmetic on values the compiler cannot see (so it is done here, at
// run time, and raises its flags in MXCSR).
volatile double g_zero = 0.0, g_one = 1.0, g_three = 3.0, g_sink = 0.0;
void divide_by_zero() { g_sink = g_one / g_zero; }  // FE_DIVBYZERO only
void invalid() { g_sink = g_zero / g_zero; }        // FE_INVALID only
void inexact() { g_sink = g_one / g_three; }        // FE_INEXACT only

constexpr int kRareFlags = FE_DIVBYZERO | FE_INVALID;

struct FpThread {
  int round;           // the rounding mode this thread sets
  void (*raise)();     // raises this thread's flag (nullptr: none)
  int flag;            // which flag that is
  int yields;
  int wrong_round = 0;  // checks that failed, counted here, asserted by the test
  int wrong_flags = 0;
};

void* keep_fp_state(void* a) {
  auto* t = static_cast<FpThread*>(a);
  std::feclearexcept(FE_ALL_EXCEPT);
  std::fesetround(t->round);
  if (t->raise) t->raise();
  for (int i = 0; i < t->yields; ++i) {
    tsu_ult_yield();
    if (std::fegetround() != t->round) ++t->wrong_round;
    if (std::fetestexcept(kRareFlags) != t->flag) ++t->wrong_flags;
  }
  std::fesetround(FE_TONEAREST);
  return nullptr;
}

void run_three_threads(FpThread (&ts)[3]) {
  tsu_ult_t h[3];
  for (int i = 0; i < 3; ++i) ASSERT_EQ(tsu_ult_create(&h[i], nullptr, keep_fp_state, &ts[i]), TSU_OK);
  for (auto& x : h) ASSERT_EQ(tsu_ult_join(x, nullptr), TSU_OK);
}

TEST_F(UltFpState, RoundingModeAndRareFlagsStayPerThread) {
  for (const int mode : {-1, int{TSU_ULT_FP_FLAGS_FAST}, int{TSU_ULT_FP_FLAGS_EXACT}}) {
    ASSERT_EQ(start(mode), TSU_OK) << mode;
    FpThread ts[3] = {{FE_UPWARD, divide_by_zero, FE_DIVBYZERO, 2000},
                      {FE_TOWARDZERO, invalid, FE_INVALID, 2000},
                      {FE_TONEAREST, nullptr, 0, 2000}};
    run_three_threads(ts);
    for (const auto& t : ts) {
      EXPECT_EQ(t.wrong_round, 0) << "fp_flags " << mode << ", rounding " << t.round;
      EXPECT_EQ(t.wrong_flags, 0) << "fp_flags " << mode << ", flag " << t.flag;
    }
    ASSERT_EQ(tsu_ult_finalize(), TSU_OK);
  }
}

// Two threads: one computes (raises FE_INEXACT between yields), one does not
// and reports what it reads.
struct InexactPair {
  int yields = 1000;
  int quiet_saw_inexact = 0;       // yields after which the quiet thread read FE_INEXACT
  int computing_lost_inexact = 0;  // ... the computing one did not
};
InexactPair* g_pair = nullptr;
void* computing(void*) {
  for (int i = 0; i < g_pair->yields; ++i) {
    inexact();
    tsu_ult_yield();
    if (!std::fetestexcept(FE_INEXACT)) ++g_pair->computing_lost_inexact;
  }
  return nullptr;
}
void* quiet(void*) {
  std::feclearexcept(FE_ALL_EXCEPT);
  for (int i = 0; i < g_pair->yields; ++i) {
    tsu_ult_yield();
    if (std::fetestexcept(FE_INEXACT)) ++g_pair->quiet_saw_inexact;
  }
  return nullptr;
}
InexactPair run_pair() {
  InexactPair p;
  g_pair = &p;
  tsu_ult_t a, b;
  EXPECT_EQ(tsu_ult_create(&a, nullptr, computing, nullptr), TSU_OK);
  EXPECT_EQ(tsu_ult_create(&b, nullptr, quiet, nullptr), TSU_OK);
  EXPECT_EQ(tsu_ult_join(a, nullptr), TSU_OK);
  EXPECT_EQ(tsu_ult_join(b, nullptr), TSU_OK);
  g_pair = nullptr;
  return p;
}

TEST_F(UltFpState, ExactModeKeepsInexactPerThread) {
  ASSERT_EQ(start(TSU_ULT_FP_FLAGS_EXACT), TSU_OK);
  const InexactPair p = run_pair();
  EXPECT_EQ(p.quiet_saw_inexact, 0);
  EXPECT_EQ(p.computing_lost_inexact, 0);
}

TEST_F(UltFpState, ExactModeFromTheEnvironment) {
  ASSERT_EQ(setenv("TSU_ULT_FP_FLAGS", "exact", 1), 0);
  const tsu_status_t st = start(-1);
  unsetenv("TSU_ULT_FP_FLAGS");
  ASSERT_EQ(st, TSU_OK);
  EXPECT_EQ(run_pair().quiet_saw_inexact, 0);
}

#if defined(__x86_64__)
// The documented price of the default: once a thread has switched, it reads
// FE_INEXACT as raised, whatever it computed.
TEST_F(UltFpState, FastModeReadsInexactRaisedAfterASwitch) {
  ASSERT_EQ(start(-1), TSU_OK);
  const InexactPair p = run_pair();
  EXPECT_EQ(p.quiet_saw_inexact, p.yields);
  EXPECT_EQ(p.computing_lost_inexact, 0);
}
#endif

TEST_F(UltFpState, BadSettingsAreRefused) {
  for (const char* bad : {"", "Fast", "exactly", "1", "slow"}) {
    ASSERT_EQ(setenv("TSU_ULT_FP_FLAGS", bad, 1), 0);
    testing::internal::CaptureStderr();
    const tsu_status_t st = start(-1);
    const std::string err = testing::internal::GetCapturedStderr();
    unsetenv("TSU_ULT_FP_FLAGS");
    EXPECT_EQ(st, TSU_ERR_CONFIG) << "TSU_ULT_FP_FLAGS=" << bad;
    EXPECT_NE(err.find("TSU_ULT_FP_FLAGS"), std::string::npos) << err;
    EXPECT_EQ(tsu_ult_workers(), 0u);
    if (st == TSU_OK) tsu_ult_finalize();
  }
  for (const int bad : {2, -1, 1 << 20}) {
    tsu_ult_config_t cfg{};
    cfg.struct_size = sizeof cfg;
    cfg.field_mask = TSU_ULT_CONFIG_FP_FLAGS;
    cfg.fp_flags = bad;
    testing::internal::CaptureStderr();
    const tsu_status_t st = tsu_ult_init(&cfg);
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(st, TSU_ERR_CONFIG) << "fp_flags " << bad;
    EXPECT_NE(err.find("fp_flags"), std::string::npos) << err;
    EXPECT_EQ(tsu_ult_workers(), 0u);
    if (st == TSU_OK) tsu_ult_finalize();
  }
  // A struct that ends before fp_flags may not ask for it; without the bit it starts.
  tsu_ult_config_t cfg{};
  cfg.struct_size = offsetof(tsu_ult_config_t, fp_flags);
  cfg.field_mask = TSU_ULT_CONFIG_FP_FLAGS;
  cfg.fp_flags = TSU_ULT_FP_FLAGS_EXACT;
  testing::internal::CaptureStderr();
  EXPECT_EQ(tsu_ult_init(&cfg), TSU_ERR_CONFIG);
  testing::internal::GetCapturedStderr();
  cfg.field_mask = 0;
  EXPECT_EQ(tsu_ult_init(&cfg), TSU_OK);
}

}  // namespace
