// Shared main of the multi-rank GoogleTest programs: every rank initializes
// tsunagi, runs all tests (they synchronize with tsu_barrier) and finalizes.
// The exit status is non-zero if any test of this rank failed.
#include <gtest/gtest.h>

#include <cstdio>

#include "tsunagi/tsunagi.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // Tests are collective: every rank must run the same ones in the same order.
  GTEST_FLAG_SET(shuffle, false);
  const tsu_status_t st = tsu_init(nullptr);
  if (st != TSU_OK) {
    std::fprintf(stderr, "tsu_init failed: %s (%s)\n", tsu_strerror(st), tsu_last_error());
    return 2;
  }
  const int failed = RUN_ALL_TESTS();
  const tsu_status_t fst = tsu_finalize();
  if (fst != TSU_OK) {
    std::fprintf(stderr, "tsu_finalize failed: %s (%s)\n", tsu_strerror(fst), tsu_last_error());
    return 3;
  }
  return failed ? 1 : 0;
}
