// The progress engine (seed 000, improved): requesters push commands into a
// bounded lock-free ring; the executor drains it in batches and starts each
// command (memory transports finish it at once, network ones later); the
// transports are polled for arrived messages; the completer runs callbacks of
// finished records.  One thread at a time holds the consumer role: the
// progress thread in TSU_PROGRESS_THREAD mode, or whichever thread calls
// tsu_progress().
//
// Idle policy: spin up to spin_us (adaptive: see thread_main), then sleep on
// the rank's doorbell (a futex word in shared memory; epoll on an eventfd plus
// the transports' descriptors when a transport has one).  Producers learn from
// their claiming CAS whether the engine sleeps, so a busy system pays no
// wake-up (see command_ring.hpp and doorbell.hpp for the protocol).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "core/command.hpp"
#include "core/command_ring.hpp"
#include "core/completion_table.hpp"
#include "core/config.hpp"
#include "core/doorbell.hpp"
#include "core/message.hpp"
#include "core/thread_ring.hpp"
#include "core/trace.hpp"
#include "transport/messaging.hpp"
#include "transport/transport.hpp"

namespace tsu::runtime {

// The core types the engine works with.
using core::Command;
using core::CommandRing;
using core::CompletionRecord;
using core::CompletionTable;
using core::Config;
using core::Doorbell;
using core::DoorbellShared;
using core::kCacheLine;
using core::PushResult;
namespace trace = core::trace;
using core::kStarted;
using core::MessageHandlerTable;
using core::ThreadContext;
using core::ThreadRing;

// What the executor calls to start a command.  Returns the final status, or
// kStarted (core/command.hpp) to leave the record pending until
// ProgressEngine::finish(id, st) (network transports, on acknowledgement).
class CommandExecutor {
 public:
  virtual ~CommandExecutor() = default;
  virtual tsu_status_t execute(const Command& cmd, uint32_t completion_id) noexcept = 0;
  // Called once per engine pass after the transports were polled: continues
  // started commands that wait for room (e.g. a large put being streamed).
  // Returns work done.
  virtual std::size_t continue_pending() noexcept { return 0; }
  // False while continue_pending() has work it can do now (do not sleep).
  virtual bool may_sleep() noexcept { return true; }
};

struct EngineStats {
  std::atomic<uint64_t> commands{0};
  std::atomic<uint64_t> batches{0};
  std::atomic<uint64_t> max_batch{0};
  std::atomic<uint64_t> sleeps{0};
  std::atomic<uint64_t> callbacks{0};
  std::atomic<uint64_t> failed{0};    // commands that failed at the target
  std::atomic<uint64_t> messages{0};  // transport work items from poll()
  std::atomic<uint64_t> inline_runs{0};  // batches started by an issuer (engine asleep)
};

// The calling thread's flags, set by the engine (progress_engine.cpp); read
// inline: every tsu_progress and every handler asks.
extern thread_local bool t_in_progress_context;
extern thread_local bool t_in_consumer_pass;

// True while the calling thread runs a completion callback or is the progress
// thread: blocking waits (quiet, counter wait) there would deadlock.
inline bool in_progress_context() noexcept { return t_in_progress_context; }
// True in the thread running a progress pass (it holds the consumer role:
// one thread at a time), including the handlers and callbacks that pass
// runs; false in callbacks run elsewhere (an issuer's inline completion).
inline bool in_consumer_pass() noexcept { return t_in_consumer_pass; }

// Runs a completion callback, marking the thread as in progress context.
void run_callback(const tsu_cb_t& cb, tsu_status_t status) noexcept;

// Work of the layers above core (active messages, tagged messages,
// collectives) that is not a message arrival: sends queued behind a full ring.
// Polled after the transports by whoever holds the consumer role.
class Poller {
 public:
  virtual ~Poller() = default;
  virtual std::size_t poll() noexcept = 0;
  // False while work is pending (the engine then does not sleep).
  virtual bool idle() const noexcept { return true; }
};

class ProgressEngine {
 public:
  static constexpr std::size_t kBatch = 32;

  // A lane (TSU_PROGRESS_THREADS > 1) is an engine with its own thread and
  // rings that only executes node-local requests: no transports, pollers or
  // handlers, and its passes do not hold the rank's consumer role
  // (in_consumer_pass() stays false in them).
  ProgressEngine(const Config& cfg, CommandExecutor& executor, Doorbell doorbell,
                 bool lane = false);
  bool is_lane() const noexcept { return lane_; }
  ~ProgressEngine();
  ProgressEngine(const ProgressEngine&) = delete;
  ProgressEngine& operator=(const ProgressEngine&) = delete;

  // Before start(): transports to poll, and where their messages go.
  void add_transport(transport::Transport* t) {
    transports_.push_back(t);
    if (transport::Messaging* m = t->parts().messages) messaging_.push_back(m);
  }
  void set_handlers(const MessageHandlerTable* handlers) { handlers_ = handlers; }
  void add_poller(Poller* p) { pollers_.push_back(p); }

  tsu_status_t start(std::string& error);
  void stop();

  // What submit() does when it finds the consumer asleep.
  enum class IfAsleep : uint8_t {
    kWake,       // ring the doorbell (the default)
    // A command for a network transport: the caller executes the ring's
    // commands itself (the datagram leaves now) instead of paying a wake-up
    // of the progress thread; the reply wakes that thread through the
    // transport's descriptor.
    kRunInline,
    // The caller has network requests in flight: their replies (or the
    // transport's timers) will wake the consumer, which then starts this
    // command together with those queued meanwhile (one batch, small
    // messages packed into shared datagrams).  Neither a wake-up nor a
    // syscall per request.
    kLeave,
  };

  // Any thread, for a command of any issuer: the shared ring.  False when
  // the ring is full.
  bool submit(const Command& cmd, IfAsleep if_asleep = IfAsleep::kWake) noexcept {
    return pushed(ring_.try_push(cmd), if_asleep);
  }


  // The calling thread's own request (cmd.issuer == &tc): its thread ring
  // (thread_ring.hpp), made on first use; the shared ring when the engine
  // gives the thread none.  False when the ring is full.
  bool submit_own(ThreadContext& tc, const Command& cmd,
                  IfAsleep if_asleep = IfAsleep::kWake) noexcept {
    return submit_own_via(tc, tc.ring, tc.ring_refused, cmd, if_asleep);
  }
  // The same into a lane (is_lane()): the thread's ring there.
  bool submit_to_lane(ThreadContext& tc, const Command& cmd) noexcept {
    return submit_own_via(tc, tc.lane_ring, tc.lane_ring_refused, cmd, IfAsleep::kWake);
  }

  // Any thread: one executor/poll/completer pass if the consumer role is free.
  // Returns the work done (commands started, messages, callbacks run).
  std::size_t progress() noexcept;
  // Calls of tsu_progress() outside progress context (a user-level thread
  // scheduler's workers, the application's pthreads), counted whether or
  // not the call got the consumer role.  A racy increment: only the change
  // is read, and a lost count only makes the callers look slower.
  // `scheduler_worker`: the caller is a user-level thread scheduler's
  // worker (its pthread has a wait hook, tsu_set_wait_hook).
  // Other callers are counted only while a barrier's helper looks (no
  // store on an application's polling loop otherwise).
  void note_external_poll(bool scheduler_worker) noexcept {
    std::atomic<uint64_t>* c = scheduler_worker ? &scheduler_polls_
                               : helpers_looking_.load(std::memory_order_relaxed) != 0 ||
                                         oversubscribed_.load(std::memory_order_relaxed)
                                   ? &other_polls_
                                   : nullptr;
    if (c) c->store(c->load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  // A barrier's helper starts / stops looking at every caller.
  void helper_looks(int delta) noexcept {
    helpers_looking_.fetch_add(delta, std::memory_order_relaxed);
  }
  // Whether other pthreads drive progress right now: they (all of them, or
  // with `schedulers_only` user-level thread schedulers' workers) called
  // tsu_progress at least once per kDriverMaxGapNs (100 us) on average over the last
  // window (at least kDriverWindowNs) of the caller's looks.  For the
  // progress thread and a barrier's helper: polling beside such callers
  // only takes the CPU they need (docs/design-decisions.md, "Progress
  // engine", other pthreads that drive the engine).  A caller polling
  // more rarely (a runtime calling tsu_progress between tasks longer than
  // that) does not count: the progress thread goes on serving requests at
  // once.  (The gap is not shorter because a ULT worker sharing its CPU with
  // a progress thread looks idle whenever the progress thread has the CPU:
  // at one call per 10 us both went on polling and slowed each other.)
  //
  // The progress thread counts only schedulers' workers: it steps back for
  // a scheduler whose idle workers poll anyway, not for an application's
  // own polling loop: napping beside an application's polling threads
  // lengthened its round trips over ofi, since the data no longer woke the
  // progress thread (docs/design-decisions.md, "Progress engine").  A
  // barrier's helper counts every caller.
  struct DriverLook {
    bool schedulers_only = false;
    uint64_t polls = 0, at_ns = 0;
    bool driven = false;
  };
  static constexpr uint64_t kDriverMaxGapNs = 100'000, kDriverWindowNs = 20'000;
  bool driven_by_others(DriverLook& look, uint64_t now_ns) const noexcept {
    if (look.at_ns != 0 && now_ns - look.at_ns < kDriverWindowNs) return look.driven;
    const uint64_t polls = scheduler_polls_.load(std::memory_order_relaxed) +
                           (look.schedulers_only ? 0 : other_polls_.load(std::memory_order_relaxed));
    look.driven = look.at_ns != 0 && (polls - look.polls) * kDriverMaxGapNs >= now_ns - look.at_ns;
    look.polls = polls;
    look.at_ns = now_ns;
    return look.driven;
  }
  // Naps while other pthreads drive progress (driven_by_others), or until
  // `until` is set.  The nap doubles from 50 to 200 us (4 ms where the node
  // is oversubscribed): each wake-up of the napper preempts one of the
  // drivers where the CPUs are all busy, and once they stop the napper
  // takes over within a fraction of a millisecond (within a time slice).
  // A nap is not a sleep on the doorbell: senders do not ring for it (the
  // drivers poll).
  void nap_while_driven(DriverLook& look, const std::atomic<bool>& until) const noexcept;
  // A manual-progress waiter that found nothing to do for a while: sleeps as
  // the progress thread does when idle (on the doorbell, and in epoll on the
  // transports' descriptors), at most `max_ns`, so the next message or local
  // request wakes it at once rather than at the end of a timed nap.  Events
  // another pthread's progress() consumes do not wake it: a waiter whose
  // condition another pthread may satisfy has that pthread ring the doorbell
  // (tsu_quiet), or keeps `max_ns` short.  done(arg) is re-checked after the
  // sleep is published (doorbell.hpp, step 3), so a waker that makes it true
  // (seq_cst) and then rings is never missed.  One waiter sleeps at a time
  // (epoll wakes only one of several): false, nothing done, when another
  // already does; the caller naps instead.
  bool idle_wait(bool (*done)(const void*), const void* arg, uint64_t max_ns) noexcept {
    if (waiter_asleep_.exchange(true, std::memory_order_acquire)) return false;
    idle_sleep(IdleWake{done, arg}, max_ns);
    waiter_asleep_.store(false, std::memory_order_release);
    return true;
  }

  // Consumer role only (transports, from poll): a pending record finished.
  void finish(uint32_t completion_id, tsu_status_t status) noexcept {
    completions_.finish(completion_id, status);
  }

  // The idle spin budget (TSU_SPIN_US; auto: kAutoSpinUsOwnCores when the
  // node has two CPUs per rank, else kAutoSpinUsShared: Runtime decides once
  // it knows the node's ranks).
  static constexpr uint32_t kAutoSpinUsOwnCores = 100, kAutoSpinUsShared = 20;
  void set_spin_us(uint32_t us) noexcept { spin_us_.store(us, std::memory_order_relaxed); }
  // Whether the progress thread polls (yielding) while this rank's requests
  // wait for their transport, instead of spinning briefly and sleeping: where
  // it has a core of its own (Runtime decides with the spin budget).
  void set_poll_while_out(bool on) noexcept { poll_while_out_.store(on, std::memory_order_relaxed); }
  // More threads poll on this node than it has CPUs (Runtime::oversubscribed,
  // TSU_YIELD): a runnable thread that is not the one a peer waits for costs
  // that peer a turn of the run queue.  The progress thread then steps back
  // while the application's threads call tsu_progress themselves (any
  // caller counts, not only schedulers' workers), and yields instead of
  // spinning when a transport or layer refuses its sleep (it waits for a
  // peer, and spinning held the CPU a time slice, ~4 ms, from the peer rank
  // sharing it).  4 ranks on 2 CPUs: a node barrier went from ~1.5 ms to
  // 4-6 us (docs/design-decisions.md, "Progress engine").
  void set_oversubscribed(bool on) noexcept { oversubscribed_.store(on, std::memory_order_relaxed); }
  // Threads in a blocking wait's spin and yield phases, polling this engine
  // themselves (core::PollingMark): while any does, the progress thread does
  // not poll beside it for requests out (a third busy thread on two cores
  // doubled the round trip of a waiter in tsu_quiet).
  std::atomic<uint32_t>& waiters_polling() noexcept { return waiters_polling_; }
  uint32_t spin_us() const noexcept { return spin_us_.load(std::memory_order_relaxed); }

  const EngineStats& stats() const noexcept { return stats_; }
  Doorbell& doorbell() noexcept { return doorbell_; }

 private:
  void thread_main();
  struct IdleWake {  // idle_wait's condition (none for the progress thread)
    bool (*done)(const void*);
    const void* arg;
  };
  void idle_sleep(IdleWake wake = IdleWake{nullptr, nullptr},
                  uint64_t max_ns = UINT64_MAX) noexcept;
  std::atomic<bool> waiter_asleep_{false};  // an idle_wait() sleeps
  // Requests started and waiting for their transport (completions_.in_use()),
  // as the last consumer pass left them: thread_main reads it without the
  // consumer role (a hint; relaxed).
  std::atomic<uint32_t> requests_out_{0};
  std::atomic<bool> poll_while_out_{false};  // set_poll_while_out
  std::atomic<bool> oversubscribed_{false};  // set_oversubscribed
  std::atomic<uint32_t> waiters_polling_{0};
  bool pushed(PushResult r, IfAsleep if_asleep) noexcept {
    if (r == PushResult::kPushedConsumerAsleep) [[unlikely]] {
      TSU_TRACE(trace::kDoorbell, 0, 0, 0);
      if (!inline_exec_ || if_asleep == IfAsleep::kWake) doorbell_.ring();
      else if (if_asleep == IfAsleep::kRunInline && !execute_inline()) doorbell_.ring();
    }
    return r != PushResult::kFull;
  }
  // Makes tc's thread ring and publishes it to the consumer; null when the
  // engine has none to give (the thread then uses the shared ring).
  ThreadRing* attach_ring(ThreadContext& tc, ThreadRing*& slot, bool& refused) noexcept;
  bool submit_own_via(ThreadContext& tc, ThreadRing*& slot, bool& refused, const Command& cmd,
                      IfAsleep if_asleep) noexcept {
    ThreadRing* tr = slot;
    if (!tr) [[unlikely]] {
      tr = attach_ring(tc, slot, refused);
      if (!tr) return submit(cmd, if_asleep);
    }
    return pushed(tr->try_push(cmd), if_asleep);
  }
  template <typename F>
  void for_each_thread_ring(F&& f) const noexcept {
    for (ThreadRing* r = rings_.load(std::memory_order_acquire); r; r = r->next) f(*r);
  }
  // Consumer role: sets the waiting bit on every ring; false if one has work.
  bool prepare_sleep_all() noexcept;
  void end_sleep_all() noexcept;
  bool any_claimed() const noexcept;
  bool any_ready() const noexcept;
  std::size_t pass() noexcept;  // consumer role held
  // Runs the callbacks of finished records and counts them per issuer
  // (consumer role held, in progress context).  Returns how many ran.
  std::size_t run_completer() noexcept;
  // Pops and starts one batch (consumer role held); counts the commands that
  // finished at once in `finished_now`.
  std::size_t execute_batch(std::size_t& finished_now) noexcept;
  // submit()'s inline path: true if the commands were started here and the
  // sleeping consumer need not be woken.
  bool execute_inline() noexcept;
  bool try_lock() noexcept {
    return !consumer_busy_.load(std::memory_order_relaxed) &&
           !consumer_busy_.exchange(true, std::memory_order_acquire);
  }
  void unlock() noexcept { consumer_busy_.store(false, std::memory_order_release); }

  const Config cfg_;
  const bool lane_;
  // Inline start of network commands while the engine sleeps (thread mode
  // only; docs/design-decisions.md, "Deleted switches").
  const bool inline_exec_;
  std::atomic<uint32_t> spin_us_;
  CommandExecutor& executor_;
  Doorbell doorbell_;
  CommandRing<Command> ring_;
  // Thread rings, newest first (attach_ring pushes with a CAS; the consumer
  // walks from an acquire load; a ring is never unlinked before the engine
  // is destroyed, which frees them).  At most kMaxThreadRings: beyond that
  // threads share ring_, so a program making thousands of short-lived
  // threads does not grow the consumer's pass.
  static constexpr uint32_t kMaxThreadRings = 128;
  std::atomic<ThreadRing*> rings_{nullptr};
  std::atomic<uint32_t> ring_count_{0};
  // The ring execute_batch starts from (rotated per batch, so a busy ring
  // cannot starve the ones behind it); consumer role only.
  ThreadRing* start_ring_ = nullptr;
  CompletionTable completions_;
  std::vector<transport::Transport*> transports_;
  std::vector<transport::Messaging*> messaging_;  // their Messaging parts (batches)
  std::vector<Poller*> pollers_;
  const MessageHandlerTable* handlers_ = nullptr;
  int epoll_fd_ = -1;
  EngineStats stats_;
  alignas(kCacheLine) std::atomic<bool> consumer_busy_{false};
  // Their own line: written by the polling threads (note_external_poll),
  // read by the progress thread and a barrier's helper, never by a pass.
  alignas(kCacheLine) std::atomic<uint64_t> scheduler_polls_{0};
  std::atomic<uint64_t> other_polls_{0};
  std::atomic<int> helpers_looking_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace tsu::runtime
