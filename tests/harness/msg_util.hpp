// Helpers for the messaging rank tests: the multi-rank test helpers
// (bounded waits that drive progress, issue-with-retry, rank/size, patterns)
// plus a progress-driving barrier.
#pragma once

#include "mp_util.hpp"

namespace mp {
// A barrier that drives progress while it waits (manual mode: peers may need
// this rank's progress to reach it).  tsu_am_register is collective and
// progress-driving; the highest id is reserved for this in the tests.
inline void sync() {
  ASSERT_EQ(tsu_am_register(TSU_AM_MAX_HANDLER, nullptr, nullptr), TSU_OK) << tsu_last_error();
}
}  // namespace mp
