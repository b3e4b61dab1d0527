// A ULT's floating-point environment across switches (docs/ult.md,
// "Floating-point state"): rounding mode and the status flags other than
// FE_INEXACT stay each thread's own; with TSU_ULT_FP_FLAGS=exact every flag
// does (FE_INEXACT and the x87 unit's flags too), and a thread its joiner runs
// inline keeps its changes to itself; by default FE_INEXACT reads as raised
// once a thread has switched and the x87 flags are the worker's (x86,
// src/ult/fp_state.hpp).  And the setting is validated.
#include <gtest/gtest.h>
#include <tsunagi/ult.h>

#include <cfenv>
#include <cfloat>
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

// FE_OVERFLOW raised where the x87 unit keeps it (its status word, which
// Boost.Context does not save): glibc's feraiseexcept on x86-64 raises
// overflow through x87 instructions, and long double arithmetic is x87.
volatile long double g_ld_max = LDBL_MAX, g_ld_sink = 0.0L;
void overflow_by_feraiseexcept() { std::feraiseexcept(FE_OVERFLOW); }
void overflow_by_long_double() { g_ld_sink = g_ld_max * g_ld_max; }

// One thread raises FE_OVERFLOW and yields; the other, on the same worker,
// clears its flags and yields.  Returns the pair's counts.
struct OverflowPair {
  void (*raise)();
  bool quiet_clears = true;
  int yields = 500;
  int raiser_lost = 0;  // yields after which the raiser did not read FE_OVERFLOW
  int quiet_saw = 0;    // ... after which the quiet thread did
};
OverflowPair* g_overflow = nullptr;
void* raiser(void*) {
  std::feclearexcept(FE_ALL_EXCEPT);
  g_overflow->raise();
  for (int i = 0; i < g_overflow->yields; ++i) {
    tsu_ult_yield();
    if (!std::fetestexcept(FE_OVERFLOW)) ++g_overflow->raiser_lost;
  }
  return nullptr;
}
void* quiet_of_overflow(void*) {
  if (g_overflow->quiet_clears) std::feclearexcept(FE_ALL_EXCEPT);
  for (int i = 0; i < g_overflow->yields; ++i) {
    tsu_ult_yield();
    if (std::fetestexcept(FE_OVERFLOW)) ++g_overflow->quiet_saw;
  }
  return nullptr;
}
void run_overflow_pair(OverflowPair& p) {
  g_overflow = &p;
  tsu_ult_t a, b;
  ASSERT_EQ(tsu_ult_create(&a, nullptr, raiser, nullptr), TSU_OK);
  ASSERT_EQ(tsu_ult_create(&b, nullptr, quiet_of_overflow, nullptr), TSU_OK);
  ASSERT_EQ(tsu_ult_join(a, nullptr), TSU_OK);
  ASSERT_EQ(tsu_ult_join(b, nullptr), TSU_OK);
  g_overflow = nullptr;
}

// Exact mode: the other thread never sees the flag (it never raised it: its
// creator, this pthread, has none), the raiser always does.  Before, the
// quiet thread read the raiser's flag, or its feclearexcept cleared it for
// both.
TEST_F(UltFpState, ExactModeKeepsX87FlagsPerThread) {
  for (void (*raise)() : {overflow_by_feraiseexcept, overflow_by_long_double}) {
    for (const bool quiet_clears : {true, false}) {
      const char* how = raise == overflow_by_long_double ? "long double" : "feraiseexcept";
      ASSERT_EQ(start(TSU_ULT_FP_FLAGS_EXACT), TSU_OK);
      OverflowPair p{raise};
      p.quiet_clears = quiet_clears;
      run_overflow_pair(p);
      EXPECT_EQ(p.raiser_lost, 0) << how << ", quiet thread clears " << quiet_clears;
      EXPECT_EQ(p.quiet_saw, 0) << how << ", quiet thread clears " << quiet_clears;
      ASSERT_EQ(tsu_ult_finalize(), TSU_OK);
    }
  }
}

#if defined(__x86_64__) || defined(__i386__)
// The documented price of the default: the x87 flags belong to the worker's
// pthread, so a thread that does not clear them reads the other's.
TEST_F(UltFpState, FastModeSharesX87FlagsOfAWorker) {
  ASSERT_EQ(start(-1), TSU_OK);
  OverflowPair p{overflow_by_long_double};
  p.quiet_clears = false;
  run_overflow_pair(p);
  EXPECT_EQ(p.raiser_lost, 0);
  EXPECT_EQ(p.quiet_saw, p.yields);
}
#endif

// A thread created and joined at once by a ULT runs inline, on its joiner's
// stack with no switch between the two: in exact mode its rounding mode and
// flags (MXCSR and x87 alike) must still end with it, as a pthread's do.
struct InlineChild {
  int child_lost_overflow = 0;  // the child's own flag, gone after its yield
};
void* inline_child(void* a) {
  auto* c = static_cast<InlineChild*>(a);
  std::fesetround(FE_UPWARD);
  divide_by_zero();
  overflow_by_long_double();
  tsu_ult_yield();
  if (!std::fetestexcept(FE_OVERFLOW)) ++c->child_lost_overflow;
  return nullptr;
}
struct InlineHost {
  InlineChild child;
  int round_after = -1;
  int flags_after = -1;
};
void* inline_host(void* a) {
  auto* h = static_cast<InlineHost*>(a);
  std::feclearexcept(FE_ALL_EXCEPT);
  std::fesetround(FE_TONEAREST);
  tsu_ult_t t;
  if (tsu_ult_create(&t, nullptr, inline_child, &h->child) != TSU_OK) return nullptr;
  if (tsu_ult_join(t, nullptr) != TSU_OK) return nullptr;
  h->round_after = std::fegetround();
  h->flags_after = std::fetestexcept(kRareFlags | FE_OVERFLOW);
  return nullptr;
}

TEST_F(UltFpState, ExactModeKeepsAJoinedChildsEnvironmentToIt) {
  ASSERT_EQ(start(TSU_ULT_FP_FLAGS_EXACT), TSU_OK);
  InlineHost h;
  tsu_ult_t t;
  ASSERT_EQ(tsu_ult_create(&t, nullptr, inline_host, &h), TSU_OK);
  ASSERT_EQ(tsu_ult_join(t, nullptr), TSU_OK);
  EXPECT_EQ(h.round_after, FE_TONEAREST);
  EXPECT_EQ(h.flags_after, 0);
  EXPECT_EQ(h.child.child_lost_overflow, 0);
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
