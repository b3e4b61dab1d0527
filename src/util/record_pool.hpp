// A pool of records of one type, for records made and dropped hundreds of
// thousands of times per second, often on different pthreads: user-level
// threads and their remote-spawn records (made by a handler or a spawning
// ULT, dropped by the worker that joins them), posted receives (made by the
// caller, dropped where the message completes them).  malloc's per-thread
// arenas grow and shrink under that pattern (tens of thousands of mprotect
// calls per run); this keeps the memory instead.  Each pthread has a cache
// (no lock) in front of one shared list (a mutex, taken once per kBatch
// records).  Memory is never returned to the system: the pool holds the peak
// number of records alive at once, allocated kSlab at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>

namespace tsu::util {

template <typename T>
class RecordPool {
 public:
  // A new T (default-initialized, as `new T` gives), or nullptr.
  static T* make() noexcept {
    void* mem = allocate();
    return mem ? new (mem) T : nullptr;
  }
  static void drop(T* p) noexcept {
    if (!p) return;
    p->~T();
    deallocate(p);
  }
  // Raw storage for one T (a class's own operator new/delete may use these).
  static void* allocate() noexcept {
    Cache& c = cache();
    if (!c.head) refill(c);
    if (!c.head) grow(c);
    if (Node* n = c.head) {
      c.head = n->next;
      --c.count;
      return n;
    }
    return ::operator new(sizeof(Slot), std::nothrow);
  }
  static void deallocate(void* p) noexcept {
    if (!p) return;
    Cache& c = cache();
    Node* n = new (p) Node;
    n->next = c.head;
    c.head = n;
    if (++c.count >= 2 * kBatch) spill(c, kBatch);
  }

 private:
  static constexpr uint32_t kBatch = 128;
  static constexpr uint32_t kSlab = 128;  // records per allocation (~28 KiB for 224-byte records)
  struct Node {
    Node* next = nullptr;
  };
  union Slot {
    alignas(T) unsigned char t[sizeof(T)];
    Node n;
  };
  struct Shared {
    std::mutex mu;
    Node* head = nullptr;  // guarded by mu
  };
  struct Cache {
    Node* head = nullptr;
    uint32_t count = 0;
    ~Cache() {
      spill(*this, count);
      fast_cache() = nullptr;
    }
  };
  static_assert(alignof(T) <= alignof(std::max_align_t));

  static Shared& shared() noexcept {
    static Shared* s = new Shared;  // never destroyed: caches spill into it at thread exit
    return *s;
  }
  // The calling pthread's cache.  The cache itself (a thread_local with a
  // destructor: a guard and an exit hook) is reached through a pointer
  // without either, initial-exec as the worker's own thread-local
  // (worker.cpp): one %fs-relative load per record, not a __tls_get_addr
  // call and a guard check.
  static Cache& cache() noexcept {
    if (Cache* c = fast_cache()) return *c;
    return first_cache();
  }
  static Cache*& fast_cache() noexcept {
    static thread_local Cache* c __attribute__((tls_model("initial-exec"))) = nullptr;
    return c;
  }
  __attribute__((noinline)) static Cache& first_cache() noexcept {
    thread_local Cache c;
    fast_cache() = &c;
    return c;
  }
  static void refill(Cache& c) noexcept {
    Shared& s = shared();
    std::lock_guard lock(s.mu);
    for (uint32_t i = 0; i < kBatch && s.head; ++i) {
      Node* n = s.head;
      s.head = n->next;
      n->next = c.head;
      c.head = n;
      ++c.count;
    }
  }
  // The pool is empty: a slab of kSlab records at once into the caller's
  // cache (one allocation, where one per record grew malloc's thread arena
  // a page, one mprotect call, per ~17 records).  Slabs are never freed,
  // as the records never were; nothing but the lists refers to their
  // slots.  Out of memory: nothing (make falls back to one record).
  static void grow(Cache& c) noexcept {
    auto* slab = static_cast<Slot*>(::operator new(kSlab * sizeof(Slot), std::nothrow));
    if (!slab) return;
    for (uint32_t i = kSlab; i-- > 0;) {
      Node* n = new (static_cast<void*>(&slab[i])) Node;
      n->next = c.head;
      c.head = n;
      ++c.count;
    }
  }
  static void spill(Cache& c, uint32_t k) noexcept {
    if (k == 0) return;
    Shared& s = shared();
    std::lock_guard lock(s.mu);
    for (uint32_t i = 0; i < k && c.head; ++i) {
      Node* n = c.head;
      c.head = n->next;
      --c.count;
      n->next = s.head;
      s.head = n;
    }
  }
};

}  // namespace tsu::util
