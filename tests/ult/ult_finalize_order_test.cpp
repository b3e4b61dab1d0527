// tsu_finalize before tsu_ult_finalize (the wrong order, issue 43): with
// threads spawned to other ranks, some still running, tsu_finalize returns,
// a join of a thread elsewhere ends (its value, or TSU_ERR_NOT_INITIALIZED),
// tsu_ult_finalize says TSU_ERR_NOT_INITIALIZED as ult.h documents and stops
// the scheduler; nothing hangs or crashes, on any number of ranks.  Also the
// finalize hooks' own contract (tsu_add_finalize_hook).
#include <tsunagi/tsunagi.h>
#include <tsunagi/ult.h>

#include "rank_check.hpp"

#include <atomic>
#include <cstdio>
#include <cstring>

namespace {

using ult_test::g_failed;
using ult_test::g_rank;
uint32_t g_size = 1;

enum : uint32_t { kQuick = 1, kSlow = 2 };

void quick(const void*, size_t, void* value, size_t* vlen) {
  std::memcpy(value, &g_rank, sizeof g_rank);
  *vlen = sizeof g_rank;
}

// Yields a while: still running on its rank when tsu_finalize starts.
void slow(const void*, size_t, void* value, size_t* vlen) {
  for (int i = 0; i < 20000; ++i) tsu_ult_yield();
  std::memcpy(value, &g_rank, sizeof g_rank);
  *vlen = sizeof g_rank;
}

std::atomic<int> g_hook_calls{0};
int g_hook_order[4];
void hook(void* ctx) {
  const int i = g_hook_calls.fetch_add(1);
  if (i < 4) g_hook_order[i] = static_cast<int>(reinterpret_cast<intptr_t>(ctx));
}

}  // namespace

int main() {
  if (tsu_init(nullptr) != TSU_OK) return 1;
  tsu_rank(&g_rank);
  tsu_size(&g_size);
  CHECK(tsu_add_finalize_hook(nullptr, nullptr) == TSU_ERR_NULL_POINTER);
  CHECK(tsu_add_finalize_hook(hook, reinterpret_cast<void*>(1)) == TSU_OK);
  CHECK(tsu_add_finalize_hook(hook, reinterpret_cast<void*>(2)) == TSU_OK);
  CHECK(tsu_add_finalize_hook(hook, reinterpret_cast<void*>(3)) == TSU_OK);
  CHECK(tsu_remove_finalize_hook(hook, reinterpret_cast<void*>(2)) == TSU_OK);
  CHECK(tsu_remove_finalize_hook(hook, reinterpret_cast<void*>(2)) == TSU_ERR_INVALID_ARG);

  if (tsu_ult_init(nullptr) != TSU_OK) return 1;
  CHECK(tsu_ult_register(kQuick, quick) == TSU_OK);
  CHECK(tsu_ult_register(kSlow, slow) == TSU_OK);
  const uint32_t next = (g_rank + 1) % g_size;
  // One spawned elsewhere and joined, one detached, one still running.
  tsu_ult_t done, running;
  CHECK(tsu_ult_spawn(&done, next, kQuick, nullptr, 0, nullptr) == TSU_OK);
  uint32_t where = UINT32_MAX;
  CHECK(tsu_ult_join_value(done, &where, sizeof where, nullptr) == TSU_OK);
  CHECK(where == next);
  tsu_ult_attr_t attr{};
  attr.struct_size = sizeof attr;
  attr.field_mask = TSU_ULT_ATTR_DETACHED;
  attr.detached = 1;
  CHECK(tsu_ult_spawn(nullptr, next, kQuick, nullptr, 0, &attr) == TSU_OK);
  CHECK(tsu_ult_spawn(&running, next, kSlow, nullptr, 0, nullptr) == TSU_OK);

  CHECK(tsu_finalize() == TSU_OK);
  CHECK(g_hook_calls.load() == 2 && g_hook_order[0] == 3 && g_hook_order[1] == 1);
  CHECK(tsu_add_finalize_hook(hook, nullptr) == TSU_ERR_NOT_INITIALIZED);
  where = UINT32_MAX;
  const tsu_status_t st = tsu_ult_join_value(running, &where, sizeof where, nullptr);
  CHECK(st == TSU_OK || st == TSU_ERR_NOT_INITIALIZED);
  if (st == TSU_OK) CHECK(where == next);
  tsu_ult_t late;
  CHECK(tsu_ult_spawn(&late, next, kQuick, nullptr, 0, nullptr) == TSU_ERR_NOT_INITIALIZED);

  CHECK(tsu_ult_finalize() == TSU_ERR_NOT_INITIALIZED);
  CHECK(tsu_ult_workers() == 0);  // stopped
  CHECK(tsu_ult_finalize() == TSU_ERR_NOT_INITIALIZED);
  std::printf("rank %u: %s\n", g_rank, g_failed ? "FAIL" : "PASS");
  return g_failed ? 1 : 0;
}
