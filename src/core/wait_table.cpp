#include "core/wait_table.hpp"

#include <atomic>
#include <cstddef>
#include <mutex>
#include <thread>

#include "core/command_ring.hpp"  // kCacheLine
#include "core/waiter.hpp"

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

}  // namespace

bool park_while(const void* key, uint32_t flags, bool (*still_waiting)(const void*),
                const void* arg) noexcept {
  const ParkHook hook = park_hook();
  if (!hook.park || !hook.unpark) return false;
  Waiter w(hook.unpark, hook.ctx);
  Entry e{key, &w};
  Bucket& b = bucket_of(key);
  {
    std::lock_guard lock(b.mu);
    e.next = b.head;
    b.head = &e;
    e.queued = true;
    b.count.fetch_add(1, std::memory_order_seq_cst);  // before the re-check below
  }
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
  bool was_queued;
  {
    std::lock_guard lock(b.mu);
    was_queued = e.queued;
    if (was_queued) unlink(b, &e);
  }
  if (!was_queued)
    while (!w.woken()) std::this_thread::yield();
  return !refused;
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
