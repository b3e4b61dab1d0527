// Calls before tsu_init and after tsu_finalize return TSU_ERR_NOT_INITIALIZED
// (naming the function in tsu_last_error) and never call back; invalid
// configurations are refused without initializing; tsu_init twice returns
// TSU_ERR_ALREADY_INITIALIZED.  Runs under tsurun and as a job of one rank.
// The tests run in order and share the process state: before, during, after.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include <atomic>
#include <cstring>
#include <string>

#include "tsunagi/tsunagi.h"

namespace {

std::atomic<int> g_calls{0};
void count_cb(tsu_status_t, void*) { g_calls.fetch_add(1); }

bool names(const char* fn) { return std::string(tsu_last_error()).find(fn) != std::string::npos; }

#define EXPECT_NOT_INIT(call, fn)                                      \
  do {                                                                 \
    EXPECT_EQ((call), TSU_ERR_NOT_INITIALIZED) << #call;               \
    EXPECT_TRUE(names(fn)) << #call << ": '" << tsu_last_error() << "'"; \
  } while (0)

alignas(8) uint8_t g_mem[4096];

void expect_everything_refused() {
  EXPECT_EQ(tsu_initialized(), 0);
  uint32_t u = 0;
  void* p = nullptr;
  std::size_t sz = 0;
  tsu_seg_t seg = 0;
  tsu_laddr_t l{};
  tsu_gaddr_t ga{};
  const tsu_cb_t cb = tsu_cb(count_cb, nullptr);
  EXPECT_NOT_INIT(tsu_rank(&u), "tsu_rank");
  EXPECT_NOT_INIT(tsu_size(&u), "tsu_size");
  EXPECT_NOT_INIT(tsu_node_of(0, &u), "tsu_node_of");
  EXPECT_NOT_INIT(tsu_node_count(&u), "tsu_node_count");
  EXPECT_NOT_INIT(tsu_progress(), "tsu_progress");
  EXPECT_NOT_INIT(tsu_barrier(), "tsu_barrier");
  EXPECT_NOT_INIT(tsu_segment_alloc(4096, &seg, &p), "tsu_segment_alloc");
  EXPECT_NOT_INIT(tsu_mem_register(g_mem, sizeof g_mem, &seg), "tsu_mem_register");
  EXPECT_NOT_INIT(tsu_segment_free(1), "tsu_segment_free");
  EXPECT_NOT_INIT(tsu_segment_info(0, &p, &sz), "tsu_segment_info");
  EXPECT_NOT_INIT(tsu_laddr_of(g_mem, &l), "tsu_laddr_of");
  EXPECT_NOT_INIT(tsu_gaddr_of(g_mem, &ga), "tsu_gaddr_of");
  EXPECT_NOT_INIT(tsu_laddr_ptr(tsu_laddr(0, 0), 8, &p), "tsu_laddr_ptr");
  EXPECT_NOT_INIT(tsu_gaddr_ptr(tsu_gaddr(0, 0, 0), 8, &p), "tsu_gaddr_ptr");
  EXPECT_NOT_INIT(tsu_try_put(tsu_gaddr(0, 0, 0), tsu_laddr(0, 8), 8, cb), "tsu_try_put");
  EXPECT_NOT_INIT(tsu_try_get(tsu_laddr(0, 8), tsu_gaddr(0, 0, 0), 8, cb), "tsu_try_get");
  EXPECT_NOT_INIT(tsu_try_copy(tsu_gaddr(0, 0, 8), tsu_gaddr(0, 0, 0), 8, cb), "tsu_try_copy");
  uint64_t one = 1, res = 0;
  EXPECT_NOT_INIT(tsu_try_atomic(tsu_gaddr(0, 0, 0), TSU_AOP_FETCH_ADD, TSU_TYPE_UINT64, &one,
                                 nullptr, &res, cb),
                  "tsu_try_atomic");
  EXPECT_NOT_INIT(tsu_fence(), "tsu_fence");
  EXPECT_NOT_INIT(tsu_quiet(), "tsu_quiet");
  EXPECT_NOT_INIT(tsu_stats_print(), "tsu_stats_print");
  EXPECT_NOT_INIT(tsu_finalize(), "tsu_finalize");
  tsu_counter_t c;
  tsu_counter_init(&c);
  EXPECT_NOT_INIT(tsu_counter_wait(&c, 1), "tsu_counter_wait");
  EXPECT_EQ(tsu_counter_wait(&c, 0), TSU_OK);  // nothing to wait for
  EXPECT_EQ(g_calls.load(), 0) << "a callback ran for a refused request";
  EXPECT_EQ(res, 0u);
  // Pure helpers work at any time.
  EXPECT_STREQ(tsu_version(), "0.1.0");
  EXPECT_STREQ(tsu_strerror(TSU_ERR_NOT_INITIALIZED), "tsunagi is not initialized");
  EXPECT_EQ(tsu_counter_value(&c), 0u);
  EXPECT_EQ(tsu_initialized(), 0);
}

TEST(Lifecycle, BeforeInit) { expect_everything_refused(); }

TEST(Lifecycle, InvalidConfigurationsAreRefused) {
  auto refused = [](tsu_config_t cfg, const char* what) {
    EXPECT_EQ(tsu_init(&cfg), TSU_ERR_CONFIG) << what;
    EXPECT_TRUE(names("tsu_init")) << what << ": '" << tsu_last_error() << "'";
    EXPECT_EQ(tsu_initialized(), 0) << what;
  };
  tsu_config_t base;
  std::memset(&base, 0, sizeof base);
  base.struct_size = sizeof base;
  tsu_config_t c = base;
  c.struct_size = 0;
  c.field_mask = TSU_CONFIG_RING_SIZE;
  c.ring_size = 8;
  refused(c, "struct_size 0");
  c = base;
  c.field_mask = 1u << 20;
  refused(c, "unknown field bit");
  c = base;
  c.field_mask = TSU_CONFIG_RING_SIZE;
  c.ring_size = 3;
  refused(c, "ring size 3");
  c.ring_size = 1;
  refused(c, "ring size 1");
  c = base;
  c.field_mask = TSU_CONFIG_SEGMENT_SIZE;
  c.segment_size = 100;
  refused(c, "segment size 100");
  c = base;
  c.field_mask = TSU_CONFIG_PROGRESS_MODE;
  c.progress_mode = 7;
  refused(c, "progress mode 7");
  c = base;
  c.field_mask = TSU_CONFIG_LOG_LEVEL;
  c.log_level = 9;
  refused(c, "log level 9");
  // A network transport this build does not have (refused before any rank
  // talks to the bootstrap, so every rank can be refused alone).
  ASSERT_EQ(setenv("TSU_NET", "carrier-pigeon", 1), 0);
  refused(base, "TSU_NET=carrier-pigeon");
  EXPECT_NE(std::string(tsu_last_error()).find("udp"), std::string::npos)
      << "the message lists the transports built in: " << tsu_last_error();
  unsetenv("TSU_NET");
  expect_everything_refused();
}

TEST(Lifecycle, InitTwice) {
  // The config overrides the environment (TSU_SEGMENT_SIZE=1M in the tests).
  tsu_config_t cfg;
  std::memset(&cfg, 0, sizeof cfg);
  cfg.struct_size = sizeof cfg;
  cfg.field_mask = TSU_CONFIG_SEGMENT_SIZE;
  cfg.segment_size = 2u << 20;
  ASSERT_EQ(tsu_init(&cfg), TSU_OK) << tsu_last_error();
  EXPECT_EQ(tsu_initialized(), 1);
  EXPECT_EQ(tsu_init(nullptr), TSU_ERR_ALREADY_INITIALIZED);
  EXPECT_TRUE(names("tsu_init")) << tsu_last_error();
  EXPECT_EQ(tsu_init(&cfg), TSU_ERR_ALREADY_INITIALIZED);
  EXPECT_EQ(tsu_initialized(), 1);
  uint32_t me = 99, n = 0;
  ASSERT_EQ(tsu_rank(&me), TSU_OK);
  ASSERT_EQ(tsu_size(&n), TSU_OK);
  EXPECT_LT(me, n);
  void* base = nullptr;
  std::size_t size = 0;
  ASSERT_EQ(tsu_segment_info(TSU_SEG_MAIN, &base, &size), TSU_OK);
  EXPECT_EQ(size, std::size_t{2} << 20);
  // Still fully working after the refused second init.
  auto* mem = static_cast<uint8_t*>(base);
  std::memset(mem, static_cast<int>(me + 1), 64);
  ASSERT_EQ(tsu_barrier(), TSU_OK);
  tsu_counter_t c;
  tsu_counter_init(&c);
  const uint32_t next = (me + 1) % n;
  tsu_status_t st;
  while ((st = tsu_try_get(tsu_laddr(0, 128), tsu_gaddr(next, 0, 0), 64, tsu_counter_cb(&c))) == TSU_EAGAIN)
    tsu_progress();
  ASSERT_EQ(st, TSU_OK);
  EXPECT_EQ(tsu_counter_wait(&c, 1), TSU_OK);
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(mem[128 + i], next + 1);
  }
  ASSERT_EQ(tsu_barrier(), TSU_OK);
}

TEST(Lifecycle, AfterFinalize) {
  ASSERT_EQ(tsu_finalize(), TSU_OK) << tsu_last_error();
  expect_everything_refused();
}

// A singleton may start again; a rank of a launched job may not (its
// bootstrap session has ended) and is told so instead of hanging.
TEST(Lifecycle, InitAgainAfterFinalize) {
  const char* boot = std::getenv("TSU_BOOTSTRAP");
  const char* pmix = std::getenv("PMIX_NAMESPACE");  // srun --mpi=pmix, mpirun
  if ((boot && *boot) || (pmix && *pmix)) {
    EXPECT_EQ(tsu_init(nullptr), TSU_ERR_UNSUPPORTED);
    EXPECT_TRUE(std::string(tsu_last_error()).find("tsu_init") != std::string::npos);
    EXPECT_EQ(tsu_initialized(), 0);
  } else {
    ASSERT_EQ(tsu_init(nullptr), TSU_OK) << tsu_last_error();
    uint32_t size = 0;
    EXPECT_EQ(tsu_size(&size), TSU_OK);
    EXPECT_EQ(size, 1u);
    EXPECT_EQ(tsu_finalize(), TSU_OK);
  }
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  GTEST_FLAG_SET(shuffle, false);
  const int failed = RUN_ALL_TESTS();
  // Never leave the job hanging if a test stopped between init and finalize.
  if (tsu_initialized()) tsu_finalize();
  return failed ? 1 : 0;
}
