// Oversubscription probe (not part of the build).
//   ring  N ROUNDS: N ULTs pass a token round a ring, each waiting for it
//                   with tsu_ult_yield (one ULT per worker: set TSU_ULT_WORKERS=N)
//   am    ROUNDS [yield|progress]: (2 ranks) a ULT on rank 0 sends a short AM to
//                   rank 1 and waits for the answer by yielding (or polling
//                   tsu_progress); rank 1's ULT waits for the request the same way.
// Prints per-round median, mean, p99 (us) and total seconds.
#include <tsunagi/tsunagi.h>
#include <tsunagi/ult.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

using clk = std::chrono::steady_clock;
static std::atomic<int> token{0};
static int n_ult = 4, rounds = 1000;
static std::vector<double> lat;
static bool use_progress = false;

static void wait_until(const std::atomic<int>& v, int want) {
  while (v.load(std::memory_order_acquire) != want) {
    if (use_progress) tsu_progress(); else tsu_ult_yield();
  }
}

static void* ring_member(void* a) {
  const int me = (int)(intptr_t)a;
  auto last = clk::now();
  for (int r = 0; r < rounds; ++r) {
    wait_until(token, me);
    if (me == 0) {
      auto now = clk::now();
      if (r) lat.push_back(std::chrono::duration<double, std::micro>(now - last).count());
      last = now;
    }
    token.store((me + 1) % n_ult, std::memory_order_release);
  }
  return nullptr;
}

static std::atomic<int> got{0};
static uint32_t my_rank = 0;
static void on_msg(tsu_am_token_t*, const uint64_t* args, uint32_t, void*, size_t, void*) {
  got.store((int)args[0], std::memory_order_release);
}
static void send(uint32_t dst, int v) {
  uint64_t a = (uint64_t)v;
  while (tsu_try_am_short(dst, 7, &a, 1, tsu_cb_none()) == TSU_EAGAIN) tsu_ult_yield();
}
static void* am_member(void*) {
  for (int r = 1; r <= rounds; ++r) {
    auto t0 = clk::now();
    if (my_rank == 0) {
      send(1, r);
      wait_until(got, r);
    } else {
      wait_until(got, r);
      send(0, r);
    }
    lat.push_back(std::chrono::duration<double, std::micro>(clk::now() - t0).count());
  }
  return nullptr;
}

static void report(const char* what, double secs) {
  std::sort(lat.begin(), lat.end());
  double sum = 0;
  for (double x : lat) sum += x;
  const size_t n = lat.size();
  std::printf("%s rank %u: rounds %zu median %.2f us mean %.2f us p99 %.2f us total %.3f s\n", what,
              my_rank, n, lat[n / 2], sum / n, lat[std::min(n - 1, n * 99 / 100)], secs);
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "ring";
  if (!std::strcmp(mode, "ring")) {
    n_ult = argc > 2 ? std::atoi(argv[2]) : 4;
    rounds = argc > 3 ? std::atoi(argv[3]) : 1000;
    use_progress = argc > 4 && !std::strcmp(argv[4], "progress");
    bool with_tsu = std::getenv("TSU_RANK") != nullptr;
    if (with_tsu && tsu_init(nullptr) != TSU_OK) return 1;
    if (with_tsu) tsu_rank(&my_rank);
    if (tsu_ult_init(nullptr) != TSU_OK) return 1;
    std::printf("workers %u\n", tsu_ult_workers());
    std::vector<tsu_ult_t> h(n_ult);
    auto t0 = clk::now();
    for (int i = 0; i < n_ult; ++i) tsu_ult_create(&h[i], nullptr, ring_member, (void*)(intptr_t)i);
    for (auto& x : h) tsu_ult_join(x, nullptr);
    report("ring", std::chrono::duration<double>(clk::now() - t0).count());
    tsu_ult_finalize();
    if (with_tsu) tsu_finalize();
    return 0;
  }
  rounds = argc > 2 ? std::atoi(argv[2]) : 1000;
  use_progress = argc > 3 && !std::strcmp(argv[3], "progress");
  if (tsu_init(nullptr) != TSU_OK) return 1;
  tsu_rank(&my_rank);
  tsu_am_register(7, on_msg, nullptr);
  if (tsu_ult_init(nullptr) != TSU_OK) return 1;
  if (my_rank == 0) std::printf("workers %u\n", tsu_ult_workers());
  auto t0 = clk::now();
  tsu_ult_t h;
  tsu_ult_create(&h, nullptr, am_member, nullptr);
  tsu_ult_join(h, nullptr);
  report("am", std::chrono::duration<double>(clk::now() - t0).count());
  tsu_ult_finalize();
  tsu_finalize();
  return 0;
}
