// The bootstrap's pure helpers: whose key is it (PMIx stores values per
// process), the launcher's layout from TSU_PLACEMENT, and the choice of
// bootstrap from the environment (a PMIx launcher without a server fails
// with a reason, never runs the rank as a singleton).
#include <gtest/gtest.h>

#include <cstdlib>

#include "bootstrap/bootstrap.hpp"

namespace {

using tsu::bootstrap::Bootstrap;
using tsu::bootstrap::key_owner;

struct ScopedEnv {
  const char* name;
  ScopedEnv(const char* n, const char* v) : name(n) { setenv(n, v, 1); }
  ~ScopedEnv() { unsetenv(name); }
};

TEST(BootstrapKeys, OwnerIsTheRankSuffix) {
  EXPECT_EQ(key_owner("tsu.rank.3"), 3u);
  EXPECT_EQ(key_owner("tsu.udp.4095"), 4095u);
  EXPECT_EQ(key_owner("tsu.secret.0"), 0u);
  EXPECT_FALSE(key_owner("tsu.rank."));
  EXPECT_FALSE(key_owner("tsu.rank.x"));
  EXPECT_FALSE(key_owner("tsu.rank.-1"));
  EXPECT_FALSE(key_owner("norank"));
  EXPECT_FALSE(key_owner("tsu.rank.99999999999"));
}

TEST(BootstrapPlacement, BlockAndCyclic) {
  std::vector<uint32_t> node_of;
  {
    ScopedEnv e("TSU_PLACEMENT", "block:4");
    ASSERT_TRUE(Bootstrap::placement_from_environment(10, node_of));
    EXPECT_EQ(node_of, (std::vector<uint32_t>{0, 0, 0, 0, 1, 1, 1, 1, 2, 2}));
  }
  {
    ScopedEnv e("TSU_PLACEMENT", "cyclic:3");
    ASSERT_TRUE(Bootstrap::placement_from_environment(5, node_of));
    EXPECT_EQ(node_of, (std::vector<uint32_t>{0, 1, 2, 0, 1}));
  }
  {
    ScopedEnv e("TSU_PLACEMENT", "cyclic:8");  // more hosts than ranks
    ASSERT_TRUE(Bootstrap::placement_from_environment(3, node_of));
    EXPECT_EQ(node_of, (std::vector<uint32_t>{0, 1, 2}));
  }
  for (const char* bad : {"block:0", "block:", "block:x", "spread:2", "cyclic:-1"}) {
    ScopedEnv e("TSU_PLACEMENT", bad);
    EXPECT_FALSE(Bootstrap::placement_from_environment(4, node_of)) << bad;
  }
  EXPECT_FALSE(Bootstrap::placement_from_environment(4, node_of));  // unset
}

TEST(BootstrapChoice, PmixWithoutAServerFailsWithAReason) {
  ScopedEnv ns("PMIX_NAMESPACE", "no-such-job");
  ScopedEnv rank("PMIX_RANK", "0");
  EXPECT_TRUE(tsu::bootstrap::started_by_launcher());
  tsu_status_t st = TSU_OK;
  std::string error;
  auto b = tsu::bootstrap::make_from_environment(st, error);
  EXPECT_EQ(b, nullptr);
  EXPECT_NE(st, TSU_OK);
  EXPECT_NE(error.find("PMIx"), std::string::npos) << error;
}

TEST(BootstrapChoice, ForcedPmixWithoutALauncherIsAConfigError) {
  ScopedEnv boot("TSU_BOOTSTRAP", "pmix");
  tsu_status_t st = TSU_OK;
  std::string error;
  EXPECT_EQ(tsu::bootstrap::make_from_environment(st, error), nullptr);
  EXPECT_EQ(st, TSU_ERR_CONFIG);
  EXPECT_NE(error.find("TSU_BOOTSTRAP=pmix"), std::string::npos) << error;
}

}  // namespace
