// Waits inside ULTs are woken by their completion, not resumed to poll
// (tsu_set_park_hook).  One rank; run with a progress thread and with manual
// progress.  Checks behaviour only (counts, no timings):
//  1. 16 ULTs on one worker wait on counters that a plain pthread completes
//     later: while they wait, the worker makes no context switch at all (a
//     polling waiter is resumed again and again), and completing them costs
//     two switches per waiter (resume, end), plus two in manual progress.
//  2. The wake-before-park race: 8 ULTs on 2 workers wait for each of 20000
//     successive counts of one counter that a pthread bumps as fast as it
//     can; a lost wake-up hangs the test (tsurun's timeout fails it).
//  3. Real requests: ULTs put to this rank and wait on a counter, and issue
//     _nbi puts and tsu_quiet, many times over (completions from the
//     progress thread or from the worker's own progress passes).
//  4. A plain pthread (no hooks) still waits on a counter and in tsu_quiet.
//  5. As 1, for the C++ header's futures: 16 ULTs wait on tagged receives
//     (future::get) that the main pthread satisfies one by one.
//  6. Ordered requests (tsu_req_wait) from ULTs on one worker: chains of
//     copies, each following the last, waited for with tsu_req_wait (handles
//     belong to the worker's pthread, so a ULT that may be stolen by another
//     worker must not carry one across a switch); values checked.
#include <tsunagi/tsunagi.h>
#include <tsunagi/tsunagi.hpp>
#include <tsunagi/ult.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

namespace {

std::atomic<uint32_t> g_failures{0};

void fail(const char* what) {
  std::fprintf(stderr, "FAIL: %s (%s)\n", what, tsu_last_error());
  g_failures.fetch_add(1);
}

uint64_t switches() {
  tsu_ult_counters_t c{};
  tsu_ult_counters(&c);
  return c.switches;
}

void complete(tsu_counter_t* c) {
  const tsu_cb_t cb = tsu_counter_cb(c);
  cb.fn(TSU_OK, cb.arg);
}

// ---- 1. parked waiters are not resumed to poll -----------------------------------
constexpr uint32_t kParked = 16;
tsu_counter_t g_parked[kParked];
std::atomic<uint32_t> g_arrived{0};
std::atomic<uint32_t> g_left{0};

void* parked_waiter(void* a) {
  auto* c = static_cast<tsu_counter_t*>(a);
  g_arrived.fetch_add(1);
  if (tsu_counter_wait(c, 1) != TSU_OK) fail("parked wait");
  g_left.fetch_add(1);
  return nullptr;
}

// The worker's switch count once it stops moving (every waiter parked);
// fails when it keeps moving for 10 s (waiters resumed to poll).
uint64_t settled_switches() {
  // Wait until the switch count stops moving: it does once every waiter is
  // parked; polling waiters keep it moving forever (then: fail after 10 s).
  uint64_t s0 = switches();
  bool still = false;
  for (int i = 0; i < 500 && !still; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const uint64_t s = switches();
    still = s == s0;
    s0 = s;
  }
  if (!still) fail("waiting threads keep being resumed (polling)");
  return s0;
}

// Completes the parked waiters one by one (complete_one(i)), each leaving
// before the next is completed; joins them and checks the switches used.
template <typename CompleteOne>
void release_parked(const char* what, std::vector<tsu_ult_t>& ts, std::atomic<uint32_t>& left,
                    CompleteOne&& complete_one) {
  const uint64_t s0 = settled_switches();
  const auto n = static_cast<uint32_t>(ts.size());
  for (uint32_t i = 0; i < n; ++i) {
    if (left.load() != i) fail("a waiter left before its wait completed");
    complete_one(i);
    while (left.load() < i + 1) std::this_thread::yield();
  }
  for (auto t : ts) tsu_ult_join(t, nullptr);
  const uint64_t used = switches() - s0;
  std::printf("%s: %u waiters, %llu switches from the last park to the last end\n", what, n,
              static_cast<unsigned long long>(used));
  // Two per waiter; in manual progress the last waiter polls in place
  // (it drives progress) until another thread is woken: two more at most.
  if (used > 2 * n + 2) fail("more than one resumption per waiter");
}

void test_not_polled() {
  std::vector<tsu_ult_t> ts(kParked);
  for (uint32_t i = 0; i < kParked; ++i) {
    tsu_counter_init(&g_parked[i]);
    if (tsu_ult_create(&ts[i], nullptr, parked_waiter, &g_parked[i]) != TSU_OK) fail("create");
  }
  while (g_arrived.load() < kParked) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  release_parked("parked counters", ts, g_left, [](uint32_t i) { complete(&g_parked[i]); });
}

// ---- 5. futures of the C++ header park too ---------------------------------------------
constexpr uint64_t kFutureTag = 1000;
uint32_t g_me = 0;
uint64_t g_future_buf[kParked];
std::atomic<uint32_t> g_future_arrived{0};
std::atomic<uint32_t> g_future_left{0};

void* future_waiter(void* a) {
  const auto i = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(a));
  auto f = tsu::recv(g_me, kFutureTag + i, &g_future_buf[i], sizeof(uint64_t));
  g_future_arrived.fetch_add(1);
  try {
    const tsu_msg_status_t ms = f.get();
    if (ms.length != sizeof(uint64_t) || g_future_buf[i] != 7 * i + 1) fail("future: wrong message");
  } catch (const tsu::error&) {
    fail("future get");
  }
  g_future_left.fetch_add(1);
  return nullptr;
}

void test_futures_parked() {
  std::vector<tsu_ult_t> ts(kParked);
  for (uint32_t i = 0; i < kParked; ++i)
    if (tsu_ult_create(&ts[i], nullptr, future_waiter, reinterpret_cast<void*>(uintptr_t{i})) !=
        TSU_OK)
      fail("create");
  while (g_future_arrived.load() < kParked)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  release_parked("parked futures", ts, g_future_left, [](uint32_t i) {
    const uint64_t v = 7 * uint64_t{i} + 1;
    if (tsu::send(g_me, kFutureTag + i, &v, sizeof v).wait() != TSU_OK) fail("send");
  });
}

// ---- 6. ordered requests waited for in ULTs ----------------------------------------------
constexpr uint32_t kChains = 8;
constexpr uint32_t kLinks = 500;

void* chain(void* a) {
  const auto i = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(a));
  // Each link copies the word the previous link wrote, one slot further.
  void* seg = nullptr;
  size_t seg_size = 0;
  if (tsu_segment_info(TSU_SEG_MAIN, &seg, &seg_size) != TSU_OK) {
    fail("tsu_segment_info");
    return nullptr;
  }
  auto* base = static_cast<uint64_t*>(seg);
  const uint64_t first = 16384 + 4096 * i;  // kLinks + 1 words per chain
  base[first / 8] = 1000 * i + 3;
  for (uint32_t round = 0; round < 4; ++round) {
    tsu_req_t prev = TSU_REQ_NONE, last = TSU_REQ_NONE;
    for (uint32_t k = 0; k < kLinks; ++k) {
      const uint64_t src = first + 8 * uint64_t{k}, dst = src + 8;
      tsu_status_t st;
      while ((st = tsu_try_copy_ordered(tsu_gaddr(g_me, TSU_SEG_MAIN, dst),
                                        tsu_gaddr(g_me, TSU_SEG_MAIN, src), 8, prev,
                                        tsu_cb_none(), &last)) == TSU_EAGAIN)
        tsu_ult_yield();
      if (st != TSU_OK) {
        fail("tsu_try_copy_ordered");
        return nullptr;
      }
      prev = last;
      if (k % 100 == 99 && tsu_req_wait(last) != TSU_OK) fail("tsu_req_wait (middle)");
    }
    if (tsu_req_wait(TSU_REQ_ALL) != TSU_OK) fail("tsu_req_wait");
    // The chain's first word gains one per round (below).
    if (base[first / 8 + kLinks] != 1000 * i + 3 + round) {
      std::fprintf(stderr, "chain %llu, round %u: %llu at its end, %llu at its start\n",
                   static_cast<unsigned long long>(i), round,
                   static_cast<unsigned long long>(base[first / 8 + kLinks]),
                   static_cast<unsigned long long>(base[first / 8]));
      fail("ordered chain: wrong value at its end");
    }
    base[first / 8] += 1;
    if (tsu_req_test(last) != TSU_OK) fail("tsu_req_test after the wait");
  }
  return nullptr;
}

void test_ordered() {
  std::vector<tsu_ult_t> ts(kChains);
  for (uint32_t i = 0; i < kChains; ++i)
    if (tsu_ult_create(&ts[i], nullptr, chain, reinterpret_cast<void*>(uintptr_t{i})) != TSU_OK)
      fail("create");
  for (auto t : ts) tsu_ult_join(t, nullptr);
}

// ---- 2. wake-before-park race --------------------------------------------------------
constexpr uint64_t kRaceCounts = 20000;
constexpr uint32_t kRacers = 8;
tsu_counter_t g_race;
std::atomic<uint32_t> g_racers_ready{0};

void* racer(void*) {
  g_racers_ready.fetch_add(1);
  for (uint64_t k = 1; k <= kRaceCounts; ++k) {
    if (tsu_counter_wait(&g_race, k) != TSU_OK) fail("race wait");
    if (tsu_counter_value(&g_race) < k) fail("race: returned early");
  }
  return nullptr;
}

void test_race() {
  tsu_counter_init(&g_race);
  std::vector<tsu_ult_t> ts(kRacers);
  for (auto& t : ts)
    if (tsu_ult_create(&t, nullptr, racer, nullptr) != TSU_OK) fail("create");
  while (g_racers_ready.load() < kRacers) std::this_thread::yield();
  for (uint64_t k = 0; k < kRaceCounts; ++k) {
    complete(&g_race);
    if (k % 64 == 0) std::this_thread::yield();
  }
  for (auto t : ts) tsu_ult_join(t, nullptr);
}

// ---- 3. real requests: counters and tsu_quiet --------------------------------------
constexpr uint32_t kPutters = 8;
constexpr uint32_t kPuts = 2000;

void* putter(void* a) {
  const auto i = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(a));
  const uint64_t src = 4096 + 64 * i, dst = 8192 + 64 * i;
  for (uint32_t r = 0; r < kPuts; ++r) {
    tsu_counter_t c;
    tsu_counter_init(&c);
    tsu_status_t st;
    while ((st = tsu_try_put(tsu_gaddr(0, TSU_SEG_MAIN, dst), tsu_laddr(TSU_SEG_MAIN, src), 8,
                             tsu_counter_cb(&c))) == TSU_EAGAIN)
      tsu_ult_yield();
    if (st != TSU_OK) {
      fail("tsu_try_put");
      return nullptr;
    }
    if (tsu_counter_wait(&c, 1) != TSU_OK) fail("put wait");
    if (r % 4 == 0) {
      while ((st = tsu_try_put_nbi(tsu_gaddr(0, TSU_SEG_MAIN, dst), tsu_laddr(TSU_SEG_MAIN, src),
                                   8)) == TSU_EAGAIN)
        tsu_ult_yield();
      if (st != TSU_OK) fail("tsu_try_put_nbi");
      if (tsu_quiet() != TSU_OK) fail("tsu_quiet");
    }
  }
  return nullptr;
}

void test_requests() {
  std::vector<tsu_ult_t> ts(kPutters);
  for (uint32_t i = 0; i < kPutters; ++i)
    if (tsu_ult_create(&ts[i], nullptr, putter, reinterpret_cast<void*>(uintptr_t{i})) != TSU_OK)
      fail("create");
  for (auto t : ts) tsu_ult_join(t, nullptr);
}

// ---- 4. a plain pthread waiter ---------------------------------------------------------
void test_pthread_waiter() {
  tsu_counter_t c;
  tsu_counter_init(&c);
  std::thread completer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    complete(&c);
  });
  if (tsu_counter_wait(&c, 1) != TSU_OK) fail("pthread counter wait");
  completer.join();
  putter(reinterpret_cast<void*>(uintptr_t{kPutters}));  // tsu_ult_yield off a ULT: returns
}

tsu_status_t start_workers(uint32_t n) {
  tsu_ult_config_t cfg{};
  cfg.struct_size = sizeof cfg;
  cfg.field_mask = TSU_ULT_CONFIG_WORKERS;
  cfg.workers = n;
  return tsu_ult_init(&cfg);
}

}  // namespace

int main() {
  if (tsu_init(nullptr) != TSU_OK) return 1;
  if (tsu_rank(&g_me) != TSU_OK) return 1;
  if (start_workers(1) != TSU_OK) return 1;
  test_not_polled();
  test_futures_parked();
  test_requests();
  test_ordered();
  tsu_ult_finalize();
  if (start_workers(2) != TSU_OK) return 1;
  test_race();
  test_requests();
  tsu_ult_finalize();
  test_pthread_waiter();
  const bool ok = g_failures.load() == 0;
  std::printf("ult_wake: %s\n", ok ? "PASS" : "FAIL");
  tsu_finalize();
  return ok ? 0 : 1;
}
