// CHECK for the multi-rank ULT test programs: reports a failed condition
// with the rank, the place and tsunagi's last error, counts it, and goes on
// (the program exits non-zero at the end when anything failed).
#pragma once

#include <tsunagi/tsunagi.h>

#include <cstdint>
#include <cstdio>

namespace ult_test {
inline uint32_t g_rank = 0;  // set by the program after tsu_init
inline int g_failed = 0;
}  // namespace ult_test

#define CHECK(cond)                                                                       \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      std::fprintf(stderr, "rank %u: %s:%d: %s failed (%s)\n", ult_test::g_rank, __FILE__, \
                   __LINE__, #cond, tsu_last_error());                                    \
      ++ult_test::g_failed;                                                               \
    }                                                                                     \
  } while (0)
