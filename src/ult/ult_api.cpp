// The C entry points of libtsunagi-ult: scheduler lifecycle, threads,
// counters and the dump.
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "record_pool.hpp"
#include "remote.hpp"
#include "scheduler.hpp"
#include "thread.hpp"
#include "tsunagi/ult.h"
#include "worker.hpp"

using namespace tsu::ult;

namespace {
std::mutex g_lifecycle_mu;  // init/finalize

Ult* as_ult(tsu_ult_t t) { return reinterpret_cast<Ult*>(t); }
tsu_ult_t as_handle(Ult* u) { return reinterpret_cast<tsu_ult_t>(u); }

// Waits until `u` has ended (it is then the caller's to free).
// TSU_ERR_INVALID_ARG: not joinable (detached, joined by someone else, self).
tsu_status_t wait_for_end(Scheduler& s, Ult* u) {
  Ult* self = current_ult();
  if (u == self) return TSU_ERR_INVALID_ARG;
  u->join_lock.lock();
  if (u->detached || u->joiner) {
    u->join_lock.unlock();
    return TSU_ERR_INVALID_ARG;
  }
  if (!u->done && u->proxy) {
    // Its spawn may still wait in a batch: let it leave before we sleep.
    u->join_lock.unlock();
    if (Remote* r = s.remote()) r->flush();
    u->join_lock.lock();
  }
  if (!u->done) {
    Waiter w;
    w.ult = self;
    u->joiner = &w;
    Worker* worker = self ? self->worker : nullptr;
    const bool mine = worker && worker->take_from_nursery(u);
    const bool run_here = mine && Worker::can_run_inline(self, u);
    if (mine && !run_here) u->home->live_add(u);  // it leaves the nursery (see create_thread)
    if (run_here) {
      // Not started and ours alone, with room on our stack: run it here as
      // a plain call (no stack of its own, no switch).
      u->join_lock.unlock();
      Worker::run_inline(self, u);
    } else if (mine && worker->ready_or_requeue(u)) {
      // Not started and now ours alone: run it at once on this worker; its
      // end switches straight back here (exit_current), so no queue and no
      // scheduler loop in between.
      self->state.store(State::kBlocked, std::memory_order_relaxed);
      worker->switch_to(self, u, Action::kRelease, &u->join_lock);
    } else {
      block(w, u->join_lock);  // woken once done is set (thread end or exit value)
    }
  } else {
    u->join_lock.unlock();
  }
  // done is set: nobody else touches the record any more.
  if (u->error == TSU_ERR_INVALID_ARG) {
    // Its function id was not registered where it ran: the handle stays the
    // caller's (ult.h), joinable again or detachable, so it must not keep
    // naming this (gone) waiter as its joiner.
    u->joiner = nullptr;
  }
  return u->error;
}

tsu_status_t read_attr(const tsu_ult_attr_t* attr, CreateArgs& c) {
  if (!attr) return TSU_OK;
  if (attr->struct_size < offsetof(tsu_ult_attr_t, name) + sizeof(const char*))
    return TSU_ERR_INVALID_ARG;
  if ((attr->field_mask & TSU_ULT_ATTR_STACK_SIZE) && attr->stack_size) {
    if (attr->stack_size < 4096 || attr->stack_size > (1ull << 30)) return TSU_ERR_INVALID_ARG;
    c.stack_size = attr->stack_size;
  }
  if (attr->field_mask & TSU_ULT_ATTR_DETACHED) {
    if (attr->detached != 0 && attr->detached != 1) return TSU_ERR_INVALID_ARG;
    c.detached = attr->detached == 1;
  }
  if (attr->field_mask & TSU_ULT_ATTR_MIGRATABLE) {
    if (attr->migratable != 0 && attr->migratable != 1) return TSU_ERR_INVALID_ARG;
    c.migratable = attr->migratable == 1;
  }
  if (attr->field_mask & TSU_ULT_ATTR_NAME) c.name = attr->name;
  return TSU_OK;
}

// tsu_ult_yield's ways out other than the fast path (not inlined: see there).
__attribute__((noinline)) tsu_status_t yield_off_worker() noexcept {
  sched_yield();  // a plain pthread
  return TSU_OK;
}
__attribute__((noinline)) tsu_status_t yield_slow(Worker* w, Ult* self) noexcept {
  w->yield(self);
  return TSU_OK;
}

void print_counters(FILE* f, const tsu_ult_counters_t& c) {
  std::fprintf(f,
               "tsunagi-ult: created %llu finished %llu switches %llu stolen %llu migrated %llu "
               "stacks %llu\n",
               static_cast<unsigned long long>(c.created),
               static_cast<unsigned long long>(c.finished),
               static_cast<unsigned long long>(c.switches),
               static_cast<unsigned long long>(c.stolen),
               static_cast<unsigned long long>(c.migrated),
               static_cast<unsigned long long>(c.stacks));
}
}  // namespace

extern "C" {

tsu_status_t tsu_ult_init(const tsu_ult_config_t* config) {
  std::lock_guard lock(g_lifecycle_mu);
  if (scheduler()) return TSU_ERR_ALREADY_INITIALIZED;
  if (current_worker()) return TSU_ERR_UNSUPPORTED;
  Settings s;
  LbSettings lb;
  const char* error = nullptr;
  if (!load_settings(config, s, error) || !load_lb_settings(lb, error)) {
    std::fprintf(stderr, "tsu_ult_init: %s\n", error);
    return TSU_ERR_CONFIG;
  }
  // The workers compete for the CPUs: tsunagi counts them for TSU_YIELD=auto
  // (also a later tsu_init), and their own waits follow its decision.
  tsu_set_busy_threads(s.workers);
  s.yield_cpu = tsu_yield_when_idle() == 1;
  auto* sched = new (std::nothrow) Scheduler(s);
  if (!sched) {
    tsu_set_busy_threads(0);
    return TSU_ERR_NO_MEMORY;
  }
  // With tsunagi running, threads can cross ranks: collective from here on.
  Remote* remote = nullptr;
  if (tsu_initialized()) {
    uint32_t rank = 0, size = 1;
    tsu_rank(&rank);
    tsu_size(&size);
    remote = new (std::nothrow) Remote(*sched, rank, size, lb);
    if (!remote) {
      delete sched;
      tsu_set_busy_threads(0);
      return TSU_ERR_NO_MEMORY;
    }
    sched->set_remote(remote);
    tsu_status_t st = remote->start();
    // tsu_finalize before tsu_ult_finalize (the wrong order) must find the
    // workers no longer calling tsunagi: they stop in its hook.
    if (st == TSU_OK) st = tsu_add_finalize_hook(&Remote::on_tsunagi_finalize, remote);
    if (st != TSU_OK) {
      delete remote;
      delete sched;
      tsu_set_busy_threads(0);
      return st;
    }
  }
  set_scheduler(sched);
  sched->start();
  return TSU_OK;
}

tsu_status_t tsu_ult_finalize(void) {
  std::lock_guard lock(g_lifecycle_mu);
  Scheduler* s = scheduler();
  if (!s) return TSU_ERR_NOT_INITIALIZED;
  if (current_worker()) return TSU_ERR_UNSUPPORTED;  // from a pthread only
  tsu_status_t st = TSU_OK;
  if (Remote* r = s->remote()) {
    if (r->closed()) {
      st = TSU_ERR_NOT_INITIALIZED;  // tsu_finalize ran first: no collective possible
    } else {
      st = r->finish();  // collective: no rank has work left
      tsu_remove_finalize_hook(&Remote::on_tsunagi_finalize, r);
    }
  }
  s->stop();
  if (const char* v = std::getenv("TSU_STATS"); v && std::strcmp(v, "0") != 0) tsu_ult_dump();
  set_scheduler(nullptr);
  delete s->remote();
  delete s;
  tsu_set_busy_threads(0);
  return st;
}

uint32_t tsu_ult_workers(void) {
  Scheduler* s = scheduler();
  return s ? s->worker_count() : 0;
}

tsu_status_t tsu_ult_create(tsu_ult_t* out, const tsu_ult_attr_t* attr, tsu_ult_fn_t fn,
                            void* arg) {
  Scheduler* s = scheduler();
  if (!s) return TSU_ERR_NOT_INITIALIZED;
  if (!fn) return TSU_ERR_NULL_POINTER;
  CreateArgs c;
  c.fn = fn;
  c.arg = arg;
  if (const tsu_status_t st = read_attr(attr, c); st != TSU_OK) return st;
  if (!out && !c.detached) return TSU_ERR_NULL_POINTER;
  if (Remote* r = s->remote()) c.origin_rank = r->rank();
  Ult* u = nullptr;
  const tsu_status_t st = create_thread(*s, c, &u);
  if (st == TSU_OK && out) *out = c.detached ? nullptr : as_handle(u);
  return st;
}

tsu_status_t tsu_ult_exit(void* value) {
  Ult* self = current_ult();
  if (!self) return TSU_ERR_UNSUPPORTED;
  exit_current(self, value);
}

tsu_status_t tsu_ult_join(tsu_ult_t thread, void** value) {
  Scheduler* s = scheduler();
  if (!s) return TSU_ERR_NOT_INITIALIZED;
  Ult* u = as_ult(thread);
  if (!u) return TSU_ERR_NULL_POINTER;
  const tsu_status_t st = wait_for_end(*s, u);
  if (st == TSU_ERR_INVALID_ARG) return st;
  if (value) *value = u->value;
  s->free_record(u);
  return st;
}

tsu_status_t tsu_ult_register(uint32_t fn_id, tsu_ult_remote_fn_t fn) {
  const tsu_status_t st = Remote::register_fn(fn_id, fn);
  if (st != TSU_OK) return st;
  // Collective: nobody spawns with the id before every rank has it.
  if (tsu_initialized()) return tsu_barrier();
  return TSU_OK;
}

tsu_status_t tsu_ult_spawn(tsu_ult_t* out, uint32_t rank, uint32_t fn_id, const void* arg,
                           size_t arg_len, const tsu_ult_attr_t* attr) {
  Scheduler* s = scheduler();
  if (!s) return TSU_ERR_NOT_INITIALIZED;
  CreateArgs c;
  if (const tsu_status_t st = read_attr(attr, c); st != TSU_OK) return st;
  if (Remote* r = s->remote()) return r->spawn(out, rank, fn_id, arg, arg_len, c);
  // Without tsunagi: a job of one rank.
  if (rank != 0 && rank != TSU_ULT_ANY_RANK) return TSU_ERR_BAD_RANK;
  if (fn_id > TSU_ULT_FN_MAX || arg_len > TSU_ULT_ARG_MAX || (arg_len && !arg))
    return TSU_ERR_INVALID_ARG;
  if (!out && !c.detached) return TSU_ERR_NULL_POINTER;
  auto* info = tsu::util::RecordPool<RemoteInfo>::make();
  if (!info) return TSU_ERR_NO_MEMORY;
  info->fn_id = fn_id;
  info->detached = c.detached;
  info->arg_len = static_cast<uint16_t>(arg_len);
  if (arg_len) std::memcpy(info->arg, arg, arg_len);
  c.fn = &Remote::run_spawned;
  c.arg = info;
  c.remote = info;
  Ult* u = nullptr;
  const tsu_status_t st = create_thread(*s, c, &u);
  if (st != TSU_OK) {
    tsu::util::RecordPool<RemoteInfo>::drop(info);
    return st;
  }
  if (out) *out = c.detached ? nullptr : as_handle(u);
  return TSU_OK;
}

tsu_status_t tsu_ult_join_value(tsu_ult_t thread, void* value, size_t cap, size_t* len) {
  Scheduler* s = scheduler();
  if (!s) return TSU_ERR_NOT_INITIALIZED;
  Ult* u = as_ult(thread);
  if (!u) return TSU_ERR_NULL_POINTER;
  if (!u->remote) return TSU_ERR_INVALID_ARG;  // not spawned: use tsu_ult_join
  tsu_status_t st = wait_for_end(*s, u);
  if (st == TSU_ERR_INVALID_ARG) return st;
  const std::size_t n = u->remote->value_len;
  if (value && n) std::memcpy(value, u->remote->value, std::min<std::size_t>(n, cap));
  if (len) *len = n;
  s->free_record(u);
  if (st == TSU_OK && n > cap) st = TSU_ERR_TRUNCATED;
  return st;
}

tsu_status_t tsu_ult_rank_of(tsu_ult_t thread, uint32_t* rank) {
  Ult* u = as_ult(thread);
  if (!u || !rank) return TSU_ERR_NULL_POINTER;
  Scheduler* s = scheduler();
  if (!s) return TSU_ERR_NOT_INITIALIZED;
  u->join_lock.lock();
  const bool proxy = u->proxy;
  u->join_lock.unlock();
  *rank = proxy && u->remote ? u->remote->runner.load(std::memory_order_relaxed)
                             : (s->remote() ? s->remote()->rank() : 0);
  return TSU_OK;
}

tsu_status_t tsu_ult_detach(tsu_ult_t thread) {
  Scheduler* s = scheduler();
  if (!s) return TSU_ERR_NOT_INITIALIZED;
  Ult* u = as_ult(thread);
  if (!u) return TSU_ERR_NULL_POINTER;
  u->join_lock.lock();
  if (u->detached || u->joiner) {
    u->join_lock.unlock();
    return TSU_ERR_INVALID_ARG;
  }
  if (u->done) {
    u->join_lock.unlock();
    s->free_record(u);
    return TSU_OK;
  }
  u->detached = true;
  u->join_lock.unlock();
  return TSU_OK;
}

tsu_status_t tsu_ult_yield(void) {
  // Every way out is a tail call, so the fast path needs no stack frame.
  Worker* w = current_worker_once();  // (not read again after the switch)
  Ult* self = w ? w->current() : nullptr;
  if (!self) return yield_off_worker();
  if (Ult* next = w->yield_fast_next(self)) return w->resume_yielded(next);
  return yield_slow(w, self);
}

tsu_ult_t tsu_ult_self(void) { return as_handle(current_ult()); }

uint64_t tsu_ult_id(tsu_ult_t thread) { return thread ? as_ult(thread)->id : 0; }

tsu_status_t tsu_ult_counters(tsu_ult_counters_t* out) {
  if (!out) return TSU_ERR_NULL_POINTER;
  *out = tsu_ult_counters_t{};
  Scheduler* s = scheduler();
  if (!s) return TSU_ERR_NOT_INITIALIZED;
  out->created = s->pthread_created();
  for (uint32_t i = 0; i < s->worker_count(); ++i) {
    const WorkerCounters& c = s->worker(i).counters;
    out->created += c.created.load(std::memory_order_relaxed);
    out->finished += c.finished.load(std::memory_order_relaxed);
    out->switches += c.switches.load(std::memory_order_relaxed);
    out->stolen += c.stolen.load(std::memory_order_relaxed);
  }
  out->stacks = s->stack_pool().mapped();
  if (Remote* r = s->remote()) out->migrated = r->migrated();
  return TSU_OK;
}

tsu_status_t tsu_ult_dump(void) {
  Scheduler* s = scheduler();
  if (!s) return TSU_ERR_NOT_INITIALIZED;
  tsu_ult_counters_t c;
  tsu_ult_counters(&c);
  print_counters(stderr, c);
  // A thread still in its creator's nursery (at most one per worker, not
  // started) is not in the live list yet: counted here, not listed.
  uint32_t nursery = 0;
  for (uint32_t i = 0; i < s->worker_count(); ++i) nursery += s->worker(i).has_nursery() ? 1 : 0;
  if (nursery)
    std::fprintf(stderr, "tsunagi-ult:   %u new thread(s) in workers' nurseries, not started\n",
                 nursery);
  for (uint32_t i = 0; i < s->worker_count(); ++i) {
    s->worker(i).live_for_each([&](const Ult& u) {
      std::fprintf(stderr, "tsunagi-ult:   thread %llu '%s' %s, created on worker %u of rank %u\n",
                   static_cast<unsigned long long>(u.id), u.name,
                   state_name(u.state.load(std::memory_order_relaxed)), i, u.origin_rank);
    });
  }
  return TSU_OK;
}

}  // extern "C"
