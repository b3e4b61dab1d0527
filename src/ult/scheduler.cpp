#include "scheduler.hpp"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "keys.hpp"
#include "record_pool.hpp"
#include "remote.hpp"

namespace tsu::ult {

namespace {
std::atomic<Scheduler*> g_scheduler{nullptr};
}  // namespace

Scheduler* scheduler() noexcept { return g_scheduler.load(std::memory_order_acquire); }
void set_scheduler(Scheduler* s) noexcept { g_scheduler.store(s, std::memory_order_release); }

void futex_wait(std::atomic<uint32_t>& word, uint32_t expected, long timeout_ns) noexcept {
  timespec ts{timeout_ns / 1'000'000'000, timeout_ns % 1'000'000'000};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected,
          timeout_ns > 0 ? &ts : nullptr, nullptr, 0);
}

void futex_wake(std::atomic<uint32_t>& word, int n) noexcept {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, n, nullptr,
          nullptr, 0);
}

const char* state_name(State s) noexcept {
  switch (s) {
    case State::kNew: return "new";
    case State::kReady: return "ready";
    case State::kRunning: return "running";
    case State::kBlocked: return "blocked";
    case State::kWaiting: return "waiting-in-tsunagi";
    case State::kDone: return "done";
  }
  return "?";
}

// ---- Settings ----------------------------------------------------------------------

bool load_settings(const tsu_ult_config_t* config, Settings& out, const char*& error) noexcept {
  out = Settings{};
  out.workers = default_workers();
  if (!scheduler_settings().apply(out, error)) return false;
#if TSU_FAULT_INJECTION
  if (const char* v = std::getenv("TSU_ULT_TEST_FAULTS")) {
    // Test-only: a comma-separated list of fault names (settings.hpp).
    const char* p = v;
    while (*p) {
      const char* e = std::strchr(p, ',');
      const std::size_t n = e ? static_cast<std::size_t>(e - p) : std::strlen(p);
      auto is = [&](const char* name) { return std::strlen(name) == n && !std::strncmp(p, name, n); };
      if (n == 0) {
      } else if (is("queue_oom")) {
        out.faults.queue_oom = true;
      } else if (is("handover_eagain")) {
        out.faults.handover_eagain = true;
      } else if (is("handover_lost")) {
        out.faults.handover_lost = true;
      } else {
        error = "TSU_ULT_TEST_FAULTS: expected names from queue_oom, handover_eagain, handover_lost";
        return false;
      }
      p += n;
      if (*p == ',') ++p;
    }
  }
#endif
  if (config) {
    if (config->struct_size < offsetof(tsu_ult_config_t, fp_flags)) {
      error = "tsu_ult_config_t.struct_size is too small";
      return false;
    }
    if (config->field_mask & TSU_ULT_CONFIG_WORKERS) {
      if (config->workers > 4096) {
        error = "tsu_ult_config_t.workers: at most 4096";
        return false;
      }
      if (config->workers) out.workers = config->workers;
    }
    if (config->field_mask & TSU_ULT_CONFIG_STACK_SIZE) {
      if (config->stack_size < 16 * 1024 || config->stack_size > (1ull << 30)) {
        error = "tsu_ult_config_t.stack_size: from 16 KiB to 1 GiB";
        return false;
      }
      out.stack_size = config->stack_size;
    }
    if (config->field_mask & TSU_ULT_CONFIG_GUARD) {
      if (config->guard != 0 && config->guard != 1) {
        error = "tsu_ult_config_t.guard: 0 or 1";
        return false;
      }
      out.guard = config->guard == 1;
    }
    if (config->field_mask & TSU_ULT_CONFIG_FP_FLAGS) {
      if (config->struct_size < offsetof(tsu_ult_config_t, fp_flags) + sizeof(int32_t)) {
        error = "tsu_ult_config_t.struct_size is too small for fp_flags";
        return false;
      }
      if (config->fp_flags != TSU_ULT_FP_FLAGS_FAST && config->fp_flags != TSU_ULT_FP_FLAGS_EXACT) {
        error = "tsu_ult_config_t.fp_flags: TSU_ULT_FP_FLAGS_FAST or TSU_ULT_FP_FLAGS_EXACT";
        return false;
      }
      out.fp_exact = config->fp_flags == TSU_ULT_FP_FLAGS_EXACT;
    }
  }
  return true;
}

// ---- The scheduler -----------------------------------------------------------------

Scheduler::Scheduler(const Settings& s) : settings_(s), pool_(s.stack_size, s.guard) {
  workers_.reserve(s.workers);
  for (uint32_t i = 0; i < s.workers; ++i) workers_.push_back(std::make_unique<Worker>(*this, i));
}

Scheduler::~Scheduler() = default;

void Scheduler::start() {
  if (settings_.guard) install_overflow_reporter();
  for (auto& w : workers_) w->start();
}

void Scheduler::stop() {
  while (live() != 0) {
    timespec ts{0, 200'000};
    nanosleep(&ts, nullptr);
  }
  stopping_.store(true, std::memory_order_release);
  wake_seq_.fetch_add(1, std::memory_order_seq_cst);
  futex_wake(wake_seq_, INT32_MAX);
  for (auto& w : workers_) w->join_thread();
}

// Every count only grows, and a thread's creation is counted (release)
// before it can run, so before it can end or create others.  The ends are
// read first (acquire): every creation that led to an end read is then seen
// by the reads of creations that follow, so created - finished is at least
// the number live at the time of the later reads, and 0 only if none is.
uint64_t Scheduler::live() const noexcept {
  uint64_t finished = other_finished_.load(std::memory_order_acquire);
  for (const auto& w : workers_) finished += w->counters.finished.load(std::memory_order_acquire);
  uint64_t created = pthread_created_.load(std::memory_order_acquire);
  for (const auto& w : workers_) created += w->counters.created.load(std::memory_order_acquire);
  return created - finished;
}

uint64_t Scheduler::next_id(Worker* w) noexcept {
  const uint64_t stride = workers_.size() + 1;
  if (w) return w->take_id_seq() * stride + w->index() + 1;
  return (next_id_.fetch_add(1, std::memory_order_relaxed) + 1) * stride;
}

Ult* Scheduler::new_record(Worker* w) noexcept {
  Ult* u = w ? w->take_record() : nullptr;
  if (u) {
    // Reset a reused record (its lock is free: it was released at the end).
    u->fctx = nullptr;
    u->fresh = false;
    u->stack = Stack{};
    u->value = nullptr;
    u->keys = nullptr;
    u->san = SanitizerContext{};
    u->next = nullptr;
    u->x87_flags = 0;
    u->state.store(State::kNew, std::memory_order_relaxed);
    u->error = TSU_OK;
    u->remote = nullptr;
    u->proxy = false;
    u->origin_rank = 0;
    u->done = false;
    u->detached = false;
    u->joiner = nullptr;
    u->ended_into_joiner = false;
    u->inline_exit = nullptr;
    u->listed = false;
    u->name[0] = '\0';
    return u;
  }
  return util::RecordPool<Ult>::make();
}

void Scheduler::free_record(Ult* u) noexcept {
  util::RecordPool<RemoteInfo>::drop(u->remote);
  u->remote = nullptr;
  if (Worker* w = current_worker_once(); w && &w->scheduler() == this) {  // (no switch here)
    w->give_record(u);
  } else {
    util::RecordPool<Ult>::drop(u);
  }
}

void Scheduler::make_ready(Ult* u, Worker* hint) noexcept {
  if (u->state.load(std::memory_order_relaxed) != State::kNew)
    u->state.store(State::kReady, std::memory_order_relaxed);
  Worker* w = current_worker();
  const bool from_worker = w && &w->scheduler() == this;
  if (!from_worker) {
    w = hint ? hint
             : workers_[round_robin_.fetch_add(1, std::memory_order_relaxed) % workers_.size()]
                   .get();
  }
  if (!w->enqueue(u)) {
    // Out of memory: it went on w's woken stack (only w runs it), so wake
    // every sleeper (the futex cannot pick w); w itself sees it at its next
    // pick.  See Worker::enqueue.
    if (!from_worker) notify_all();
    return;
  }
  if (from_worker) {
    // This worker is awake and will run it; waking another one is only a
    // help, so no fence: a worker that misses it sleeps at most its timeout.
    if (sleepers_.load(std::memory_order_relaxed) != 0 && workers_.size() > 1) notify();
  } else {
    notify();
  }
}

void Scheduler::notify() noexcept {
  // A seq_cst read-modify-write (not a fence: ThreadSanitizer does not model
  // fences) orders the push before it against the sleepers_ increment of
  // idle_wait.  (On x86 the locked instruction is a full barrier; elsewhere a
  // missed wake-up costs at most the sleeper's timeout.)
  if (sleepers_.fetch_add(0, std::memory_order_seq_cst) != 0) {
    wake_seq_.fetch_add(1, std::memory_order_seq_cst);
    futex_wake(wake_seq_, 1);
  }
}

void Scheduler::notify_all() noexcept {
  if (sleepers_.fetch_add(0, std::memory_order_seq_cst) != 0) {
    wake_seq_.fetch_add(1, std::memory_order_seq_cst);
    futex_wake(wake_seq_, INT32_MAX);
  }
}

bool Scheduler::any_queued() const noexcept {
  for (const auto& w : workers_)
    if (w->queue().size_hint() != 0 || w->has_nursery() || w->has_woken()) return true;
  return false;
}

void Scheduler::idle_wait(Worker&, long timeout_ns) noexcept {
  sleepers_.fetch_add(1, std::memory_order_seq_cst);
  const uint32_t seq = wake_seq_.load(std::memory_order_seq_cst);
  // The queue sizes read below come after the seq_cst increment above (see
  // notify); a push we miss found sleepers_ != 0 and bumps wake_seq_.
  if (!any_queued() && !stopping()) futex_wait(wake_seq_, seq, timeout_ns);
  sleepers_.fetch_sub(1, std::memory_order_seq_cst);
}

// ---- Thread lifecycle ------------------------------------------------------------

__attribute__((noinline)) Ult* current_ult() noexcept {
  Worker* w = current_worker();
  return w ? w->current() : nullptr;
}

void wake(Waiter* w) noexcept {
  if (Ult* u = w->ult) {
    scheduler()->make_ready(u, u->worker);
    return;
  }
  w->woken.store(1, std::memory_order_release);
  futex_wake(w->woken, 1);
}

void block(Waiter& w, Spinlock& held) noexcept {
  if (Ult* self = w.ult) {
    self->state.store(State::kBlocked, std::memory_order_relaxed);
    Worker* worker = self->worker;
    worker->switch_to(self, worker->next_local(), Action::kRelease, &held);
    return;
  }
  held.unlock();
  while (w.woken.load(std::memory_order_acquire) == 0) futex_wait(w.woken, 0, 0);
}

void exit_current(Ult* self, void* value) noexcept {
  if (self->inline_exit) {
    // Run inline by its joiner: back to Worker::run_inline's frame.
    auto* env = static_cast<std::jmp_buf*>(self->inline_exit);
    Worker::end_inline(self, value);
    std::longjmp(*env, 1);
  }
  self->value = value;
  run_key_destructors(self);
  Worker* w = self->worker;
  w->maybe_poll();
  // A ULT joining us runs next, directly: its context was saved before it
  // released our join lock (block()), and only our end wakes it.  The
  // landing side completes us (complete_thread sees the joiner is running
  // and does not wake it).
  Ult* next = nullptr;
  self->join_lock.lock();
  if (self->joiner && self->joiner->ult && !self->detached) next = self->joiner->ult;
  self->ended_into_joiner = next != nullptr;
  self->join_lock.unlock();
  if (!next) next = w->next_local();
  w->switch_to(self, next, Action::kFinish);
  std::abort();  // unreachable: a finished thread is never resumed
}

void complete_thread(Ult* u) noexcept {
  Scheduler* s = scheduler();
  if (u->home) u->home->live_remove(u);
  if (u->keys) free_key_values(u);
  Worker* w = current_worker();  // (always a worker: finish, ready_to_run)
  if (u->ended_into_joiner) {
    // exit_current saw its joiner (a ULT, blocked until now) under the lock
    // and switched to it: the joiner runs this, nobody else touches the
    // join record any more.
    u->state.store(State::kDone, std::memory_order_relaxed);
    u->done = true;
    if (w) WorkerCounters::bump(w->counters.finished);
    else s->note_finished();
    return;
  }
  u->join_lock.lock();
  u->state.store(State::kDone, std::memory_order_relaxed);
  u->done = true;
  const bool detached = u->detached;
  Waiter* joiner = u->joiner;
  u->join_lock.unlock();
  // After the unlock a joiner may free the record: use only the copies.
  if (detached) {
    s->free_record(u);
  } else if (joiner && !(joiner->ult && w && joiner->ult == w->current())) {
    wake(joiner);  // (a ULT joiner already running here was switched to by exit)
  }
  if (w) WorkerCounters::bump(w->counters.finished);
  else s->note_finished();
}

tsu_status_t create_thread(Scheduler& s, const CreateArgs& c, Ult** out) noexcept {
  Worker* w = current_worker_once();  // (no switch here)
  if (w && &w->scheduler() != &s) w = nullptr;
  Ult* u = s.new_record(w);
  if (!u) return TSU_ERR_NO_MEMORY;
  u->fn = c.fn;
  u->arg = c.arg;
  u->stack_size = c.stack_size ? c.stack_size : s.settings().stack_size;
  u->detached = c.detached;
  u->remote = c.remote;
  u->origin_rank = c.origin_rank;
  u->id = s.next_id(w);
  u->home = w ? w : &s.worker(0);
  if (c.name) {
    std::strncpy(u->name, c.name, TSU_ULT_NAME_MAX);
    u->name[TSU_ULT_NAME_MAX] = '\0';
  } else {
    u->name[0] = '\0';
  }
  // A worker's new thread joins the live list when it leaves the nursery
  // (queued, stolen, run by a join, shown by a dump); one run inline by its
  // joiner never does (two locked instructions saved).
  if (!w) u->home->live_add(u);
  // Counted before it can run (Scheduler::live relies on it).
  if (w) {
    WorkerCounters::bump(w->counters.created);
  } else {
    s.count_pthread_create();
  }
  if (out) *out = u;
  // A worker's new thread waits in its nursery (no lock; see Worker); after
  // that or make_ready the thread may run and (if detached) end at once.
  if (w) {
    w->put_in_nursery(u);
    return TSU_OK;
  }
  s.make_ready(u);  // (never fails: see Scheduler::make_ready)
  return TSU_OK;
}

bool current_stack_guard_hit(const std::byte* addr, std::size_t page, char* name,
                             std::size_t name_len, uint64_t& id) noexcept {
  Ult* u = current_ult();
  if (!u || !u->stack.guarded) return false;
  // Also a little below the guard page: a large frame may jump over part of it.
  if (addr >= u->stack.base || addr + 4 * page < u->stack.base) return false;
  std::size_t i = 0;
  for (; i + 1 < name_len && u->name[i]; ++i) name[i] = u->name[i];
  name[i] = '\0';
  id = u->id;
  return true;
}

}  // namespace tsu::ult
