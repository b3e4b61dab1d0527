// The rank's scheduler: its workers, settings, the idle/wake protocol, the
// count of live ULTs, and creation/teardown of ULT records.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "settings.hpp"
#include "stack_pool.hpp"
#include "thread.hpp"
#include "tsunagi/ult.h"
#include "worker.hpp"

namespace tsu::ult {

class Remote;

// Defaults, then TSU_ULT_* variables, then `config`.  False and `error` set
// on a bad value.
bool load_settings(const tsu_ult_config_t* config, Settings& out, const char*& error) noexcept;

class Scheduler {
 public:
  explicit Scheduler(const Settings& s);
  ~Scheduler();
  void start();
  // Waits until no ULT is live, then stops and joins the workers.
  void stop();

  const Settings& settings() const noexcept { return settings_; }
  StackPool& stack_pool() noexcept { return pool_; }
  uint32_t worker_count() const noexcept { return static_cast<uint32_t>(workers_.size()); }
  Worker& worker(uint32_t i) noexcept { return *workers_[i]; }

  // A new record (from the calling worker's free list when there is one).
  Ult* new_record(Worker* w) noexcept;
  void free_record(Ult* u) noexcept;
  // Makes a thread runnable: on the calling worker's queue, else on `hint`'s
  // (or round robin), and wakes an idle worker if one sleeps.  Never fails:
  // when the queue cannot grow (out of memory) the thread goes on that
  // worker's woken stack instead (Worker::enqueue: intrusive, no allocation),
  // pinned to it, so a woken or requeued thread is never lost.
  void make_ready(Ult* u, Worker* hint = nullptr) noexcept;
  // A thread stopped being live here without ending on a worker (handed to
  // another rank, or its creation failed).  Ends on workers are counted by
  // the workers themselves (WorkerCounters::finished).
  void note_finished() noexcept { other_finished_.fetch_add(1, std::memory_order_release); }
  // ULTs created here and not yet ended.  Sums the workers' own counters
  // (no shared counter on the create/exit path); exact when nothing changes
  // meanwhile, and never 0 while a thread is live (see scheduler.cpp).
  uint64_t live() const noexcept;
  // A process-unique thread id: per worker without atomics (stride
  // workers + 1, offset index + 1); from pthreads (w == nullptr) atomically.
  uint64_t next_id(Worker* w) noexcept;
  void count_pthread_create() noexcept { pthread_created_.fetch_add(1, std::memory_order_release); }
  uint64_t pthread_created() const noexcept {
    return pthread_created_.load(std::memory_order_relaxed);
  }

  // Idle protocol (Dekker style, seq_cst read-modify-writes on sleepers_): a
  // worker about to sleep increments sleepers_, reads wake_seq_, looks at
  // every queue once more, then waits on wake_seq_ (with a timeout); a thread
  // that queued work from outside the workers reads sleepers_ and bumps
  // wake_seq_ if anyone sleeps.  One of the two sees the other.
  void idle_wait(Worker& w, long timeout_ns) noexcept;
  void notify() noexcept;
  // notify() for a thread only one given worker may run (a woken parked
  // thread): wakes every sleeper, since the futex cannot pick that worker.
  void notify_all() noexcept;
  // From a worker that has more work than it runs now: wakes a sleeping
  // worker if any (a hint: a missed one sleeps at most its timeout).
  void help_wanted() noexcept {
    if (sleepers_.load(std::memory_order_relaxed) != 0) notify();
  }
  bool stopping() const noexcept { return stopping_.load(std::memory_order_acquire); }
  // Threads across ranks: set once before start() when tsunagi runs.
  void set_remote(Remote* r) noexcept { remote_ = r; }
  Remote* remote() const noexcept { return remote_; }
  bool any_queued() const noexcept;

 private:
  Settings settings_;
  StackPool pool_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::atomic<uint64_t> other_finished_{0};
  std::atomic<uint64_t> next_id_{0};  // pthreads' ids (offset 0)
  std::atomic<uint64_t> pthread_created_{0};
  std::atomic<uint32_t> round_robin_{0};
  std::atomic<uint32_t> wake_seq_{0};
  std::atomic<uint32_t> sleepers_{0};
  std::atomic<bool> stopping_{false};
  Remote* remote_ = nullptr;  // written before the workers start
};

// What a new thread is made of (tsu_ult_create, spawns).
struct CreateArgs {
  tsu_ult_fn_t fn = nullptr;
  void* arg = nullptr;
  std::size_t stack_size = 0;  // 0: the default
  bool detached = false;
  bool migratable = false;  // (spawns only: the balancer may move it)
  const char* name = nullptr;
  RemoteInfo* remote = nullptr;  // owned by the record from here on
  uint32_t origin_rank = 0;
};
tsu_status_t create_thread(Scheduler& s, const CreateArgs& c, Ult** out) noexcept;

// Ends the calling ULT (key destructors, then its worker frees the stack).
[[noreturn]] void exit_current(Ult* self, void* value) noexcept;
// Bookkeeping of a thread that ended (on the worker that switched away from
// it): live list, join record, wake the joiner or free a detached record.
void complete_thread(Ult* u) noexcept;

// The running scheduler, or nullptr.
Scheduler* scheduler() noexcept;
void set_scheduler(Scheduler* s) noexcept;

// For the overflow reporter: whether `addr` lies in the guard page under the
// stack of the ULT running on this pthread; if so its name and id.
bool current_stack_guard_hit(const std::byte* addr, std::size_t page, char* name,
                             std::size_t name_len, uint64_t& id) noexcept;

// Futex helpers (util/futex.hpp is internal to libtsunagi).
void futex_wait(std::atomic<uint32_t>& word, uint32_t expected, long timeout_ns) noexcept;
void futex_wake(std::atomic<uint32_t>& word, int n) noexcept;

}  // namespace tsu::ult
