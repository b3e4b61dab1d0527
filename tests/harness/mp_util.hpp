// Helpers shared by the multi-rank tests (public API only).
//
// Waiting rule: every loop that waits calls tsu_progress() and sched_yield(),
// so the tests work in TSU_PROGRESS=manual and on oversubscribed machines, and
// every wait is bounded by a deadline (a hung wait fails the test instead of
// hanging the job).
#pragma once

#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "tsunagi/tsunagi.h"

namespace mp {

inline constexpr auto kWaitLimit = std::chrono::seconds(30);

inline uint32_t rank() {
  uint32_t r = 0;
  EXPECT_EQ(tsu_rank(&r), TSU_OK);
  return r;
}
inline uint32_t size() {
  uint32_t s = 0;
  EXPECT_EQ(tsu_size(&s), TSU_OK);
  return s;
}

// The configuration the job runs under, as the environment sets it.
inline bool env_is(const char* var, const char* value) {
  const char* v = std::getenv(var);
  return v && std::strcmp(v, value) == 0;
}
inline bool engine_mode() { return env_is("TSU_BYPASS", "0"); }
inline bool manual_mode() { return env_is("TSU_PROGRESS", "manual"); }

// Where a rank is: its node, and whether this process reaches its memory
// directly (itself or a node peer: tsu_gaddr_ptr works, and with bypass on
// RMA and atomics to it complete inline, before tsu_try_* returns).  Ranks on
// other nodes are reached by messages only, through the progress engine.
inline uint32_t node_of(uint32_t r) {
  uint32_t n = 0;
  EXPECT_EQ(tsu_node_of(r, &n), TSU_OK);
  return n;
}
inline bool memory_peer(uint32_t r) { return node_of(r) == node_of(rank()); }
// A rank on another node than `me`: a shift by the node size (tsurun places
// K consecutive ranks per node), so every rank has exactly one writer.
inline uint32_t remote_peer(uint32_t me, uint32_t size) {
  uint32_t k = 0;
  for (uint32_t r = 0; r < size; ++r) k += node_of(r) == node_of(me) ? 1 : 0;
  return (me + k) % size;
}
// Requests to `r` complete inline (the contract's bypass case).
inline bool completes_inline(uint32_t r) { return !engine_mode() && memory_peer(r); }
// Requests to `r` go through the progress engine (and its command ring).
inline bool through_engine(uint32_t r) { return !completes_inline(r); }

inline void barrier() { ASSERT_EQ(tsu_barrier(), TSU_OK) << tsu_last_error(); }

// Drives progress until pred() holds; false (and a test failure) on timeout.
template <typename Pred>
bool wait_until(Pred&& pred, const char* what = "condition") {
  const auto deadline = std::chrono::steady_clock::now() + kWaitLimit;
  while (!pred()) {
    tsu_progress();
    sched_yield();
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "timed out waiting for " << what;
      return false;
    }
  }
  return true;
}

// A single request's callback, for tests that check it by hand: how often it
// ran and its last status (Tracker below counts many requests).
struct Done {
  std::atomic<int> calls{0};
  std::atomic<tsu_status_t> st{1};
  tsu_cb_t cb() {
    return tsu_cb(
        [](tsu_status_t s, void* a) {
          auto* d = static_cast<Done*>(a);
          d->st.store(s);
          d->calls.fetch_add(1);
        },
        this);
  }
  bool wait(const char* what = "completion") {
    return wait_until([&] { return calls.load() > 0; }, what);
  }
};

// Issues `try_fn` until it is not TSU_EAGAIN (driving progress in between).
// Returns its final status; `eagains` (if given) counts the refusals.
template <typename F>
tsu_status_t issue(F&& try_fn, uint64_t* eagains = nullptr) {
  const auto deadline = std::chrono::steady_clock::now() + kWaitLimit;
  for (;;) {
    const tsu_status_t st = try_fn();
    if (st != TSU_EAGAIN) return st;
    if (eagains) ++*eagains;
    tsu_progress();
    sched_yield();
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "request refused with TSU_EAGAIN for too long";
      return TSU_EAGAIN;
    }
  }
}

// Runs one request to its end.  A request accepted with TSU_OK reports
// through its callback (which must run exactly once); one refused at the call
// returns the status (and must not call back).  Either way: the status it
// ended with; `at_call` (if given) says which.
template <typename Issue>
tsu_status_t outcome(Issue&& try_with_cb, bool* at_call = nullptr) {
  Done done;
  const tsu_status_t st = issue([&] { return try_with_cb(done.cb()); });
  if (at_call) *at_call = st != TSU_OK;
  if (st != TSU_OK) {
    EXPECT_EQ(done.calls.load(), 0) << "a refused request ran its callback";
    return st;
  }
  if (!done.wait()) return TSU_EAGAIN;
  EXPECT_EQ(done.calls.load(), 1);
  return done.st.load();
}

// One tracked request: the callback must run exactly once, with `status`.
struct Completion {
  std::atomic<uint32_t> calls{0};
  std::atomic<int32_t> status{1234};
  std::atomic<uint64_t>* done = nullptr;  // shared completion count
};

inline void completion_cb(tsu_status_t status, void* arg) {
  auto* c = static_cast<Completion*>(arg);
  // Once `calls` is published a waiter may destroy a stand-alone Completion:
  // touch nothing of it afterwards (a tracker's counter outlives its slots).
  std::atomic<uint64_t>* done = c->done;
  c->status.store(status, std::memory_order_relaxed);
  c->calls.fetch_add(1, std::memory_order_release);
  if (done) done->fetch_add(1, std::memory_order_release);
}

// A batch of tracked requests.  Not thread-safe for add(); one per thread.
class Tracker {
 public:
  explicit Tracker(std::size_t capacity) : slots_(capacity) {
    for (auto& s : slots_) s.done = &done_;
  }
  // Callback for the next request (the slot is consumed only if the request
  // is accepted: call commit() after TSU_OK).
  tsu_cb_t next_cb() {
    EXPECT_LT(used_, slots_.size()) << "tracker too small";
    return tsu_cb(completion_cb, &slots_[used_]);
  }
  void commit() { ++used_; }
  // Issues with retries on EAGAIN; on TSU_OK the request is tracked.
  template <typename F>
  tsu_status_t issue(F&& try_with_cb, uint64_t* eagains = nullptr) {
    const tsu_cb_t cb = next_cb();
    const tsu_status_t st = mp::issue([&] { return try_with_cb(cb); }, eagains);
    if (st == TSU_OK) commit();
    return st;
  }
  std::size_t issued() const { return used_; }
  uint64_t done() const { return done_.load(std::memory_order_acquire); }
  bool wait_all() {
    return wait_until([&] { return done() >= used_; }, "request completions");
  }
  // Every accepted request completed exactly once with `expected`; unused
  // slots never ran.
  void expect_all(tsu_status_t expected = TSU_OK) const {
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      const uint32_t calls = slots_[i].calls.load(std::memory_order_acquire);
      if (i < used_) {
        EXPECT_EQ(calls, 1u) << "request " << i << " callback count";
        if (calls == 1) {
          EXPECT_EQ(slots_[i].status.load(), expected) << "request " << i;
        }
      } else {
        EXPECT_EQ(calls, 0u) << "slot " << i << " was never issued but its callback ran";
      }
    }
    EXPECT_EQ(done(), used_);
  }
  const Completion& slot(std::size_t i) const { return slots_[i]; }

 private:
  std::vector<Completion> slots_;
  std::size_t used_ = 0;
  std::atomic<uint64_t> done_{0};
};

// Byte pattern depending on (rank, offset, salt), without short period: byte
// `off` is byte off%8 of a hash of (rank, off/8, salt).
inline uint64_t pattern_word(uint32_t r, uint64_t word_index, uint32_t salt) {
  uint64_t x = word_index * 0x9E3779B97F4A7C15ull + (uint64_t{r} << 40) + (uint64_t{salt} << 20) + 1;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return x;
}
inline uint8_t pattern(uint32_t r, uint64_t off, uint32_t salt = 0) {
  return static_cast<uint8_t>(pattern_word(r, off >> 3, salt) >> (8 * (off & 7)));
}
inline void fill_pattern(void* dst, std::size_t len, uint32_t r, uint64_t off0, uint32_t salt = 0) {
  auto* p = static_cast<uint8_t*>(dst);
  std::size_t i = 0;
  for (; i < len && ((off0 + i) & 7); ++i) p[i] = pattern(r, off0 + i, salt);
  for (; i + 8 <= len; i += 8) {
    const uint64_t w = pattern_word(r, (off0 + i) >> 3, salt);
    std::memcpy(p + i, &w, 8);  // little-endian: byte k is bits 8k..8k+7
  }
  for (; i < len; ++i) p[i] = pattern(r, off0 + i, salt);
}
// Index of the first byte differing from the pattern, or SIZE_MAX.
inline std::size_t check_pattern(const void* src, std::size_t len, uint32_t r, uint64_t off0,
                                 uint32_t salt = 0) {
  const auto* p = static_cast<const uint8_t*>(src);
  std::size_t i = 0;
  for (; i < len && ((off0 + i) & 7); ++i)
    if (p[i] != pattern(r, off0 + i, salt)) return i;
  for (; i + 8 <= len; i += 8) {
    const uint64_t w = pattern_word(r, (off0 + i) >> 3, salt);
    if (std::memcmp(p + i, &w, 8) != 0) break;
  }
  for (; i < len; ++i)
    if (p[i] != pattern(r, off0 + i, salt)) return i;
  return SIZE_MAX;
}
// Index of the first byte differing from `value`, or SIZE_MAX.
inline std::size_t check_fill(const void* src, std::size_t len, uint8_t value) {
  const auto* p = static_cast<const uint8_t*>(src);
  for (std::size_t i = 0; i < len; ++i)
    if (p[i] != value) return i;
  return SIZE_MAX;
}

// A pointer to `len` bytes at `g` (own memory or a node peer's shared segment).
inline uint8_t* gptr(tsu_gaddr_t g, std::size_t len) {
  void* p = nullptr;
  const tsu_status_t st = tsu_gaddr_ptr(g, len, &p);
  EXPECT_EQ(st, TSU_OK) << tsu_last_error();
  return static_cast<uint8_t*>(p);
}
inline uint8_t* main_base() {
  void* base = nullptr;
  std::size_t sz = 0;
  EXPECT_EQ(tsu_segment_info(TSU_SEG_MAIN, &base, &sz), TSU_OK);
  return static_cast<uint8_t*>(base);
}
inline std::size_t main_size() {
  void* base = nullptr;
  std::size_t sz = 0;
  EXPECT_EQ(tsu_segment_info(TSU_SEG_MAIN, &base, &sz), TSU_OK);
  return sz;
}

// Gets `len` bytes from `src` into the caller's memory at `dst` and waits.
inline tsu_status_t get_sync(tsu_laddr_t dst, tsu_gaddr_t src, std::size_t len) {
  tsu_counter_t c;
  tsu_counter_init(&c);
  const tsu_status_t st = issue([&] { return tsu_try_get(dst, src, len, tsu_counter_cb(&c)); });
  if (st != TSU_OK) return st;
  return tsu_counter_wait(&c, 1);
}
inline tsu_status_t put_sync(tsu_gaddr_t dst, tsu_laddr_t src, std::size_t len) {
  tsu_counter_t c;
  tsu_counter_init(&c);
  const tsu_status_t st = issue([&] { return tsu_try_put(dst, src, len, tsu_counter_cb(&c)); });
  if (st != TSU_OK) return st;
  return tsu_counter_wait(&c, 1);
}

// Exchanges one 32-bit value per rank through the main segments: each rank
// stores its value at `slot_off` of its own main segment, then reads every
// rank's with tsu_try_get.  Collective.  `scratch_off` is 4*size bytes of
// the caller's main segment used as landing area.
inline std::vector<uint32_t> allgather_u32(uint32_t value, uint64_t slot_off,
                                           uint64_t scratch_off) {
  const uint32_t n = size();
  std::memcpy(main_base() + slot_off, &value, 4);
  barrier();
  std::vector<uint32_t> out(n);
  for (uint32_t r = 0; r < n; ++r) {
    EXPECT_EQ(get_sync(tsu_laddr(TSU_SEG_MAIN, scratch_off + 4u * r),
                       tsu_gaddr(r, TSU_SEG_MAIN, slot_off), 4),
              TSU_OK);
    std::memcpy(&out[r], main_base() + scratch_off + 4u * r, 4);
  }
  barrier();  // nobody reuses the slot before everyone has read it
  return out;
}

// Runs body(tid) on `nthreads` threads and joins them.
inline void run_threads(unsigned nthreads, const std::function<void(unsigned)>& body) {
  std::vector<std::thread> ts;
  ts.reserve(nthreads);
  for (unsigned t = 0; t < nthreads; ++t) ts.emplace_back(body, t);
  for (auto& t : ts) t.join();
}

}  // namespace mp
