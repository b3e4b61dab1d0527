// A user-level thread's control block, and the waiter records that threads
// (user-level or plain pthreads) leave in wait queues.
#pragma once

#include <atomic>
#include <cstdint>

#include "context.hpp"
#include "spinlock.hpp"
#include "stack_pool.hpp"
#include "tsunagi/ult.h"

namespace tsu::ult {

class Worker;
struct RemoteInfo;

enum class State : uint32_t {
  kNew,      // created, no stack yet (in a run queue)
  kReady,    // in a run queue
  kRunning,  // on a worker
  kBlocked,  // in a wait queue (join, mutex, cond, barrier)
  kWaiting,  // inside a blocking tsunagi call: on its worker's private list
             // (polling), or parked until its completion wakes it
  kDone      // ended; the record lives until joined (or at once if detached)
};
const char* state_name(State s) noexcept;

struct Waiter;

// A thread's value for one key, with the key's generation when it was set.
struct KeyValue {
  void* value;
  uint64_t generation;
};

struct Ult {
  // --- Owned by whoever runs or holds the thread (one party at a time: the
  // run queue's lock or the block protocol hands it over). ---
  Fctx fctx = nullptr;       // saved context (valid while not running)
  bool fresh = false;        // fctx is from make_fcontext: never run (Worker::switch_to)
  Stack stack{};             // from the pool at first run
  Worker* worker = nullptr;  // the worker it runs (or last ran) on
  tsu_ult_fn_t fn = nullptr;
  void* arg = nullptr;
  void* value = nullptr;     // exit value
  KeyValue* keys = nullptr;  // tsu_ult_key values, allocated on first set
  std::size_t stack_size = 0;
  SanitizerContext san;
  Ult* next = nullptr;       // private lists (a worker's waiting list, free lists)
  Ult* wake_next = nullptr;  // a worker's woken stack (Worker::unpark_hook)
  bool park_drive = false;   // parked with TSU_PARK_DRIVE_PROGRESS (owner only)
  uint8_t x87_flags = 0;     // its x87 status flags while switched away (fp_state.hpp)
  std::atomic<State> state{State::kNew};  // read by dumps from other threads
  tsu_status_t error = TSU_OK;            // set when it could not run (no stack)
  RemoteInfo* remote = nullptr;    // spawned threads (remote.hpp), owned
  bool proxy = false;  // stands for a thread on another rank: never runs here
  bool ended_into_joiner = false;  // its end switched straight to its ULT joiner
  // Run inline by its joiner (join before it started): it runs on the
  // joiner's stack as a plain call; tsu_ult_exit returns there through this
  // (a jmp_buf on that stack).  See Worker::run_inline.
  void* inline_exit = nullptr;

  // --- Join record: guarded by join_lock. ---
  Spinlock join_lock;
  bool done = false;
  bool detached = false;
  Waiter* joiner = nullptr;

  // --- Identity and the live list (guarded by the home worker's live lock). ---
  uint64_t id = 0;
  Worker* home = nullptr;  // where it was created (owns the live-list entry)
  Ult* live_prev = nullptr;
  Ult* live_next = nullptr;
  bool listed = false;  // in home's live list (a worker's new thread joins it
                        // when it leaves the nursery; one run inline never does)
  uint32_t origin_rank = 0;
  char name[TSU_ULT_NAME_MAX + 1] = {};
};

// A thread waiting in a queue: a ULT (ult set: made ready on wake) or a
// pthread (ult null: `woken` is its futex word).  Lives on the waiter's
// stack; the waker must not touch it after wake().
struct Waiter {
  Waiter* next = nullptr;
  Ult* ult = nullptr;
  std::atomic<uint32_t> woken{0};
};

// FIFO of waiters; the owner object's spinlock guards it.
struct WaitQueue {
  Waiter* head = nullptr;
  Waiter* tail = nullptr;
  void push(Waiter* w) noexcept {
    w->next = nullptr;
    if (tail) tail->next = w; else head = w;
    tail = w;
  }
  Waiter* pop() noexcept {
    Waiter* w = head;
    if (w) {
      head = w->next;
      if (!head) tail = nullptr;
    }
    return w;
  }
  bool empty() const noexcept { return head == nullptr; }
};

// The calling ULT (nullptr on a plain pthread or a worker's own loop).
Ult* current_ult() noexcept;
// Wakes a waiter taken out of its queue (after the queue's lock is released).
void wake(Waiter* w) noexcept;
// Puts the caller to sleep until wake(w): a ULT switches away and `held` is
// released once its context is saved; a pthread releases `held` and waits on
// its futex.  `held` guards the queue w was pushed on.
void block(Waiter& w, Spinlock& held) noexcept;

}  // namespace tsu::ult
