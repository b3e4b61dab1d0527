#include "core/config.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

namespace {

using namespace tsu::core;

struct FakeEnv {
  std::map<std::string, std::string> vars;
  GetEnv fn() const {
    return [this](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

TEST(Config, ParseSize) {
  std::size_t v = 0;
  EXPECT_TRUE(parse_size("4096", v));
  EXPECT_EQ(v, 4096u);
  EXPECT_TRUE(parse_size("64K", v));
  EXPECT_EQ(v, 64u << 10);
  EXPECT_TRUE(parse_size("16M", v));
  EXPECT_EQ(v, 16u << 20);
  EXPECT_TRUE(parse_size("2GiB", v));
  EXPECT_EQ(v, std::size_t{2} << 30);
  EXPECT_TRUE(parse_size("1mb", v));
  EXPECT_EQ(v, 1u << 20);
  for (const char* bad : {"", "-1", "12Q", "M", "1MiBx", "99999999999999999999", "17179869184G"})
    EXPECT_FALSE(parse_size(bad, v)) << bad;
}

TEST(Config, ParseBoolAndLevel) {
  bool b = false;
  EXPECT_TRUE(parse_bool("yes", b));
  EXPECT_TRUE(b);
  EXPECT_TRUE(parse_bool("OFF", b));
  EXPECT_FALSE(b);
  EXPECT_FALSE(parse_bool("2", b));
  int level = -1;
  EXPECT_TRUE(parse_log_level("debug", level));
  EXPECT_EQ(level, TSU_LOG_DEBUG);
  EXPECT_TRUE(parse_log_level("0", level));
  EXPECT_EQ(level, TSU_LOG_OFF);
  EXPECT_FALSE(parse_log_level("loud", level));
}

TEST(Config, DefaultsWithoutEnvironment) {
  Config cfg;
  std::string error;
  FakeEnv env;
  ASSERT_EQ(config_from_env(cfg, env.fn(), error), TSU_OK);
  EXPECT_EQ(cfg.segment_size, 64u << 20);
  EXPECT_EQ(cfg.ring_size, 1024u);
  EXPECT_TRUE(cfg.bypass);
  EXPECT_EQ(cfg.progress_mode, TSU_PROGRESS_THREAD);
}

TEST(Config, EnvironmentOverridesDefaults) {
  Config cfg;
  std::string error;
  FakeEnv env{{{"TSU_SEGMENT_SIZE", "8M"}, {"TSU_RING_SIZE", "16"}, {"TSU_PROGRESS", "manual"},
               {"TSU_BYPASS", "0"}, {"TSU_SPIN_US", "5"}, {"TSU_LOG", "info"},
               {"TSU_STATS", "1"}, {"TSU_NODE_ID", "n7"}}};
  ASSERT_EQ(config_from_env(cfg, env.fn(), error), TSU_OK) << error;
  EXPECT_EQ(cfg.segment_size, 8u << 20);
  EXPECT_EQ(cfg.ring_size, 16u);
  EXPECT_EQ(cfg.progress_mode, TSU_PROGRESS_MANUAL);
  EXPECT_FALSE(cfg.bypass);
  EXPECT_EQ(cfg.spin_us, 5u);
  EXPECT_EQ(cfg.log_level, TSU_LOG_INFO);
  EXPECT_TRUE(cfg.stats);
  EXPECT_EQ(cfg.node_id, "n7");
}

TEST(Config, YieldIsOnOffOrAuto) {
  const std::pair<const char*, int> cases[] = {{"1", 1}, {"0", 0}, {"auto", -1}, {"AUTO", -1}};
  for (const auto& [value, expected] : cases) {
    Config cfg;
    cfg.yield_idle = 5;  // overwritten by every valid value
    std::string error;
    FakeEnv env{{{"TSU_YIELD", value}}};
    ASSERT_EQ(config_from_env(cfg, env.fn(), error), TSU_OK) << error;
    EXPECT_EQ(cfg.yield_idle, expected) << value;
  }
  EXPECT_EQ(Config{}.yield_idle, -1) << "auto by default";
}

// TSU_SPIN_US: microseconds, or auto (the runtime picks 100 or 20 by the
// node's CPUs per rank; Runtime::connect_peers).
TEST(Config, SpinIsMicrosecondsOrAuto) {
  const std::pair<const char*, uint32_t> cases[] = {
      {"0", 0}, {"250", 250}, {"10000000", 10'000'000}, {"auto", Config::kSpinAuto}, {"Auto", Config::kSpinAuto}};
  for (const auto& [value, expected] : cases) {
    Config cfg;
    cfg.spin_us = 7;  // overwritten by every valid value
    std::string error;
    FakeEnv env{{{"TSU_SPIN_US", value}}};
    ASSERT_EQ(config_from_env(cfg, env.fn(), error), TSU_OK) << error;
    EXPECT_EQ(cfg.spin_us, expected) << value;
  }
  for (const char* bad : {"10000001", "-1", "fast", ""}) {
    Config cfg;
    std::string error;
    FakeEnv env{{{"TSU_SPIN_US", bad}}};
    EXPECT_EQ(config_from_env(cfg, env.fn(), error), TSU_ERR_CONFIG) << bad;
    EXPECT_NE(error.find("TSU_SPIN_US"), std::string::npos) << error;
  }
  EXPECT_EQ(Config{}.spin_us, Config::kSpinAuto) << "auto by default";
  Config cfg;
  std::string error;
  tsu_config_t user{};
  user.struct_size = sizeof user;
  user.field_mask = TSU_CONFIG_SPIN_US;
  user.spin_us = 10'000'001;
  EXPECT_EQ(config_apply_user(cfg, &user, error), TSU_ERR_CONFIG);
  user.spin_us = 40;
  ASSERT_EQ(config_apply_user(cfg, &user, error), TSU_OK) << error;
  EXPECT_EQ(cfg.spin_us, 40u);
}

TEST(Config, BadEnvironmentValuesNameTheVariable) {
  const std::pair<const char*, const char*> cases[] = {
      {"TSU_SEGMENT_SIZE", "12"},  {"TSU_SEGMENT_SIZE", "lots"}, {"TSU_RING_SIZE", "1000"},
      {"TSU_RING_SIZE", "1"},      {"TSU_PROGRESS", "auto"},     {"TSU_BYPASS", "maybe"},
      {"TSU_SPIN_US", "-3"},       {"TSU_LOG", "verbose"},       {"TSU_STATS", "2"},
      {"TSU_NODE_ID", ""},         {"TSU_YIELD", "sometimes"}};
  for (const auto& [var, value] : cases) {
    Config cfg;
    std::string error;
    FakeEnv env{{{var, value}}};
    EXPECT_EQ(config_from_env(cfg, env.fn(), error), TSU_ERR_CONFIG) << var << "=" << value;
    EXPECT_NE(error.find(var), std::string::npos) << error;
  }
}

TEST(Config, CollectiveAlgorithmThresholds) {
  Config cfg;
  std::string error;
  FakeEnv env{{{"TSU_COLL_LARGE_MIN", "1M"}}};
  ASSERT_EQ(config_from_env(cfg, env.fn(), error), TSU_OK) << error;
  EXPECT_EQ(cfg.coll_large_min, 1u << 20);
  for (const auto& [var, value] : {std::pair{"TSU_COLL_LARGE_MIN", "big"},
                                   std::pair{"TSU_COLL_LARGE_MIN", "-1"}}) {
    Config bad;
    FakeEnv e{{{var, value}}};
    EXPECT_EQ(config_from_env(bad, e.fn(), error), TSU_ERR_CONFIG) << var << "=" << value;
    EXPECT_NE(error.find(var), std::string::npos) << error;
  }
}

TEST(Config, UserStructWinsForSelectedFieldsOnly) {
  Config cfg;
  cfg.bypass = true;
  cfg.ring_size = 64;
  tsu_config_t user{};
  user.struct_size = sizeof user;
  user.field_mask = TSU_CONFIG_BYPASS;
  user.bypass = 0;
  user.ring_size = 3;  // not selected: ignored
  std::string error;
  ASSERT_EQ(config_apply_user(cfg, &user, error), TSU_OK) << error;
  EXPECT_FALSE(cfg.bypass);
  EXPECT_EQ(cfg.ring_size, 64u);
}

TEST(Config, UserStructValidation) {
  std::string error;
  Config cfg;
  tsu_config_t user{};
  user.struct_size = 4;
  EXPECT_EQ(config_apply_user(cfg, &user, error), TSU_ERR_CONFIG);
  user.struct_size = sizeof user;
  user.field_mask = TSU_CONFIG_RING_SIZE;
  user.ring_size = 100;
  EXPECT_EQ(config_apply_user(cfg, &user, error), TSU_ERR_CONFIG);
  user.field_mask = 1u << 30;
  EXPECT_EQ(config_apply_user(cfg, &user, error), TSU_ERR_CONFIG);
  user.field_mask = TSU_CONFIG_PROGRESS_MODE;
  user.progress_mode = 7;
  EXPECT_EQ(config_apply_user(cfg, &user, error), TSU_ERR_CONFIG);
  EXPECT_EQ(config_apply_user(cfg, nullptr, error), TSU_OK);
}

TEST(Config, EveryVariableIsDescribed) {
  const auto& rows = config_settings().rows;
  const auto desc = config_settings().describe(Config{});
  ASSERT_EQ(desc.size(), rows.size());
  std::set<std::string> names;
  for (std::size_t i = 0; i < desc.size(); ++i) {
    EXPECT_EQ(desc[i].env, rows[i].env);
    EXPECT_TRUE(names.insert(desc[i].env).second) << desc[i].env << " appears twice";
    EXPECT_EQ(desc[i].env.rfind("TSU_", 0), 0u) << desc[i].env;
    EXPECT_GT(desc[i].help.size(), 10u) << desc[i].env;
    EXPECT_FALSE(desc[i].value.empty()) << desc[i].env;
  }
}

// The table's default text is what the library uses (it is parsed at init),
// and the struct's initializers, which code constructing a Config directly
// relies on, agree with it.
TEST(Config, DocumentedDefaultsAreTheBuiltInOnes) {
  Config from_table;
  from_table.segment_size = 1;  // overwritten by the table's default
  std::string error;
  ASSERT_EQ(config_from_env(from_table, FakeEnv{}.fn(), error), TSU_OK) << error;
  const auto expected = config_settings().describe(Config{});
  const auto actual = config_settings().describe(from_table);
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) {
    EXPECT_EQ(actual[i].value, expected[i].value)
        << actual[i].env << ": documented default " << actual[i].default_text
        << ", struct initializer " << expected[i].value;
    if (actual[i].default_text[0] != '(') {
      EXPECT_EQ(actual[i].value, actual[i].default_text == "auto" ? "auto" : actual[i].value);
      // Setting a variable to its documented default changes nothing.
      FakeEnv env;
      env.vars[actual[i].env] = actual[i].default_text;
      Config cfg;
      ASSERT_EQ(config_from_env(cfg, env.fn(), error), TSU_OK) << actual[i].env << ": " << error;
      EXPECT_EQ(config_settings().describe(cfg)[i].value, actual[i].value) << actual[i].env;
    }
  }
}

TEST(Config, UnknownNetworkTransportIsRefusedAtInit) {
  // Parsing accepts any short name (the registry is above core); tsu_init
  // refuses a name no transport has (tests/runtime lifecycle).
  Config cfg;
  std::string error;
  FakeEnv env{{{"TSU_NET", "carrier-pigeon"}}};
  ASSERT_EQ(config_from_env(cfg, env.fn(), error), TSU_OK) << error;
  EXPECT_EQ(cfg.net, "carrier-pigeon");
  FakeEnv empty{{{"TSU_NET", ""}}};
  EXPECT_EQ(config_from_env(cfg, empty.fn(), error), TSU_ERR_CONFIG);
  EXPECT_NE(error.find("TSU_NET"), std::string::npos) << error;
}

}  // namespace
