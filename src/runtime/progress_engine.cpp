#include "runtime/progress_engine.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <system_error>

#include "core/log.hpp"
#include "transport/transport.hpp"
#include "util/clock.hpp"

namespace tsu::runtime {

thread_local bool t_in_progress_context = false;
thread_local bool t_in_consumer_pass = false;

namespace {
struct ProgressContextScope {
  bool saved = t_in_progress_context;
  ProgressContextScope() { t_in_progress_context = true; }
  ~ProgressContextScope() { t_in_progress_context = saved; }
};

// Relaxed load+store: only the consumer-role holder writes engine counters.
void bump(std::atomic<uint64_t>& c, uint64_t n = 1) noexcept {
  c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

constexpr uint64_t kMaxSleepNs = 200'000'000;  // safety net only: wakers ring
// Looks at the ring's head between two idle passes (thread_main).
constexpr int kIdleRingWatch = 8;
// How often a spinning progress thread asks whether it was preempted.
constexpr uint64_t kPreemptCheckNs = 5'000;
// The spin budget's ceiling grows back at most this often after preemption.
constexpr uint64_t kCeilingGrowthNs = 1'000'000;
// The spin budget of a rank whose threads issue requests (thread_main).
constexpr uint64_t kIssuingSpinNs = 20'000;
// How long the progress thread polls, yielding between passes, while this
// rank's requests wait for their transport (thread_main).
constexpr uint64_t kRequestsOutPollNs = 2'000'000;
// Naps while other pthreads drive progress (nap_while_driven).
constexpr long kMinDriverNapNs = 50'000, kMaxDriverNapNs = 200'000;
// On an oversubscribed node: about a time slice, the delay the scheduler
// already puts between a thread and its turn there (each shorter nap's
// wake-up preempted a driver: 4 ranks on 2 CPUs, small collectives took
// 1.5-3x as long with 200 us naps as with 5 ms ones).
constexpr long kMaxDriverNapSharedNs = 4'000'000;

// Involuntary context switches of the calling thread so far.
long involuntary_switches() noexcept {
  rusage ru{};
  return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nivcsw : 0;
}
}  // namespace

void run_callback(const tsu_cb_t& cb, tsu_status_t status) noexcept {
  if (!cb.fn) return;
  ProgressContextScope scope;
  cb.fn(status, cb.arg);
}

ProgressEngine::ProgressEngine(const Config& cfg, CommandExecutor& executor, Doorbell doorbell,
                               bool lane)
    : cfg_(cfg),
      lane_(lane),
      inline_exec_(cfg.progress_mode == TSU_PROGRESS_THREAD),
      spin_us_(cfg.spin_us == Config::kSpinAuto ? kAutoSpinUsShared : cfg.spin_us),
      executor_(executor),
      doorbell_(doorbell),
      ring_(cfg.ring_size),
      // As many records as ring slots: a full ring can always be started.
      completions_(cfg.ring_size) {}

ProgressEngine::~ProgressEngine() {
  stop();
  if (epoll_fd_ >= 0) close(epoll_fd_);
  for (ThreadRing* r = rings_.load(std::memory_order_acquire); r;) {
    ThreadRing* next = r->next;  // NOLINT: freed below
    delete r;
    r = next;
  }
}

tsu_status_t ProgressEngine::start(std::string& error) {
  // Sleep in epoll when a transport has a descriptor to wait for.
  std::vector<int> fds;
  for (auto* t : transports_)
    if (t->wait_fd() >= 0) fds.push_back(t->wait_fd());
  if (!fds.empty() && doorbell_.eventfd() >= 0) {
    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd_ < 0) {
      error = std::string("epoll_create1: ") + std::strerror(errno);
      return TSU_ERR_SYSTEM;
    }
    fds.push_back(doorbell_.eventfd());
    for (int fd : fds) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = fd;
      if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
        error = std::string("epoll_ctl: ") + std::strerror(errno);
        return TSU_ERR_SYSTEM;
      }
    }
    doorbell_.shared()->uses_eventfd.store(1, std::memory_order_seq_cst);
  }
  if (cfg_.progress_mode != TSU_PROGRESS_THREAD) return TSU_OK;
  try {
    thread_ = std::thread([this] { thread_main(); });
  } catch (const std::system_error& e) {
    error = std::string("cannot start the progress thread: ") + e.what();
    return TSU_ERR_SYSTEM;
  }
  pthread_setname_np(thread_.native_handle(), lane_ ? "tsu-lane" : "tsu-progress");
  return TSU_OK;
}

void ProgressEngine::stop() {
  if (!thread_.joinable()) return;
  stop_.store(true, std::memory_order_seq_cst);
  doorbell_.ring();
  thread_.join();
}

std::size_t ProgressEngine::progress() noexcept {
  if (!try_lock()) return 0;
  t_in_consumer_pass = !lane_;
  const std::size_t n = pass();
  t_in_consumer_pass = false;
  unlock();
  return n;
}

std::size_t ProgressEngine::execute_batch(std::size_t& finished_now) noexcept {
  // Never take more commands than there are free records, so a started
  // command always has one (the rest wait in the rings: back-pressure).
  const std::size_t room = std::min<std::size_t>(kBatch, completions_.free_count());
  if (!room) return 0;
  std::size_t n = 0;
  const auto start = [&](const Command& cmd) {
    if (n++ == 0)
      for (auto* m : messaging_) m->batch_begin();
    const uint32_t id = completions_.acquire(cmd.cb, cmd.issuer);
    TSU_TRACE_ASYNC(trace::kRequestBegin, id, cmd.kind, cmd.dst.rank, cmd.src.rank);
    const tsu_status_t st = executor_.execute(cmd, id);
    if (st == kStarted) return;  // pending: the transport finishes it
    completions_.finish(id, st);
    ++finished_now;
    if (st != TSU_OK) bump(stats_.failed);
  };
  ring_.consume(room, [&](uint32_t, const Command& cmd) { start(cmd); });
  // Thread rings, from where the last batch left off, wrapping once.
  ThreadRing* const head = rings_.load(std::memory_order_acquire);
  ThreadRing* const first = start_ring_ ? start_ring_ : head;
  const auto drain = [&](ThreadRing* r) { r->consume(room - n, start); };
  for (ThreadRing* r = first; r && n < room; r = r->next) drain(r);
  for (ThreadRing* r = head; r != first && n < room; r = r->next) drain(r);
  if (first) start_ring_ = first->next ? first->next : head;
  if (!n) return 0;
  bump(stats_.batches);
  bump(stats_.commands, n);
  if (n > stats_.max_batch.load(std::memory_order_relaxed))
    stats_.max_batch.store(n, std::memory_order_relaxed);
  for (auto* m : messaging_) m->batch_end();
  return n;
}

ThreadRing* ProgressEngine::attach_ring(ThreadContext& tc, ThreadRing*& slot,
                                        bool& refused) noexcept {
  if (refused) return nullptr;
  if (ring_count_.fetch_add(1, std::memory_order_relaxed) >= kMaxThreadRings) {
    refused = true;
    return nullptr;
  }
  ThreadRing* r = nullptr;
  try {
    r = new ThreadRing(cfg_.ring_size, &tc);
  } catch (const std::bad_alloc&) {
    TSU_LOG_WARN("no memory for a thread's command ring: the thread uses the shared ring");
    refused = true;
    return nullptr;
  }
  // Release: the ring's construction happens before the consumer walks it.
  ThreadRing* head = rings_.load(std::memory_order_relaxed);
  do {
    r->next = head;
  } while (!rings_.compare_exchange_weak(head, r, std::memory_order_release,
                                         std::memory_order_relaxed));
  slot = r;
  return r;
}

bool ProgressEngine::prepare_sleep_all() noexcept {
  if (!ring_.prepare_sleep()) return false;
  for (ThreadRing* r = rings_.load(std::memory_order_acquire); r; r = r->next)
    if (!r->ring.prepare_sleep()) return false;
  return true;
}

void ProgressEngine::end_sleep_all() noexcept {
  ring_.end_sleep();
  for_each_thread_ring([](ThreadRing& r) { r.ring.end_sleep(); });
}

bool ProgressEngine::any_claimed() const noexcept {
  if (ring_.has_claimed()) return true;
  for (ThreadRing* r = rings_.load(std::memory_order_acquire); r; r = r->next)
    if (r->ring.has_claimed()) return true;
  return false;
}

bool ProgressEngine::any_ready() const noexcept {
  if (ring_.peek_ready()) return true;
  for (ThreadRing* r = rings_.load(std::memory_order_acquire); r; r = r->next)
    if (r->ring.peek_ready()) return true;
  return false;
}

bool ProgressEngine::execute_inline() noexcept {
  if (!try_lock()) return false;  // a consumer is at work: let the doorbell tell it
  std::size_t finished_now = 0;
  bool handled = false;
  for (int round = 0; round < 4; ++round) {
    execute_batch(finished_now);
    // Empty again: re-arm the waiting bits, so the next producer also learns
    // that nobody consumes (and runs its command itself or rings).
    if (prepare_sleep_all()) {
      handled = true;
      break;
    }
  }
  bump(stats_.inline_runs);
  TSU_TRACE(trace::kInlineRun, finished_now, 0, 0);
  // Callbacks of commands that finished here, and streaming work left for
  // continue_pending(), need the consumer: wake it.  Requests left waiting
  // for their transport do not: their issuer usually waits in tsu_quiet or
  // tsu_counter_wait, which poll by themselves (a woken engine would be a
  // third busy thread beside it and the peer's on a two-core node), and the
  // reply's descriptor wakes the engine otherwise.
  requests_out_.store(completions_.in_use(), std::memory_order_relaxed);
  if (finished_now || !executor_.may_sleep()) handled = false;
  unlock();
  return handled;
}

std::size_t ProgressEngine::pass() noexcept {
  const uint64_t trace_t0 = trace::start_time();
  std::size_t work = 0;
  std::size_t finished_now = 0;
  work += execute_batch(finished_now);
  // Message handlers, layer work and callbacks run in progress context (they
  // must not block), also when tsu_progress() runs them in a user thread.
  ProgressContextScope in_progress;
  // Requests that finished at once (memory transports) complete before the
  // transports are polled: their issuers wait for exactly this, and a poll
  // of every transport would sit between the command and its callback.
  std::size_t callbacks = finished_now ? run_completer() : 0;
  // Transports: arrived messages, acknowledgements, timers.
  if (handlers_) {
    std::size_t msgs = 0;
    for (auto* t : transports_) msgs += t->poll(*handlers_);
    if (msgs) bump(stats_.messages, msgs);
    work += msgs;
  }
  for (auto* p : pollers_) work += p->poll();
  work += executor_.continue_pending();
  callbacks += run_completer();
  requests_out_.store(completions_.in_use(), std::memory_order_relaxed);
  if (work + callbacks) TSU_TRACE_SPAN(trace::kPass, trace_t0, work, callbacks, 0);
  return work + callbacks;
}

std::size_t ProgressEngine::run_completer() noexcept {
  // Completions are counted per issuing thread in runs: one atomic add per run
  // instead of one per request (the issuer polls that cache line in quiet).
  ThreadContext* run_issuer = nullptr;
  uint64_t run_length = 0;
  const std::size_t done = completions_.run_finished([&](const CompletionRecord& rec) {
    run_callback(rec.cb, rec.status);
    if (rec.issuer != run_issuer) {
      if (run_issuer) run_issuer->count_completed(run_length);
      run_issuer = rec.issuer;
      run_length = 0;
    }
    ++run_length;
  });
  if (run_issuer) run_issuer->count_completed(run_length);
  if (done) bump(stats_.callbacks, done);
  return done;
}

void ProgressEngine::idle_sleep(IdleWake wake, uint64_t max_ns) noexcept {
  // prepare_sleep / has_claimed touch the consumer side: hold the role.  A
  // thread holding it (an issuer running commands inline) may have been
  // preempted: give it the core instead of spinning against it.
  if (!try_lock()) {
    sched_yield();
    return;
  }
  bool may_sleep = prepare_sleep_all() && executor_.may_sleep();
  const uint32_t seen = doorbell_.value();
  uint64_t timeout = std::min(kMaxSleepNs, max_ns);
  std::size_t prepared = 0;
  bool busy = false;  // refused by a transport that never sleeps
  for (; may_sleep && prepared < transports_.size(); ++prepared) {
    may_sleep = transports_[prepared]->prepare_sleep();
    busy = !may_sleep && transports_[prepared]->busy_polling();
    timeout = std::min(timeout, transports_[prepared]->max_sleep_ns());
  }
  // Re-check after publishing "asleep" (doorbell.hpp, step 3).
  if (may_sleep && (any_claimed() || stop_.load(std::memory_order_seq_cst) ||
                    (wake.done && wake.done(wake.arg))))
    may_sleep = false;
  for (auto* p : pollers_)
    if (may_sleep && !p->idle()) may_sleep = false;
  unlock();
  if (may_sleep && timeout > 0) {
    const uint64_t trace_t0 = trace::start_time();
    bump(stats_.sleeps);
    if (epoll_fd_ >= 0) {
      epoll_event events[8];
      // Nanosecond timeout (epoll_wait rounds to milliseconds): transports'
      // short deadlines (a held-back udp ack) must not stretch to 1 ms.
      const uint64_t t = std::min<uint64_t>(timeout, 1'000'000'000);
      const timespec ts{static_cast<time_t>(t / 1'000'000'000), static_cast<long>(t % 1'000'000'000)};
      const int n = epoll_pwait2(epoll_fd_, events, 8, &ts, nullptr);
      for (int i = 0; i < n; ++i)
        if (events[i].data.fd == doorbell_.eventfd()) {
          uint64_t drained;
          [[maybe_unused]] const ssize_t r = read(doorbell_.eventfd(), &drained, sizeof drained);
        }
    } else {
      doorbell_.wait(seen, timeout);
    }
    TSU_TRACE_SPAN(trace::kSleep, trace_t0, timeout / 1000, doorbell_.value() != seen, 0);
  }
  for (std::size_t i = 0; i < prepared; ++i) transports_[i]->end_sleep();
  end_sleep_all();
  // A transport that keeps the engine awake for ever (TSU_OFI_WAIT=none)
  // must not keep the threads sharing this core from it: on a node with
  // fewer cores than busy threads, a woken issuer waited a time slice
  // behind the polling engine (docs/ofi.md, "Busy polling").  (A transport
  // refusing for work of its own is polled again at once, as before.)
  // Refused for a peer's sake on an oversubscribed node: the peer may need
  // this CPU (set_oversubscribed).
  if (busy || (!may_sleep && oversubscribed_.load(std::memory_order_relaxed))) sched_yield();
}

void ProgressEngine::nap_while_driven(DriverLook& look,
                                      const std::atomic<bool>& until) const noexcept {
  const long max_nap_ns =
      oversubscribed_.load(std::memory_order_relaxed) ? kMaxDriverNapSharedNs : kMaxDriverNapNs;
  for (long nap_ns = kMinDriverNapNs; !until.load(std::memory_order_acquire);
       nap_ns = std::min(nap_ns * 2, max_nap_ns)) {
    const timespec ts{0, nap_ns};
    nanosleep(&ts, nullptr);
    if (!driven_by_others(look, util::now_ns())) return;
  }
}

void ProgressEngine::thread_main() {
  t_in_progress_context = true;
  // Adaptive spin.  Spinning pays when work returns within the budget: a
  // sleeping thread's wake-up costs as much as a request/reply over udp
  // (docs/design-decisions.md, "Progress engine", idle policy).  It
  // costs when the core is wanted: on a host with fewer cores than busy
  // threads a spin steals the core the peer needs.  So the budget adapts:
  // - an idle gap the spin covered restores it to a ceiling, a longer gap
  //   halves it (to zero);
  // - a spin during which this thread was preempted (another thread waited
  //   for this core) sleeps at once and quarters the ceiling, which grows
  //   back by 1/64 of TSU_SPIN_US per millisecond of gaps without
  //   preemption (so sustained contention keeps spins short however many
  //   gaps it has, and an engine that sleeps probes again later);
  // - while this rank's threads issue requests (the engine ran commands
  //   since the last idle gap) the budget is at most kIssuingSpinNs: an
  //   issuer runs its requests itself while the engine sleeps (inline
  //   execution), cheaper than handing them over, and a thread waiting for
  //   completion polls by itself (a long spin there costs the issuers'
  //   rate: docs/design-decisions.md, "Progress engine").  A passive rank
  //   (a target) keeps the full budget: nobody else polls for its requests.
  uint64_t max_spin_ns = uint64_t{spin_us_.load(std::memory_order_relaxed)} * 1000;
  uint64_t ceiling_ns = max_spin_ns, spin_ns = max_spin_ns;
  uint64_t idle_since = 0, next_check = 0, commands_seen = 0, next_growth = 0;
  long switches = 0;
  bool preempted = false;  // in this idle gap
  // A transport polled for ever (busy_polling): the idle engine yields at
  // every pass, so that the threads sharing its core (issuers waiting for a
  // reply, the peer rank on an oversubscribed node) run at once.
  const bool yield_when_idle =
      std::any_of(transports_.begin(), transports_.end(),
                  [](const transport::Transport* t) { return t->busy_polling(); });
  DriverLook drivers, any_drivers;
  drivers.schedulers_only = true;
  while (!stop_.load(std::memory_order_acquire)) {
    // Oversubscribed: every thread that polls counts, busy or idle (see
    // set_oversubscribed); the look is cached, so this is a clock read.
    if (!lane_ && oversubscribed_.load(std::memory_order_relaxed)) {
      if (driven_by_others(any_drivers, util::now_ns())) {
        nap_while_driven(any_drivers, stop_);
        idle_since = 0;
        continue;
      }
    }
    if (progress()) {
      if (idle_since) {
        const uint64_t gap = util::now_ns() - idle_since;
        if (!preempted && ceiling_ns < max_spin_ns && idle_since >= next_growth) {
          ceiling_ns = std::min(max_spin_ns, ceiling_ns + max_spin_ns / 64);
          next_growth = idle_since + kCeilingGrowthNs;
        }
        preempted = false;
        const uint64_t commands = stats_.commands.load(std::memory_order_relaxed);
        const uint64_t cap = commands != commands_seen ? std::min(ceiling_ns, kIssuingSpinNs) : ceiling_ns;
        commands_seen = commands;
        spin_ns = gap <= cap ? cap : spin_ns / 2;
        idle_since = 0;
      }
      continue;
    }
    const uint64_t now = util::now_ns();
    // A user-level thread scheduler's idle workers call tsu_progress often
    // enough to drive the engine: leave it to them (driven_by_others).
    if (!lane_ && driven_by_others(drivers, now)) {
      nap_while_driven(drivers, stop_);
      idle_since = 0;
      continue;
    }
    if (!idle_since) {
      idle_since = now;
      // (Set once at init, after the engine started: set_spin_us.)
      const uint64_t max = uint64_t{spin_us_.load(std::memory_order_relaxed)} * 1000;
      if (max != max_spin_ns) max_spin_ns = ceiling_ns = spin_ns = max;
      // (The first check, one period in, only reads the count: a system
      // call at the start of every gap would delay the next request, and
      // most gaps end sooner.)
      next_check = now + kPreemptCheckNs;
      switches = -1;
    }
    // This rank's requests wait for their transport: their completions come
    // within a round trip, and whoever waits for them (a thread spinning on
    // its own flag, or one asleep) relies on this thread, unless a waiter
    // polls the engine itself (waiters_polling).  Poll, yielding the
    // core between passes so the threads sharing it run at once, instead of
    // sleeping and waking late; bounded, so a request that waits on a slow
    // peer does not keep a core busy.
    if (now - idle_since < kRequestsOutPollNs && requests_out_.load(std::memory_order_relaxed) &&
        poll_while_out_.load(std::memory_order_relaxed) &&
        waiters_polling_.load(std::memory_order_relaxed) == 0) {
      sched_yield();
      continue;
    }
    if (now - idle_since < spin_ns) {
      if (now >= next_check) {
        next_check = now + kPreemptCheckNs;
        const long s = involuntary_switches();
        const bool wanted = switches >= 0 && s != switches;  // preempted while spinning
        switches = s;
        if (wanted) {
          preempted = true;
          ceiling_ns /= 4;
          next_growth = now + kCeilingGrowthNs;
          spin_ns = std::min(spin_ns / 2, ceiling_ns);
          idle_sleep();
          continue;
        }
      }
      // Between two full passes (every transport and layer polled), watch
      // the ring's head: a request pushed now starts after one line transfer
      // instead of waiting for the rest of a pass.  The watch is short, so
      // arriving messages are still polled every few hundred nanoseconds.
      if (yield_when_idle) {
        sched_yield();
        continue;
      }
      for (int i = 0; i < kIdleRingWatch && !any_ready(); ++i) util::cpu_relax();
      continue;
    }
    idle_sleep();
  }
  // Drain what is left so every accepted request completes.
  while (progress()) {
  }
}

}  // namespace tsu::runtime
