// The C entry points of libtsunagi-ult: scheduler lifecycle, threads,
// counters and the dump.
#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "scheduler.hpp"
#include "thread.hpp"
#include "tsunagi/ult.h"
#include "worker.hpp"

using namespace tsu::ult;

namespace {
std::mutex g_lifecycle_mu;  // init/finalize

Ult* as_ult(tsu_ult_t t) { return reinterpret_cast<Ult*>(t); }
tsu_ult_t as_handle(Ult* u) { return reinterpret_cast<tsu_ult_t>(u); }

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
  const char* error = nullptr;
  if (!load_settings(config, s, error)) {
    std::fprintf(stderr, "tsu_ult_init: %s\n", error);
    return TSU_ERR_CONFIG;
  }
  auto* sched = new (std::nothrow) Scheduler(s);
  if (!sched) return TSU_ERR_NO_MEMORY;
  set_scheduler(sched);
  sched->start();
  return TSU_OK;
}

tsu_status_t tsu_ult_finalize(void) {
  std::lock_guard lock(g_lifecycle_mu);
  Scheduler* s = scheduler();
  if (!s) return TSU_ERR_NOT_INITIALIZED;
  if (current_worker()) return TSU_ERR_UNSUPPORTED;  // from a pthread only
  s->stop();
  if (const char* v = std::getenv("TSU_STATS"); v && std::strcmp(v, "0") != 0) tsu_ult_dump();
  set_scheduler(nullptr);
  delete s;
  return TSU_OK;
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
  std::size_t stack_size = s->settings().stack_size;
  bool detached = false;
  const char* name = nullptr;
  if (attr) {
    if (attr->struct_size < offsetof(tsu_ult_attr_t, name) + sizeof(const char*))
      return TSU_ERR_INVALID_ARG;
    if ((attr->field_mask & TSU_ULT_ATTR_STACK_SIZE) && attr->stack_size) {
      if (attr->stack_size < 4096 || attr->stack_size > (1ull << 30)) return TSU_ERR_INVALID_ARG;
      stack_size = attr->stack_size;
    }
    if (attr->field_mask & TSU_ULT_ATTR_DETACHED) {
      if (attr->detached != 0 && attr->detached != 1) return TSU_ERR_INVALID_ARG;
      detached = attr->detached == 1;
    }
    if (attr->field_mask & TSU_ULT_ATTR_NAME) name = attr->name;
  }
  if (!out && !detached) return TSU_ERR_NULL_POINTER;
  Worker* w = current_worker();
  if (w && &w->scheduler() != s) w = nullptr;
  Ult* u = s->new_record(w);
  if (!u) return TSU_ERR_NO_MEMORY;
  u->fn = fn;
  u->arg = arg;
  u->stack_size = stack_size;
  u->detached = detached;
  u->id = s->next_id();
  u->home = w ? w : &s->worker(0);
  if (name) {
    std::strncpy(u->name, name, TSU_ULT_NAME_MAX);
    u->name[TSU_ULT_NAME_MAX] = '\0';
  } else {
    u->name[0] = '\0';
  }
  u->home->live_add(u);
  if (w) {
    WorkerCounters::bump(w->counters.created);
  } else {
    s->count_pthread_create();
  }
  s->note_created();
  if (out) *out = as_handle(u);
  // After make_ready the thread may run and (if detached) end at once.
  if (!s->make_ready(u)) {
    u->home->live_remove(u);
    s->note_finished();
    s->free_record(u);
    return TSU_ERR_NO_MEMORY;
  }
  return TSU_OK;
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
  Ult* self = current_ult();
  if (u == self) return TSU_ERR_INVALID_ARG;
  u->join_lock.lock();
  if (u->detached || u->joiner) {
    u->join_lock.unlock();
    return TSU_ERR_INVALID_ARG;
  }
  if (!u->done) {
    Waiter w;
    w.ult = self;
    u->joiner = &w;
    block(w, u->join_lock);  // woken by complete_thread, after done was set
  } else {
    u->join_lock.unlock();
  }
  // done is set and the thread will not touch its record again.
  const tsu_status_t st = u->error;
  if (value) *value = u->value;
  s->free_record(u);
  return st;
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
  Ult* self = current_ult();
  if (!self) {
    sched_yield();
    return TSU_OK;
  }
  Worker* w = self->worker;
  if (Ult* next = w->next_local()) w->switch_to(self, next, Action::kRequeue);
  return TSU_OK;
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
  return TSU_OK;
}

tsu_status_t tsu_ult_dump(void) {
  Scheduler* s = scheduler();
  if (!s) return TSU_ERR_NOT_INITIALIZED;
  tsu_ult_counters_t c;
  tsu_ult_counters(&c);
  print_counters(stderr, c);
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
