// The bootstrap's environment, in two tables (tsu-info prints both;
// docs/launchers.md lists them):
//  * user_settings(): what a user may set to choose or steer the bootstrap;
//  * launcher_variables(): what a launcher (tsurun, or a custom one) sets
//    for each rank.  Not for users: tsurun replaces them.
// The variables are read where they are used (make_from_environment.cpp,
// local/, pmix/); these tables are their one list, with default and help.
// TSU_NODE_ID and TSU_STATS, which the bootstrap also reads, are core
// settings (core/config.cpp).
#pragma once

#include <span>

namespace tsu::bootstrap {

struct EnvironmentVariable {
  const char* env;
  const char* default_text;  // in parentheses: what happens when unset
  const char* help;
};

std::span<const EnvironmentVariable> user_settings();
std::span<const EnvironmentVariable> launcher_variables();

}  // namespace tsu::bootstrap
