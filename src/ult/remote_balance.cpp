// The load balancer: where TSU_ULT_ANY_RANK spawns go, load exchange, and
// the migration of threads that have not started to an idle rank.
#include "remote.hpp"

#include <time.h>

#include <algorithm>
#include <cstring>

#include "remote_internal.hpp"
#include "scheduler.hpp"
#include "worker.hpp"

namespace tsu::ult {

namespace {

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

// ---- Load balancing ------------------------------------------------------------------

uint32_t Remote::runnable() const noexcept {
  uint32_t n = 0;
  for (uint32_t i = 0; i < sched_.worker_count(); ++i) {
    Worker& w = sched_.worker(i);
    n += w.queue().size_hint() + (w.has_nursery() ? 1 : 0);
  }
  return n;
}

uint32_t Remote::pick_any() noexcept {
  if (!lb_.enabled) {
    static std::atomic<uint32_t> rr{0};
    for (uint32_t k = 0; k < size_; ++k) {
      const uint32_t r = rr.fetch_add(1, std::memory_order_relaxed) % size_;
      if (!lost_[r].load(std::memory_order_relaxed)) return r;
    }
    return rank_;
  }
  uint32_t best = rank_, best_load = runnable();
  for (uint32_t r = 0; r < size_; ++r) {
    if (r == rank_ || lost_[r].load(std::memory_order_relaxed)) continue;
    const uint32_t l = load_[r].load(std::memory_order_relaxed);
    if (l + lb_.threshold / 2 < best_load) {
      best = r;
      best_load = l;
    }
  }
  return best;
}

void Remote::give_work(uint32_t thief, uint32_t max) noexcept {
  // The hand-over of threads that have not started to an idle rank (runs in
  // the kAmAsk handler).  The thief may be lost at any point of it; each
  // thread handed over must then end its joiner's wait with an error:
  // * our own spawns (the user holds the record): the record becomes the
  //   proxy, named in the table with the thief as runner *before* the spawn
  //   is queued, and is followed (watch + the lost_ check, follow_runner);
  //   a send that fails ends it (fail_chunk).  Once it is published, a loss
  //   (or a value) may complete it and, if its handle was detached, free
  //   it: nothing of u or its RemoteInfo is read after that point.
  // * threads we ran for a creator elsewhere: the creator is told of the
  //   move by a value record (kValueMoved, in its values batch: retried
  //   until it leaves, never dropped) and then watches the thief itself; a
  //   send to the thief that fails sends the creator the error (fail_chunk).
  const TestFaults& faults = sched_.settings().faults;
  std::vector<Ult*> taken;
  try {
    taken.reserve(max);  // take_if's push_back never allocates below
  } catch (...) {
    return;  // out of memory: no hand-over (the thief asks again later)
  }
  for (uint32_t i = 0; i < sched_.worker_count() && taken.size() < max; ++i) {
    sched_.worker(i).queue().take_if(
        [](const Ult* u) {
          // Not started, and placed by the balancer or let move by its spawner.
          return u->remote && !u->proxy && u->remote->migratable &&
                 u->state.load(std::memory_order_relaxed) == State::kNew;
        },
        max - static_cast<uint32_t>(taken.size()), taken);
  }
  if (taken.empty()) {
    if (tsu_try_am_short(thief, kAmNothing, nullptr, 0, tsu_cb_none()) == TSU_OK)
      count_sent(thief);
    return;
  }
  for (Ult* u : taken) {
    RemoteInfo* info = u->remote;
    if (info->home) {
      // Ours: the record the user holds becomes the proxy of the moved thread
      // (proxy is read by joiners under the join lock).  Its argument is
      // copied out first: once the proxy is in the table its buffer is for
      // the value.  Its slot first: a thread that cannot have one (out of
      // memory) stays here.  Until the runner is published below, no loss
      // scan matches it (runner is still us) and nobody knows the token.
      unsigned char arg[TSU_ULT_ARG_MAX];
      std::memcpy(arg, info->arg, info->arg_len);
      uint64_t token;
      {
        SpinGuard lock(proxies_lock_);
        token = proxies_.insert(u);
      }
      if (!token) {
        sched_.make_ready(u);  // (never fails: Scheduler::make_ready)
        continue;
      }
      info->home = false;
      u->join_lock.lock();
      const bool detached = u->detached;
      if (!detached) {
        info->token = token;
        u->proxy = true;
        u->state.store(State::kBlocked, std::memory_order_relaxed);
      }
      u->join_lock.unlock();
      info->detached = detached;
      const SpawnRecord rec{detached ? 0 : token, rank_,
                            info->fn_id,          info->arg_len,
                            spawn_flags(*info),   info->stack_size};
      if (u->home) u->home->live_remove(u);
      sched_.note_finished();  // no longer runs here
      migrated_.fetch_add(1, std::memory_order_relaxed);
      if (detached) {
        {
          SpinGuard lock(proxies_lock_);
          proxies_.take(token);  // detached meanwhile: nobody waits for a value
        }
        sched_.free_record(u);  // deletes info
      } else {
        {
          SpinGuard lock(proxies_lock_);
          info->runner.store(thief, std::memory_order_relaxed);  // published
        }
        follow_runner(thief);
      }
      queue_spawn(thief, rec, arg);
    } else {
      // A runner's record (detached here): no value comes into it.
      const SpawnRecord rec{info->token,   info->creator,      info->fn_id,
                            info->arg_len, spawn_flags(*info), info->stack_size};
      queue_spawn(thief, rec, info->arg);
      if (!info->detached) {
        if (info->creator == rank_) {
          // Our own thread that had come back: our proxy follows it.
          {
            SpinGuard lock(proxies_lock_);
            if (Ult* p = proxies_.find(info->token))
              p->remote->runner.store(thief, std::memory_order_relaxed);
          }
          follow_runner(thief);
        } else if (info->creator != thief) {
          queue_value(info->creator, info->token, static_cast<tsu_status_t>(thief), nullptr, 0,
                      !(kFaultInjection && faults.handover_eagain), kValueMoved);
        }
      }
      migrated_.fetch_add(1, std::memory_order_relaxed);
      if (u->home) u->home->live_remove(u);
      sched_.free_record(u);  // deletes info
      sched_.note_finished();
    }
  }
  // Leaves now: the thief is idle.  (Test faults: the first try finds the
  // queue full, so the batch leaves at a later pass; or the thief is taken
  // as lost.)
  Batch& b = *out_[thief];
  std::lock_guard lock(b.mu);
  if (kFaultInjection && faults.handover_lost) fail_spawns(thief, b, TSU_ERR_PEER_LOST);
  else if (!(kFaultInjection && faults.handover_eagain)) send_chunks(thief, b, true);
}

void Remote::poll(Worker&, bool idle) noexcept {
  if (Gate gate(*this); gate) poll_open(idle);
}

void Remote::poll_open(bool idle) noexcept {
  if (has_outgoing()) flush();
  tsu_progress();  // manual progress: the workers drive it (harmless otherwise)
  if (!lb_.enabled || size_ == 1) return;
  const uint64_t now = now_ns();
  uint64_t last = last_lb_ns_.load(std::memory_order_relaxed);
  if (now - last < lb_.period_ns ||
      !last_lb_ns_.compare_exchange_strong(last, now, std::memory_order_relaxed))
    return;
  const uint32_t mine = runnable();
  const uint32_t prev = last_sent_load_.load(std::memory_order_relaxed);
  const uint32_t diff = mine > prev ? mine - prev : prev - mine;
  if (diff >= lb_.threshold || (mine == 0) != (prev == 0)) {
    last_sent_load_.store(mine, std::memory_order_relaxed);
    const uint64_t arg = mine;
    for (uint32_t r = 0; r < size_; ++r) {
      if (r == rank_ || lost_[r].load(std::memory_order_relaxed)) continue;
      if (tsu_try_am_short(r, kAmLoad, &arg, 1, tsu_cb_none()) == TSU_OK) count_sent(r);
    }
  }
  // Idle: ask the most loaded rank for threads that have not started.
  if (mine == 0 && idle) {
    const bool asking = asking_.load(std::memory_order_acquire);
    if (asking && now - asked_ns_.load(std::memory_order_relaxed) < 20 * lb_.period_ns) return;
    uint32_t victim = rank_, most = lb_.threshold;
    for (uint32_t r = 0; r < size_; ++r) {
      if (r == rank_ || lost_[r].load(std::memory_order_relaxed)) continue;
      const uint32_t l = load_[r].load(std::memory_order_relaxed);
      if (l > most) {
        victim = r;
        most = l;
      }
    }
    if (victim == rank_) return;
    const uint64_t want = std::max<uint32_t>(1, most / 2);
    if (tsu_try_am_short(victim, kAmAsk, &want, 1, tsu_cb_none()) == TSU_OK) {
      count_sent(victim);
      asking_.store(true, std::memory_order_release);
      asked_ns_.store(now, std::memory_order_relaxed);
      load_[victim].store(most - static_cast<uint32_t>(want), std::memory_order_relaxed);
    }
  }
}
}  // namespace tsu::ult
