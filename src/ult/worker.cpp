#include "worker.hpp"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>

#include "keys.hpp"
#include "record_pool.hpp"
#include "remote.hpp"
#include "scheduler.hpp"

namespace tsu::ult {

constinit thread_local Worker* t_worker __attribute__((tls_model("initial-exec"))) = nullptr;

namespace {
uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}
constexpr uint32_t kMaxFreeRecords = 1024;
constexpr uint64_t kBusyPollNs = 20'000;
// How long a thread must wait in its creator's nursery before another worker
// may take it (Worker::nursery_watch_), and how often an idle worker looks
// (every kNurseryScanEvery-th steal attempt: a look reads a line the creator
// writes on every create, so looking on every idle turn would slow it down).
constexpr uint64_t kNurseryGraceNs = 2'000;
constexpr uint32_t kNurseryScanEvery = 8;
}  // namespace

__attribute__((noinline)) Worker* current_worker() noexcept {
  Worker* w = t_worker;
  asm volatile("" ::: "memory");
  return w;
}

Worker::Worker(Scheduler& s, uint32_t index)
    : sched_(s),
      index_(index),
      stacks_(s.stack_pool()),
      fault_queue_oom_(s.settings().faults.queue_oom),
      solo_(s.settings().workers == 1),
      fp_exact_(s.settings().fp_exact),
      yield_cpu_(s.settings().yield_cpu),
      nursery_watch_(s.settings().workers) {}

Worker::~Worker() {
  while (free_records_) {
    Ult* u = free_records_;
    free_records_ = u->next;
    util::RecordPool<Ult>::drop(u);
  }
}

void Worker::start() {
  thread_ = std::thread([this] { loop(); });
}

void Worker::join_thread() {
  if (thread_.joinable()) thread_.join();
}

// ---- Switching -----------------------------------------------------------------

bool Worker::prepare(Ult* u) noexcept {
  u->stack = stacks_.take(u->stack_size);
  if (!u->stack.base) return false;
  mxcsr_before_switch(fp_exact_);  // (make_fcontext saves the caller's MXCSR for it)
  u->fctx = make_fcontext(u->stack.top(), u->stack.size, &Worker::entry);
  u->fresh = true;
#if TSU_ULT_TSAN
  u->san.tsan_fiber = __tsan_create_fiber(0);
#endif
#if TSU_ULT_ASAN
  u->san.asan_fake_stack = nullptr;
  u->san.stack_bottom = u->stack.base;
  u->san.stack_size = u->stack.size;
#endif
  return true;
}

bool Worker::ready_to_run(Ult* u) noexcept {
  if (u->state.load(std::memory_order_relaxed) != State::kNew) return true;
  if (prepare(u)) {
    // Has its stack now: not kNew any more, so the ready_to_run of the
    // switch_to that follows the loop's check does not prepare it again
    // (that took a second stack and lost the first one: a fresh, untouched
    // stack, page faults and all, for every thread the loop started, and the
    // pool mapping a new slab every 16 threads).
    u->state.store(State::kReady, std::memory_order_relaxed);
    return true;
  }
  // No stack: the thread ends without running; its joiner gets the error.
  u->error = TSU_ERR_NO_MEMORY;
  std::fprintf(stderr, "tsunagi-ult: no stack for thread %llu: not run\n",
               static_cast<unsigned long long>(u->id));
  complete_thread(u);
  return false;
}

Worker* Worker::switch_to(Ult* from, Ult* to, Action a, Spinlock* release) noexcept {
  if (from) list_if_inline(from);
  prev_ = from;
  action_ = a;
  release_ = release;
  if (to && !ready_to_run(to)) to = nullptr;  // (the loop checks before it switches)
  current_ = to;
  fp_before_switch(fp_exact_, from ? &from->x87_flags : nullptr, to ? &to->x87_flags : nullptr,
                   x87_env_);
  WorkerCounters::bump(counters.switches);
  SanitizerContext& from_san = from ? from->san : sched_san_;
  if (!to) {
    sanitizer_before_switch(from_san, sched_san_, a == Action::kFinish);
    return land(jump_fcontext(sched_ctx_, this));  // the loop runs land() itself
  }
  to->state.store(State::kRunning, std::memory_order_relaxed);
  to->worker = this;
  sanitizer_before_switch(from_san, to->san, a == Action::kFinish);
  if (to->fresh) {  // its first run: Worker::entry runs land()
    to->fresh = false;
    return land(jump_fcontext(to->fctx, this));
  }
  // Resumed on top: land_on_top already ran for us if we are resumed the
  // same way, and land() below sees a null fctx.
  return land(ontop_fcontext(to->fctx, this, &Worker::land_on_top));
}

Transfer Worker::land_on_top(Transfer t) noexcept { return Transfer{nullptr, land(t)}; }

Transfer Worker::yielded_on_top(Transfer t) noexcept {
#if TSU_ULT_TSAN || TSU_ULT_ASAN
  return land_on_top(t);  // (the sanitizers' landing annotations)
#else
  auto* w = static_cast<Worker*>(t.data);
  w->prev_->fctx = t.fctx;
  w->prev_ = nullptr;
  return Transfer{nullptr, w};
#endif
}

Worker* Worker::land(Transfer t) noexcept {
  auto* w = static_cast<Worker*>(t.data);
  if (!t.fctx) return w;  // resumed on top: land_on_top did it all
  sanitizer_after_switch(w->current_ ? w->current_->san : w->sched_san_);
  Ult* p = w->prev_;
  if (!p) {
    w->sched_ctx_ = t.fctx;
    w->action_ = Action::kNone;
    return w;
  }
  p->fctx = t.fctx;
  switch (w->action_) {
    case Action::kNone:
      break;
    case Action::kRequeue:
      p->state.store(State::kReady, std::memory_order_relaxed);
      w->push_yielded(p);
      break;
    case Action::kRelease:
      w->release_->unlock();
      break;
    case Action::kPark:
      w->park(p);
      break;
    case Action::kParkUntilWoken:
      // p's context is saved: only now may a waker see it parked.
      p->state.store(State::kWaiting, std::memory_order_relaxed);
      p->park_drive = (w->park_flags_ & TSU_PARK_DRIVE_PROGRESS) != 0;
      if (tsu_waiter_commit(w->park_waiter_, p)) {
        ++w->parked_;
        if (p->park_drive) ++w->parked_drive_;
      } else {
        w->push_resumable(p);  // woken before it parked: runs again
      }
      break;
    case Action::kFinish:
      w->finish(p);
      break;
  }
  w->prev_ = nullptr;
  w->action_ = Action::kNone;  // what yield_fast_next leaves with
  return w;
}

void Worker::entry(Transfer t) {
  Worker* w = land(t);
  Ult* self = w->current_;
  void* v = self->fn(self->arg);
  exit_current(self, v);
}

// ---- Inline run of a joined thread that had not started -----------------------------

namespace {
// Room kept on the host stack beyond the inline thread's own stack size (the
// frames of run_inline and the join above it).
constexpr std::size_t kInlineMargin = 4096;
}  // namespace

bool Worker::can_run_inline(const Ult* self, const Ult* u) noexcept {
  const std::byte* base = self->stack.base;
  if (!base) return false;
  const auto* sp = static_cast<const std::byte*>(__builtin_frame_address(0));
  return sp > base && static_cast<std::size_t>(sp - base) >= u->stack_size + kInlineMargin;
}

__attribute__((noinline)) void Worker::run_inline(Ult* host, Ult* u) noexcept {
  Worker* w = host->worker;
  // The borrowed stack is recorded for the overflow report only; it is never
  // given back through u (u's end does not go through finish()).
  u->stack = host->stack;
  u->stack.pooled = false;
  u->san = host->san;  // same stack: same sanitizer fiber
  u->worker = w;
  host->state.store(State::kBlocked, std::memory_order_relaxed);
  u->state.store(State::kRunning, std::memory_order_relaxed);
  w->current_ = u;
  // No switch parts u's floating-point environment from the host's: u
  // starts with the host's, and in exact mode the host gets its own back
  // when u ends (fp_state.hpp).
  const bool fp_exact = w->fp_exact_;
  const FpSaved host_fp = fp_exact ? fp_save_exact() : FpSaved{};
  std::jmp_buf env;
  u->inline_exit = &env;
  // (host, u and the FP locals are not modified after setjmp: valid after a longjmp.)
  if (setjmp(env) == 0) end_inline(u, u->fn(u->arg));
  // u ended here or in tsu_ult_exit (longjmp): on the worker it ended on.
  Worker* now = u->worker;
  if (fp_exact) fp_restore_exact(host_fp, now->x87_env_);
  host->san = u->san;
  u->san = SanitizerContext{};
  u->stack = Stack{};
  host->worker = now;
  host->state.store(State::kRunning, std::memory_order_relaxed);
  now->current_ = host;
}

void Worker::end_inline(Ult* u, void* value) noexcept {
  u->value = value;
  if (u->keys) run_key_destructors(u);
  Worker* w = u->worker;  // where it runs now (switch_to sets it on every resume)
  w->maybe_poll();  // as exit_current does: batches leave, requests are served
  // In the live list only if it ever switched away (list_if_inline).
  if (u->listed) u->home->live_remove(u);
  if (u->keys) free_key_values(u);
  u->inline_exit = nullptr;
  // Only the joiner (host, blocked under us) reads the join record now.
  u->state.store(State::kDone, std::memory_order_relaxed);
  u->done = true;
  WorkerCounters::bump(w->counters.finished);
}

// ---- Choosing what runs next -----------------------------------------------------

void Worker::park(Ult* u) noexcept {
  u->state.store(State::kWaiting, std::memory_order_relaxed);
  u->next = nullptr;
  if (waiting_tail_) waiting_tail_->next = u; else waiting_head_ = u;
  waiting_tail_ = u;
  ++waiting_count_;
}

void Worker::spill_yielded() noexcept {
  while (Ult* u = pop_yielded()) sched_.make_ready(u, this);
}

void Worker::put_in_nursery(Ult* u) noexcept {
  // The previous newest goes to the queue (it was made ready first).
  if (nursery_line_.thread.load(std::memory_order_relaxed)) flush_nursery();
  std::atomic<uint64_t>& puts = nursery_line_.puts;
  puts.store(puts.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  nursery_line_.thread.store(u, std::memory_order_release);
  Scheduler& s = sched_;
  if (s.worker_count() > 1) s.help_wanted();
}

void Worker::flush_nursery() noexcept {
  // (Owner only.  The only worker has no thief to race: no exchange.)
  Ult* u = nullptr;
  if (solo_) {
    u = nursery_line_.thread.load(std::memory_order_relaxed);
    nursery_line_.thread.store(nullptr, std::memory_order_relaxed);
  } else {
    u = nursery_line_.thread.exchange(nullptr, std::memory_order_acquire);
  }
  if (u) {
    u->home->live_add(u);
    enqueue(u);  // (out of memory: on the woken stack, see enqueue)
  }
}

void Worker::yield(Ult* self) noexcept {
  // The slow path (tsu_ult_yield tried yield_fast first): the remote layer's
  // pass now and then, then the next thread by the usual order.
  maybe_poll();
  if (Ult* next = next_local()) {
    switch_to(self, next, Action::kRequeue);
    return;
  }
  // Nothing else to run here: a thread that yields in a loop waits for
  // another (on another worker, or another process); holding the CPU that
  // one needs costs a time slice a turn where threads outnumber CPUs.
  if (cpu_wanted(now_ns())) sched_yield();
}

void Worker::take_woken() noexcept {
  // Acquire: pairs with each waker's release compare-exchange (a chain of
  // read-modify-writes), so every record's wake_next is visible.
  Ult* u = woken_.exchange(nullptr, std::memory_order_acquire);
  Ult* fifo = nullptr;  // the stack reversed: oldest wake first
  while (u) {
    Ult* next = u->wake_next;
    u->wake_next = fifo;
    fifo = u;
    u = next;
  }
  while (fifo) {
    Ult* next = fifo->wake_next;
    // A parked thread (kWaiting since land() committed its park) or one
    // enqueue() put here (kReady or kNew: the run queue could not grow).
    if (fifo->state.load(std::memory_order_relaxed) == State::kWaiting) {
      --parked_;
      if (fifo->park_drive) --parked_drive_;
    }
    push_resumable(fifo);
    fifo = next;
  }
}

Ult* Worker::next_local() noexcept {
  if (nursery_line_.thread.load(std::memory_order_relaxed)) flush_nursery();
  const uint32_t tick = ++tick_;
  // Threads their completion woke go first: their wait is over.
  if (woken_.load(std::memory_order_relaxed)) take_woken();
  if (Ult* u = resumable_head_) {
    resumable_head_ = u->next;
    if (!resumable_head_) resumable_tail_ = nullptr;
    return u;
  }
  // Yielded threads go behind the shared queue's (FIFO): when that queue
  // has threads they are moved there; when it is empty (two threads taking
  // turns) they run from the private list without a lock.  Every 64 picks
  // they are moved anyway, so idle workers can steal them.
  if (yielded_head_ && (rq_.size_hint() != 0 || (tick & 63) == 0)) spill_yielded();
  // Every 8th pick goes to a waiter first, so polling waiters are not
  // starved by a busy queue (and a yield loop does not starve them).
  const bool waiter_first = waiting_head_ && (tick & 7) == 0;
  if (!waiter_first) {
    if (Ult* u = rq_.pop()) return u;
    if (Ult* u = pop_yielded()) return u;
  }
  if (Ult* u = waiting_head_) {
    waiting_head_ = u->next;
    if (!waiting_head_) waiting_tail_ = nullptr;
    --waiting_count_;
    return u;
  }
  return waiter_first ? rq_.pop() : nullptr;
}

void Worker::maybe_poll() noexcept {
  // A busy worker's pass of the remote layer every 64 calls: batched
  // messages leave, load counts go out, requests from other ranks are served
  // (handlers may run here).  Only where the caller holds no lock: yield,
  // exit, the wait hook.  polling_: the wait hook must not park the caller
  // from inside this pass.
  // Also at most one pass per kBusyPollNs: a pass costs a progress pass
  // (about a microsecond), which every 64 switches would double a switch.
  // (The tick counts every call, with or without the remote layer: yield's
  // fast path relies on it moving on.)
  if ((++poll_tick_ & 63) != 0) return;
  Remote* r = sched_.remote();
  if (!r || polling_) return;
  const uint64_t now = now_ns();
  if (now - last_busy_poll_ns_ < kBusyPollNs && !r->has_outgoing()) return;
  last_busy_poll_ns_ = now;
  polling_ = true;
  r->poll(*this, false);
  polling_ = false;
}

Ult* Worker::steal() noexcept {
  const uint32_t n = sched_.worker_count();
  const bool look_in_nurseries = ++steal_calls_ % kNurseryScanEvery == 0;
  uint64_t now = 0;  // read once, when a nursery is found occupied
  for (uint32_t i = 1; i < n; ++i) {
    Worker& v = sched_.worker((index_ + i) % n);
    Ult* u = v.rq_.steal();
    if (!u && look_in_nurseries && v.nursery_line_.thread.load(std::memory_order_relaxed))
      u = take_aged_nursery(v, now);
    if (u) {
      WorkerCounters::bump(counters.stolen);
      return u;
    }
  }
  return nullptr;
}

Ult* Worker::take_aged_nursery(Worker& v, uint64_t& now) noexcept {
  // Only v puts threads in its nursery, and counts each put before it; so an
  // unchanged count and an occupied nursery mean the thread seen there last
  // time is still there (or was taken and none put since: the exchange
  // below then finds nothing).
  NurseryWatch& seen = nursery_watch_[v.index_];
  const uint64_t puts = v.nursery_line_.puts.load(std::memory_order_relaxed);
  if (!now) now = now_ns();
  if (seen.puts != puts) {
    seen.puts = puts;
    seen.since_ns = now;
    return nullptr;
  }
  if (now - seen.since_ns < kNurseryGraceNs) return nullptr;
  Ult* u = v.nursery_line_.thread.exchange(nullptr, std::memory_order_acquire);
  if (u) u->home->live_add(u);
  return u;
}

void Worker::finish(Ult* u) noexcept {
  stacks_.give(u->stack);
  u->stack = Stack{};
#if TSU_ULT_TSAN
  __tsan_destroy_fiber(u->san.tsan_fiber);
  u->san.tsan_fiber = nullptr;
#endif
  complete_thread(u);
}

int Worker::wait_hook(void*) {
  Worker* w = current_worker();
  Ult* self = w ? w->current_ : nullptr;
  if (!self || w->polling_) return 0;
  w->maybe_poll();
  Ult* next = w->next_local();
  if (!next) return 0;
  // A waiting round with nothing else queued: let other processes (the
  // progress thread, the peer rank) have the CPU once per round.
  if (w->rq_.size_hint() == 0 && ++w->hook_polls_ >= w->waiting_count_ + 1) {
    w->hook_polls_ = 0;
    if (w->cpu_wanted(now_ns())) sched_yield();
  }
  w->switch_to(self, next, Action::kPark);
  // Parked threads are resumed only by their own worker: still on `w`.
  return 1;
}

int Worker::park_hook(void*, tsu_waiter_t* waiter, uint32_t flags) {
  Worker* w = current_worker();
  Ult* self = w ? w->current_ : nullptr;
  if (!self || w->polling_) return 0;
  w->maybe_poll();
  // Nothing else to run: to the worker's loop, which sleeps until a wake (or
  // a new thread) comes.  In manual progress the loop would only spin
  // progress passes for us: the caller polls in place instead (no switches,
  // the old cost), and parks as soon as another thread can run.
  Ult* next = w->next_local();
  if (!next && (flags & TSU_PARK_DRIVE_PROGRESS)) return 0;
  w->park_waiter_ = waiter;
  w->park_flags_ = flags;
  w->switch_to(self, next, Action::kParkUntilWoken);
  // Parked threads are resumed only by their own worker: still on `w`.
  return 1;
}

void Worker::unpark_hook(void*, void* token) {
  auto* u = static_cast<Ult*>(token);
  // u->worker was written before the commit (release), which the waker's
  // exchange read (acquire); u cannot move before it runs again.
  Worker* w = u->worker;
  w->push_woken(u);
  // The owner itself (a callback run by its progress pass) takes it at its
  // next pick; any other pthread wakes it if it sleeps (seq_cst push above,
  // then the sleepers check: see Scheduler::idle_wait).
  if (current_worker() != w) w->sched_.notify_all();
}

void Worker::loop() {
  t_worker = this;
  give_thread_altstack();
  tsu_set_wait_hook(&Worker::wait_hook, this);
  tsu_set_park_hook(&Worker::park_hook, &Worker::unpark_hook, this);
#if TSU_ULT_TSAN
  sched_san_.tsan_fiber = __tsan_get_current_fiber();
#endif
#if TSU_ULT_ASAN
  {
    pthread_attr_t attr;
    void* addr = nullptr;
    std::size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      pthread_attr_getstack(&attr, &addr, &size);
      pthread_attr_destroy(&attr);
    }
    sched_san_.stack_bottom = addr;
    sched_san_.stack_size = size;
  }
#endif
  uint32_t idle = 0;
  uint32_t drive_idle = 0;  // empty passes while driving progress for parked threads
  uint64_t idle_since = 0;
  uint32_t seen_sent = 0;  // sent_batches_ at the last idle turn
  uint32_t sent_at_idle = 0;  // sent_batches_ when the last idle spell began
  uint64_t spin_ns = sched_.settings().spin_ns;  // this idle spell's
  Remote* remote = sched_.remote();  // set before the workers start
  for (;;) {
    Ult* u = next_local();
    if (!u) u = steal();
    if (u) {
      idle = 0;
      drive_idle = 0;
      if (!ready_to_run(u)) continue;
      switch_to(nullptr, u, Action::kNone);
      continue;
    }
    // An idle pass: send batched messages, exchange load, drive progress.
    if (remote) {
      remote->poll(*this, true);
      // A handler of that pass made a thread runnable here (a spawned
      // thread, a joiner its exit value woke): run it at once, without this
      // idle turn's pause (the remote create+join path).
      if (has_runnable()) {
        idle = 0;
        continue;
      }
    }
    if (sched_.stopping() && sched_.live() == 0) break;
    if (has_waiting()) continue;
    // Threads parked in manual progress: nothing else completes their
    // requests, so keep driving progress (remote->poll above does; without
    // the remote layer, here).  With a progress thread, sleep below: the
    // wake comes with the completion.
    if (parked_drive_ != 0) {
      if (!remote) tsu_progress();
      // As a polling waiter's backoff did: spin a few empty passes, then
      // give the CPU away once per pass, so that on a shared CPU the peer
      // rank runs (spinning without it, a round trip waited for time slices).
      // (Only where another thread wants this CPU: cpu_share_watch.hpp.)
      if (++drive_idle > 32 && cpu_wanted(now_ns())) sched_yield(); else cpu_relax();
      continue;
    }
    drive_idle = 0;
    // Idle: poll for spin_ns (yielding the CPU now and then, where another
    // thread wants it), then sleep.
    const uint64_t now = now_ns();
    if (idle++ == 0) {
      idle_since = now;
      // Sent a spawn or an exit value since the last spell: its answer (or
      // the next spawn of a create + join loop) is a network round trip
      // away, often past spin_ns; sleeping through it costs a wake-up.
      const Settings& st = sched_.settings();
      spin_ns = sent_batches_ != sent_at_idle ? std::max(st.spin_ns, st.remote_spin_ns)
                                              : st.spin_ns;
      sent_at_idle = sent_batches_;
    }
    // The longer spin only while this CPU is ours: where another thread
    // wants it (ranks sharing cores), polling for the answer would take the
    // CPU from whoever computes it (docs/ult.md, *Progress*).
    const bool cpu_shared = cpu_wanted(now);
    const bool spinning =
        now - idle_since < (cpu_shared ? sched_.settings().spin_ns : spin_ns);
    if (spinning && !cpu_shared) {
      // This CPU is ours: spin without system calls (nothing to offer).
      seen_sent = sent_batches_;
      cpu_relax();
    } else if (sent_batches_ != seen_sent) {
      // Idle right after sending a spawn or an exit value (the remote
      // create+join path: its joiner, or the rank that runs it, now waits
      // for the other side): offer the CPU at once.  Where the peer's worker
      // shares this core it runs now, instead of after this loop's next 16
      // polls (a delay on every message: docs/ult.md); where it has its own
      // core the call returns.
      seen_sent = sent_batches_;
      sched_yield();
    } else if ((idle & 15) != 0) {
      cpu_relax();
    } else if (spinning) {
      sched_yield();
    } else {
      // With other ranks, wake up now and then to poll (manual progress).
      sched_.idle_wait(*this, remote ? 1'000'000 : 50'000'000);
      cpu_watch_.restart();
      idle = 0;
    }
  }
  tsu_set_wait_hook(nullptr, nullptr);
  tsu_set_park_hook(nullptr, nullptr, nullptr);
  drop_thread_altstack();
  t_worker = nullptr;
}

// ---- Records and the live list ---------------------------------------------------

Ult* Worker::take_record() noexcept {
  Ult* u = free_records_;
  if (u) {
    free_records_ = u->next;
    --free_count_;
  }
  return u;
}

void Worker::give_record(Ult* u) noexcept {
  if (free_count_ >= kMaxFreeRecords) {
    util::RecordPool<Ult>::drop(u);
    return;
  }
  u->next = free_records_;
  free_records_ = u;
  ++free_count_;
}

void Worker::live_add(Ult* u) noexcept {
  SpinGuard g(live_lock_);
  if (u->listed) return;
  u->listed = true;
  u->live_prev = nullptr;
  u->live_next = live_head_;
  if (live_head_) live_head_->live_prev = u;
  live_head_ = u;
}

void Worker::live_remove(Ult* u) noexcept {
  SpinGuard g(live_lock_);
  if (!u->listed) return;
  u->listed = false;
  if (u->live_prev) u->live_prev->live_next = u->live_next; else live_head_ = u->live_next;
  if (u->live_next) u->live_next->live_prev = u->live_prev;
  u->live_prev = u->live_next = nullptr;
}

}  // namespace tsu::ult
