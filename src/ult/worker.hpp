// A worker pthread: runs ULTs from its run queue, steals from the others'
// when idle, and switches between ULTs.
//
// The switch protocol.  A context (a ULT, or the worker's own loop: `nullptr`
// below) leaves by switch_to(from, to, action): it records `from` and what
// must be done with it in the worker, then switches.  land() runs first on
// the stack of the context that lands: it saves `from`'s context and only
// then performs the action (requeue it, release the lock of the wait queue
// it joined, park it on the private waiting list, or free its stack when it
// ended).  So a thread is never visible to another worker before its context
// is saved.
//
// Who runs land().  A thread that has run before is resumed with
// ontop_fcontext, which runs land() on top of its stack before it resumes
// (land_on_top), so the resumed context finds a transfer with a null fctx:
// the work is done.  That lets yield_fast leave by a tail call: the thread's
// saved return address is its caller's, and when it is resumed it returns
// straight there, with no frame of ours to return through (every such
// return would mispredict: the return stack buffer holds the other
// context's addresses).  A thread's first run (fresh, from make_fcontext)
// and the worker's loop are entered with jump_fcontext and run land()
// themselves (Worker::entry, switch_to).
//
// State owned by the worker's pthread only: current_, sched_ctx_, prev_,
// action_, waiting_, the caches, the counters' writes.  The run queue and the
// live list have their own locks.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "context.hpp"
#include "cpu_share_watch.hpp"
#include "fp_state.hpp"
#include "settings.hpp"
#include "run_queue.hpp"
#include "spinlock.hpp"
#include "stack_pool.hpp"
#include "thread.hpp"

namespace tsu::ult {

class Scheduler;

enum class Action : uint32_t {
  kNone,     // `from` was the worker's loop
  kRequeue,  // `from` yielded: back to the run queue
  kRelease,  // `from` blocked: release the wait queue's lock
  kPark,     // `from` waits in a tsunagi call: the private waiting list
  kParkUntilWoken,  // `from` waits in a tsunagi call until its completion wakes it
  kFinish    // `from` ended: its stack goes back, joiners are woken
};

// Per-worker counters: written by the owner only (load + store, no atomic
// read-modify-write; release, for Scheduler::live), read by anyone.
struct WorkerCounters {
  std::atomic<uint64_t> created{0}, finished{0}, switches{0}, stolen{0};
  static void bump(std::atomic<uint64_t>& c) noexcept {
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }
};

class Worker {
 public:
  Worker(Scheduler& s, uint32_t index);
  ~Worker();
  void start();
  void join_thread();

  // Switches from `from` (nullptr: this worker's loop) to `to` (nullptr: the
  // loop).  Returns the worker the caller runs on when it resumes.
  Worker* switch_to(Ult* from, Ult* to, Action a, Spinlock* release = nullptr) noexcept;
  // The next thread to run here without stealing: mostly the run queue, with
  // the private waiting list interleaved so waiters keep polling.
  Ult* next_local() noexcept;
  // Every 64th call, the remote layer's pass; only where no lock is held.
  void maybe_poll() noexcept;
  // tsu_ult_yield of the running ULT `self`: yield_fast_next, then
  // resume_yielded as a tail call; else yield().
  // Fast path: nothing new, nothing shared queued, no waiter or pass due, and
  // the private FIFO has a thread: switch to it directly (no lock, no
  // scheduler loop).  `self` joins that FIFO before the switch (only this
  // pthread reads it, after landing, where land_on_top saves self's context
  // first).  Returns the thread to resume (now current), or nullptr: nothing
  // done, take yield().
  __attribute__((always_inline)) Ult* yield_fast_next(Ult* self) noexcept {
    const uint32_t tick = tick_ + 1;
    const uint32_t poll_tick = poll_tick_ + 1;
    // (An inline-run thread switching away for the first time joins the live
    // list: the slow path does it, so this path makes no call and needs no
    // stack frame.)
    if ((poll_tick & 63) == 0 || (tick & 63) == 0 || !yielded_head_ ||
        nursery_line_.thread.load(std::memory_order_relaxed) || rq_.size_hint() != 0 || resumable_head_ ||
        woken_.load(std::memory_order_relaxed) ||
        (waiting_head_ && (tick & 7) == 0) || (self->inline_exit && !self->listed))
      return nullptr;
    tick_ = tick;
    poll_tick_ = poll_tick;
    // Rotate the FIFO: its head runs, self goes to its tail (the count stays).
    Ult* next = yielded_head_;
    Ult* after = next->next;
    self->next = nullptr;
    if (after) {
      yielded_tail_->next = self;
      yielded_head_ = after;
    } else {
      yielded_head_ = self;
    }
    yielded_tail_ = self;
    self->state.store(State::kReady, std::memory_order_relaxed);
    prev_ = self;  // (action_ is kNone: land() leaves it so)
    current_ = next;
    next->state.store(State::kRunning, std::memory_order_relaxed);
    next->worker = this;
    WorkerCounters::bump(counters.switches);
    fp_before_switch(fp_exact_, &self->x87_flags, &next->x87_flags, x87_env_);
    sanitizer_before_switch(self->san, next->san, false);
    return next;
  }
  // Switches to `next` (from yield_fast_next; it has run before, so it is
  // resumed on top: see the protocol above).  Returns TSU_OK when the
  // calling thread is resumed.  Written to be the caller's tail call.
  //
  // ontop_fcontext is called through a pointer typed to return a status:
  // the same registers (the assembly routine's ABI), but a return type the
  // compiler may tail-call from tsu_ult_yield.  When this thread is resumed,
  // the resumer's land_on_top returns {nullptr, worker}: rax is 0, TSU_OK.
  __attribute__((always_inline)) tsu_status_t resume_yielded(Ult* next) noexcept {
    // (noexcept: otherwise the call needs a terminate handler behind it,
    // and is no tail call.)
    using OntopAsStatus = tsu_status_t (*)(Fctx, void*, Transfer (*)(Transfer)) noexcept;
    static_assert(TSU_OK == 0, "a null fctx in rax reads as TSU_OK");
    // (Through void (*)(): GCC's spelling of "this cast is meant".  The
    // empty asm hides which function it is: knowing it, GCC would see the
    // declared return type again and refuse the tail call.)
    auto ontop = reinterpret_cast<OntopAsStatus>(reinterpret_cast<void (*)()>(&ontop_fcontext));
    asm("" : "+r"(ontop));
    return ontop(next->fctx, this, &Worker::yielded_on_top);
  }
  // The slow path: the remote layer's pass now and then, the usual order.
  void yield(Ult* self) noexcept;

  // The nursery: the newest thread created by this worker's ULTs, not yet in
  // the run queue.  Invariant: only the owner stores a thread into it, and
  // whoever exchanges or compare-exchanges it out (the owner, to queue it at
  // its next scheduling point or to run it at once on a join; a thief) owns
  // that thread; so each thread leaves it exactly once (the only worker of
  // its scheduler has no thief: it takes it out by a load and a store).  It lets create +
  // join of a new thread skip the run queue's lock, and keeps the FIFO order
  // (it is queued before the owner switches, at the next next_local()).
  void put_in_nursery(Ult* u) noexcept;
  // Takes `u` out of the nursery (true) if it is still there: the caller owns it.
  // The owner alone, when it is the only worker: no thief can race it, so
  // no compare-exchange (a locked instruction, a sixth of a create + join).
  bool take_from_nursery(Ult* u) noexcept;
  // For a thread taken from the nursery: gives it its stack; false (no
  // stack) puts it in the run queue instead, where it fails normally.
  bool ready_or_requeue(Ult* u) noexcept {
    if (prepare(u)) {
      u->state.store(State::kReady, std::memory_order_relaxed);  // has its stack now
      return true;
    }
    enqueue(u);
    return false;
  }
  // Queues a runnable thread here (any pthread).  True: on the run queue.
  // False: the queue could not grow (out of memory), so it went on the woken
  // stack instead, which is intrusive (Ult::wake_next) and never allocates;
  // the thread then runs on this worker only (not stealable), before the
  // queue's threads.  Either way it is never lost.  A caller on another
  // pthread must wake this worker if it sleeps (Scheduler::notify_all).
  bool enqueue(Ult* u) noexcept {
    if (!(kFaultInjection && fault_queue_oom_) && rq_.push(u)) return true;
    push_woken(u);
    return false;
  }
  // Join of a thread not started yet (taken from the nursery): whether it
  // may run inline on the running ULT `self`'s stack, i.e. at least its own
  // stack size is left there below the caller's frame (pooled stacks reserve
  // twice the default size for this, see stack_pool.hpp).
  static bool can_run_inline(const Ult* self, const Ult* u) noexcept;
  // Runs `u` to its end as a plain call on `host`'s stack (host: the running
  // ULT, its joiner): no stack from the pool, no context switch.  `u` is the
  // current thread meanwhile (it may block, yield and move to another worker
  // like any thread; `host` stays blocked under it).  Returns when u has
  // ended (returned or tsu_ult_exit), with `host` current again on the
  // worker it ended on, and u's record done (the caller frees it).
  static void run_inline(Ult* host, Ult* u) noexcept;
  // The end of an inline-run thread (return or tsu_ult_exit).
  static void end_inline(Ult* u, void* value) noexcept;
  // An inline-run thread is not in the live list while it runs straight
  // through; once it switches away (yields, blocks) it is, so dumps show it.
  static void list_if_inline(Ult* from) noexcept {
    if (from->inline_exit && !from->listed) from->home->live_add(from);
  }
  bool has_nursery() const noexcept { return nursery_line_.thread.load(std::memory_order_relaxed) != nullptr; }
  // Whether next_local() would find a thread (owner only; the shared queue
  // and the woken stack are hints).
  // The remote layer sent a spawn or exit-value batch on this pthread (the
  // worker's loop or one of its threads): see the loop's idle turn.
  void note_sent() noexcept { ++sent_batches_; }
  bool has_runnable() const noexcept {
    return has_nursery() || rq_.size_hint() != 0 || has_woken() || resumable_head_ ||
           yielded_head_;
  }
  uint64_t take_id_seq() noexcept { return ++id_seq_; }

  RunQueue& queue() noexcept { return rq_; }
  uint32_t index() const noexcept { return index_; }
  Ult* current() const noexcept { return current_; }
  bool has_waiting() const noexcept { return waiting_head_ != nullptr; }
  StackCache& stacks() noexcept { return stacks_; }
  Scheduler& scheduler() noexcept { return sched_; }
  WorkerCounters counters;

  // Free ULT records (owner only).
  Ult* take_record() noexcept;
  void give_record(Ult* u) noexcept;

  // Live list of the ULTs created here (for dumps).
  void live_add(Ult* u) noexcept;
  void live_remove(Ult* u) noexcept;
  template <typename F>
  void live_for_each(F&& f) {
    SpinGuard g(live_lock_);
    for (Ult* u = live_head_; u; u = u->live_next) f(*u);
  }

  // The tsunagi wait hook installed on this pthread.
  static int wait_hook(void* ctx);
  // The tsunagi park hooks (tsu_set_park_hook).  A parked thread stays
  // pinned to its worker like a polling waiter (libtsunagi's per-pthread
  // state): the unpark pushes it on that worker's woken stack, which only
  // the owner drains, into its private resumable FIFO (never the run queue,
  // where thieves would take it).
  static int park_hook(void* ctx, tsu_waiter_t* waiter, uint32_t flags);
  static void unpark_hook(void* ctx, void* token);
  bool has_woken() const noexcept { return woken_.load(std::memory_order_relaxed) != nullptr; }

 private:
  static void entry(Transfer t);
  static Worker* land(Transfer t) noexcept;
  // Runs land() on top of the stack of a thread being resumed (see the
  // protocol above); the thread then sees a null fctx.
  static Transfer land_on_top(Transfer t) noexcept;
  // land_on_top for yield_fast: `from` was a thread that yielded (action
  // kNone), so all there is to do is save its context.
  static Transfer yielded_on_top(Transfer t) noexcept;
  void loop();
  bool prepare(Ult* u) noexcept;  // stack + initial context for a new thread
  bool ready_to_run(Ult* u) noexcept;  // prepares a new thread; false: it could not run
  void finish(Ult* u) noexcept;
  void park(Ult* u) noexcept;
  void push_yielded(Ult* u) noexcept {
    u->next = nullptr;
    if (yielded_tail_) yielded_tail_->next = u; else yielded_head_ = u;
    yielded_tail_ = u;
    ++yielded_count_;
  }
  Ult* pop_yielded() noexcept {
    Ult* u = yielded_head_;
    if (u) {
      yielded_head_ = u->next;
      if (!yielded_head_) yielded_tail_ = nullptr;
      --yielded_count_;
    }
    return u;
  }
  void spill_yielded() noexcept;
  Ult* steal() noexcept;
  // Takes v's nursery thread if it has sat there kNurseryGraceNs (thief only).
  Ult* take_aged_nursery(Worker& v, uint64_t& now) noexcept;

  Scheduler& sched_;
  const uint32_t index_;
  RunQueue rq_;
  StackCache stacks_;
  std::thread thread_;
  Ult* current_ = nullptr;
  Fctx sched_ctx_ = nullptr;
  SanitizerContext sched_san_;
  Ult* prev_ = nullptr;
  Action action_ = Action::kNone;
  Spinlock* release_ = nullptr;
  // Threads that yielded here: a private FIFO (Ult::next), so a yield costs
  // no lock; spilled to the shared queue every 64 picks so idle workers can
  // steal them.
  Ult* yielded_head_ = nullptr;
  Ult* yielded_tail_ = nullptr;
  uint32_t yielded_count_ = 0;
  // Parked until woken (kParkUntilWoken): counts kept by the owner; parked_drive_
  // of them need this pthread to drive progress (manual progress).
  uint32_t parked_ = 0;
  uint32_t parked_drive_ = 0;
  tsu_waiter_t* park_waiter_ = nullptr;  // for land(), with park_flags_
  uint32_t park_flags_ = 0;
  // Woken parked threads, resumed before the run queue's: a private FIFO
  // (Ult::next), filled by the owner from woken_.
  Ult* resumable_head_ = nullptr;
  Ult* resumable_tail_ = nullptr;
  void push_resumable(Ult* u) noexcept {
    // (A thread queued by enqueue's fallback keeps its state: kNew ones
    // still need their stack, Worker::ready_to_run.)
    if (u->state.load(std::memory_order_relaxed) == State::kWaiting)
      u->state.store(State::kReady, std::memory_order_relaxed);
    u->next = nullptr;
    if (resumable_tail_) resumable_tail_->next = u; else resumable_head_ = u;
    resumable_tail_ = u;
  }
  void take_woken() noexcept;
  // Pushes u on woken_ (any pthread; lock-free, no allocation).
  void push_woken(Ult* u) noexcept {
    Ult* head = woken_.load(std::memory_order_relaxed);
    do {
      u->wake_next = head;
    } while (!woken_.compare_exchange_weak(head, u, std::memory_order_seq_cst,
                                           std::memory_order_relaxed));
  }
  const bool fault_queue_oom_;  // TSU_ULT_TEST_FAULTS=queue_oom
  const bool solo_;             // the scheduler's only worker: nobody steals here
  const bool fp_exact_;         // TSU_ULT_FP_FLAGS=exact (fp_state.hpp)
  const bool yield_cpu_;        // more threads than CPUs (Settings::yield_cpu)
  // Woken parked threads (and threads enqueue() could not put on the run
  // queue: out of memory): a stack (Ult::wake_next) pushed by any thread
  // with a compare-exchange, emptied whole by the owner with one exchange
  // (so no ABA: nodes leave only by that exchange).  Its own line: other
  // pthreads write it.
  alignas(64) std::atomic<Ult*> woken_{nullptr};
  Ult* waiting_head_ = nullptr;  // private FIFO (Ult::next)
  Ult* waiting_tail_ = nullptr;
  uint32_t waiting_count_ = 0;
  uint32_t tick_ = 0;
  uint32_t hook_polls_ = 0;
  CpuShareWatch cpu_watch_;  // whether to offer the CPU while idle
  // Whether a wait here should give the CPU away: counted (more threads
  // than CPUs) or measured (another thread took this one's CPU).
  bool cpu_wanted(uint64_t now) noexcept { return yield_cpu_ || cpu_watch_.shared(now); }
  uint32_t poll_tick_ = 0;
  uint32_t sent_batches_ = 0;  // spawn/value batches sent on this pthread (note_sent)
  bool polling_ = false;  // inside the remote layer's pass (no parking)
  // The nursery (see put_in_nursery) and how many threads the owner has put
  // there: on a line of their own, the one line an idle thief reads while
  // the owner creates (beside the owner's other fields, each look would cost
  // the owner a miss on them).
  struct alignas(64) Nursery {
    std::atomic<Ult*> thread{nullptr};
    std::atomic<uint64_t> puts{0};  // written by the owner only
  };
  Nursery nursery_line_;
  uint64_t id_seq_ = 0;
  uint64_t last_busy_poll_ns_ = 0;
  void flush_nursery() noexcept;
  Ult* free_records_ = nullptr;
  uint32_t free_count_ = 0;
  Spinlock live_lock_;
  Ult* live_head_ = nullptr;  // guarded by live_lock_
  // This worker as a thief: what it last saw of each worker's nursery (the
  // victim's count of puts, and since when), so that it takes a nursery
  // thread only once that thread has waited there kNurseryGraceNs.  A thread
  // its creator joins at once (create + join, fork/join's last child) is run
  // by its creator, inline, and never handed between workers (a steal then
  // made the joiner block and be woken across cores, several times the
  // create + join of one worker: docs/ult.md, the nursery).  Owner-private
  // (steal() runs on this worker's pthread).
  struct NurseryWatch {
    uint64_t puts = ~uint64_t{0};
    uint64_t since_ns = 0;
  };
  std::vector<NurseryWatch> nursery_watch_;
  uint32_t steal_calls_ = 0;
  // Scratch of fp_before_switch (no stack frame on yield); exact mode only,
  // so last: among the hot fields above it shifted the yield path's lines.
  X87Env x87_env_{};
};

// The worker running on the calling pthread (nullptr elsewhere).  Not
// inlined, so no caller keeps a thread-local's address across a switch.
Worker* current_worker() noexcept;

// initial-exec: one %fs-relative load, not a __tls_get_addr call (the
// library is linked, or dlopen'ed where static TLS space is left).
// constinit: no dynamic initialisation, so no TLS wrapper call to check for.
extern constinit thread_local Worker* t_worker __attribute__((tls_model("initial-exec")));
// current_worker() inlined (no call: a load).  Only in a function that reads
// it once, before any switch: the compiler may keep the thread pointer in a
// register across a switch, after which the ULT may run on another pthread.
// (Used on the hot paths: tsu_ult_yield, create, free of a record.)
__attribute__((always_inline)) inline Worker* current_worker_once() noexcept { return t_worker; }

inline bool Worker::take_from_nursery(Ult* u) noexcept {
  if (nursery_line_.thread.load(std::memory_order_relaxed) != u) return false;
  if (solo_ && current_worker_once() == this) {
    nursery_line_.thread.store(nullptr, std::memory_order_relaxed);
    return true;
  }
  Ult* expected = u;
  return nursery_line_.thread.compare_exchange_strong(expected, nullptr, std::memory_order_acquire,
                                          std::memory_order_relaxed);
}

}  // namespace tsu::ult
