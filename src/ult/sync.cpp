// Mutex, condition variable and barrier for ULTs and pthreads alike.  Each
// object is a spinlock-guarded FIFO of waiters (thread.hpp): a ULT that waits
// switches away (block()), a pthread waits on a futex; wake-ups hand over.
#include <atomic>
#include <new>

#include "scheduler.hpp"
#include "spinlock.hpp"
#include "thread.hpp"
#include "tsunagi/ult.h"

namespace tsu::ult {
namespace {

// Mutex state: 0 free, 1 held, 2 held and maybe waited for.  The fast paths
// are one CAS each; the slow paths take `lock`.  Unlock with waiters hands
// the mutex to the first waiter directly (state stays held), so a woken
// waiter owns it and nobody can barge in between.
struct Mutex {
  std::atomic<uint32_t> state;
  Spinlock lock;
  WaitQueue waiters;  // guarded by lock
};
struct Cond {
  Spinlock lock;
  WaitQueue waiters;  // guarded by lock
};
struct Barrier {
  Spinlock lock;
  uint32_t count;    // guarded by lock
  uint32_t arrived;  // guarded by lock
  WaitQueue waiters; // guarded by lock
};
static_assert(sizeof(Mutex) <= sizeof(tsu_ult_mutex_t));
static_assert(sizeof(Cond) <= sizeof(tsu_ult_cond_t));
static_assert(sizeof(Barrier) <= sizeof(tsu_ult_barrier_t));

// The public structs are zero-filled storage; a zero Mutex/Cond is valid.
Mutex* as_mutex(tsu_ult_mutex_t* m) { return reinterpret_cast<Mutex*>(m->opaque); }
Cond* as_cond(tsu_ult_cond_t* c) { return reinterpret_cast<Cond*>(c->opaque); }
Barrier* as_barrier(tsu_ult_barrier_t* b) { return reinterpret_cast<Barrier*>(b->opaque); }

void mutex_lock(Mutex* m) noexcept {
  uint32_t expected = 0;
  if (m->state.compare_exchange_strong(expected, 1, std::memory_order_acquire,
                                       std::memory_order_relaxed))
    return;
  m->lock.lock();
  if (m->state.exchange(2, std::memory_order_acquire) == 0) {
    m->lock.unlock();  // freed meanwhile: ours (state 2 only costs a slow unlock)
    return;
  }
  Waiter w;
  w.ult = current_ult();
  m->waiters.push(&w);
  block(w, m->lock);  // returns owning the mutex (handed over by unlock)
}

void mutex_unlock(Mutex* m) noexcept {
  uint32_t expected = 1;
  if (m->state.compare_exchange_strong(expected, 0, std::memory_order_release,
                                       std::memory_order_relaxed))
    return;
  m->lock.lock();
  Waiter* w = m->waiters.pop();
  if (!w) {
    m->state.store(0, std::memory_order_release);
  } else if (m->waiters.empty()) {
    m->state.store(1, std::memory_order_relaxed);  // handed over, nobody else waits
  }
  m->lock.unlock();
  if (w) wake(w);
}

}  // namespace
}  // namespace tsu::ult

using namespace tsu::ult;

extern "C" {

tsu_status_t tsu_ult_mutex_init(tsu_ult_mutex_t* mutex) {
  if (!mutex) return TSU_ERR_NULL_POINTER;
  *mutex = tsu_ult_mutex_t TSU_ULT_MUTEX_INITIALIZER;
  return TSU_OK;
}
tsu_status_t tsu_ult_mutex_destroy(tsu_ult_mutex_t* mutex) {
  if (!mutex) return TSU_ERR_NULL_POINTER;
  if (as_mutex(mutex)->state.load(std::memory_order_relaxed) != 0) return TSU_EAGAIN;
  return TSU_OK;
}
tsu_status_t tsu_ult_mutex_lock(tsu_ult_mutex_t* mutex) {
  if (!mutex) return TSU_ERR_NULL_POINTER;
  mutex_lock(as_mutex(mutex));
  return TSU_OK;
}
tsu_status_t tsu_ult_mutex_trylock(tsu_ult_mutex_t* mutex) {
  if (!mutex) return TSU_ERR_NULL_POINTER;
  uint32_t expected = 0;
  return as_mutex(mutex)->state.compare_exchange_strong(expected, 1, std::memory_order_acquire,
                                                        std::memory_order_relaxed)
             ? TSU_OK
             : TSU_EAGAIN;
}
tsu_status_t tsu_ult_mutex_unlock(tsu_ult_mutex_t* mutex) {
  if (!mutex) return TSU_ERR_NULL_POINTER;
  if (as_mutex(mutex)->state.load(std::memory_order_relaxed) == 0) return TSU_ERR_INVALID_ARG;
  mutex_unlock(as_mutex(mutex));
  return TSU_OK;
}

tsu_status_t tsu_ult_cond_init(tsu_ult_cond_t* cond) {
  if (!cond) return TSU_ERR_NULL_POINTER;
  *cond = tsu_ult_cond_t TSU_ULT_COND_INITIALIZER;
  return TSU_OK;
}
tsu_status_t tsu_ult_cond_destroy(tsu_ult_cond_t* cond) {
  if (!cond) return TSU_ERR_NULL_POINTER;
  Cond* c = as_cond(cond);
  SpinGuard g(c->lock);
  return c->waiters.empty() ? TSU_OK : TSU_EAGAIN;
}
tsu_status_t tsu_ult_cond_wait(tsu_ult_cond_t* cond, tsu_ult_mutex_t* mutex) {
  if (!cond || !mutex) return TSU_ERR_NULL_POINTER;
  Cond* c = as_cond(cond);
  Waiter w;
  w.ult = current_ult();
  c->lock.lock();
  c->waiters.push(&w);
  // Unlocked while c->lock is held: a signal after our unlock finds us queued.
  mutex_unlock(as_mutex(mutex));
  block(w, c->lock);
  mutex_lock(as_mutex(mutex));
  return TSU_OK;
}
tsu_status_t tsu_ult_cond_signal(tsu_ult_cond_t* cond) {
  if (!cond) return TSU_ERR_NULL_POINTER;
  Cond* c = as_cond(cond);
  c->lock.lock();
  Waiter* w = c->waiters.pop();
  c->lock.unlock();
  if (w) wake(w);
  return TSU_OK;
}
tsu_status_t tsu_ult_cond_broadcast(tsu_ult_cond_t* cond) {
  if (!cond) return TSU_ERR_NULL_POINTER;
  Cond* c = as_cond(cond);
  c->lock.lock();
  WaitQueue all = c->waiters;
  c->waiters = WaitQueue{};
  c->lock.unlock();
  // Read next before waking: a woken waiter's record may vanish at once.
  for (Waiter* w = all.head; w;) {
    Waiter* next = w->next;
    wake(w);
    w = next;
  }
  return TSU_OK;
}

tsu_status_t tsu_ult_barrier_init(tsu_ult_barrier_t* barrier, uint32_t count) {
  if (!barrier) return TSU_ERR_NULL_POINTER;
  if (count == 0) return TSU_ERR_INVALID_ARG;
  *barrier = tsu_ult_barrier_t{};
  Barrier* b = as_barrier(barrier);
  b->count = count;
  return TSU_OK;
}
tsu_status_t tsu_ult_barrier_destroy(tsu_ult_barrier_t* barrier) {
  if (!barrier) return TSU_ERR_NULL_POINTER;
  Barrier* b = as_barrier(barrier);
  SpinGuard g(b->lock);
  return b->arrived == 0 ? TSU_OK : TSU_EAGAIN;
}
tsu_status_t tsu_ult_barrier_wait(tsu_ult_barrier_t* barrier) {
  if (!barrier) return TSU_ERR_NULL_POINTER;
  Barrier* b = as_barrier(barrier);
  b->lock.lock();
  if (b->count == 0) {
    b->lock.unlock();
    return TSU_ERR_INVALID_ARG;
  }
  if (++b->arrived == b->count) {
    b->arrived = 0;
    WaitQueue all = b->waiters;
    b->waiters = WaitQueue{};
    b->lock.unlock();
    for (Waiter* w = all.head; w;) {
      Waiter* next = w->next;
      wake(w);
      w = next;
    }
    return TSU_ULT_BARRIER_SERIAL;
  }
  Waiter w;
  w.ult = current_ult();
  b->waiters.push(&w);
  block(w, b->lock);
  return TSU_OK;
}

}  // extern "C"
