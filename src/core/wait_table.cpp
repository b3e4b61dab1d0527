#include "core/wait_table.hpp"

#include <atomic>
#include <cstddef>
#include <mutex>
#include <thread>

#include "core/command_ring.hpp"  // kCacheLine
#include "core/waiter.hpp"
#include "util/futex.hpp"

namespace tsu::core::wait_table {

namespace {

// A parked call's entry: in the waiting call's frame.  `next` and `queued`
// are guarded by the bucket's mutex.
struct Entry {
  const void* key;
  Waiter* waiter;
  Entry* next = nullptr;
  bool queued = false;
};

struct alignas(kCacheLine) Bucket {
  std::mutex mu;
  // Entries queued here (changed under mu, read without it by notify).
  std::atomic<uint32_t> count{0};
  Entry* head = nullptr;  // guarded by mu
};

constexpr std::size_t kBuckets = 64;
Bucket g_buckets[kBuckets];

Bucket& bucket_of(const void* key) noexcept {
  // Fibonacci hashing of the address (objects are at least 4-byte aligned).
  const auto a = reinterpret_cast<uintptr_t>(key) >> 2;
  return g_buckets[(a * 0x9E3779B97F4A7C15ull) >> 58];
}

// Takes a queued `e` out of the list (under b.mu).
void unlink(Bucket& b, Entry* e) noexcept {
  for (Entry** p = &b.head; *p; p = &(*p)->next) {
    if (*p == e) {
      *p = e->next;
      e->queued = false;
      b.count.fetch_sub(1, std::memory_order_relaxed);
      return;
    }
  }
}

// Queues `e` on its bucket; seq_cst, before the caller's re-check of its
// condition (the Dekker pairing described in wait_table.hpp).
void enqueue(Bucket& b, Entry& e) noexcept {
  std::lock_guard lock(b.mu);
  e.next = b.head;
  b.head = &e;
  e.queued = true;
  b.count.fetch_add(1, std::memory_order_seq_cst);
}

// Takes `e` off its bucket unless a notify did; true when it was still queued
// (no wake will come), false when a notify took it (its wake may be running).
bool dequeue(Bucket& b, Entry& e) noexcept {
  std::lock_guard lock(b.mu);
  const bool was_queued = e.queued;
  if (was_queued) unlink(b, &e);
  return was_queued;
}

// A sleeping pthread's unpark: the waker's last touch of the sleeper's frame
// is the store; the futex wake after it uses the word's address only (the
// sleeper may have returned already, which a private futex wake tolerates).
void futex_unpark(void* ctx, void* /*token*/) noexcept {
  auto* word = static_cast<std::atomic<uint32_t>*>(ctx);
  word->store(1, std::memory_order_release);
  util::futex_wake(word, 1);
}

}  // namespace

bool park_while(const void* key, uint32_t flags, bool (*still_waiting)(const void*),
                const void* arg) noexcept {
  const ParkHook hook = park_hook();
  if (!hook.park || !hook.unpark) return false;
  Waiter w(hook.unpark, hook.ctx);
  Entry e{key, &w};
  Bucket& b = bucket_of(key);
  enqueue(b, e);
  bool refused = false;
  if (still_waiting(arg)) {
    // Returns 1 only after the thread was resumed, and only a wake resumes
    // a committed park (or one that lost the race to it): notify unlinked us.
    if (hook.park(hook.ctx, &w, flags) != 0) return true;
    refused = true;
  }
  // Not parked (the condition holds, or the hook refused): leave the list.
  // If a notify took us out already it is about to call w.wake(), which
  // touches `w` in this frame: wait for that before returning.
  if (!dequeue(b, e))
    while (!w.woken()) std::this_thread::yield();
  return !refused;
}

void sleep_while(const void* key, bool (*still_waiting)(const void*), const void* arg,
                 uint64_t timeout_ns) noexcept {
  std::atomic<uint32_t> word{0};  // 1 once futex_unpark ran
  Waiter w(futex_unpark, &word);
  Entry e{key, &w};
  Bucket& b = bucket_of(key);
  enqueue(b, e);
  bool committed = false;
  if (still_waiting(arg) && (committed = w.commit(nullptr))) {
    const timespec ts{static_cast<time_t>(timeout_ns / 1'000'000'000),
                      static_cast<long>(timeout_ns % 1'000'000'000)};
    // One timed sleep (a spurious return or the timeout ends it too).
    if (word.load(std::memory_order_acquire) == 0) util::futex_wait(&word, 0, &ts);
  }
  // A notify that took the entry wakes it: with a committed park it runs
  // futex_unpark, whose store must land before this frame goes; without,
  // its exchange in Waiter::wake() is its last touch.
  if (!dequeue(b, e)) {
    if (committed)
      while (word.load(std::memory_order_acquire) == 0) std::this_thread::yield();
    else
      while (!w.woken()) std::this_thread::yield();
  }
}

void notify(const void* key) noexcept {
  Bucket& b = bucket_of(key);
  if (b.count.load(std::memory_order_seq_cst) == 0) return;
  Entry* woken = nullptr;
  {
    std::lock_guard lock(b.mu);
    Entry** p = &b.head;
    while (Entry* e = *p) {
      if (e->key == key) {
        *p = e->next;
        e->queued = false;
        b.count.fetch_sub(1, std::memory_order_relaxed);
        e->next = woken;
        woken = e;
      } else {
        p = &e->next;
      }
    }
  }
  // Outside the lock: an unpark may take the scheduler's own locks.  Read
  // `next` first: after wake() the entry's frame may be gone.
  while (woken) {
    Entry* next = woken->next;
    woken->waiter->wake();
    woken = next;
  }
}

}  // namespace tsu::core::wait_table
