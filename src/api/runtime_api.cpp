// tsu_init / tsu_finalize and the queries about ranks and nodes.
#include <sched.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "api/api_common.hpp"
#include "core/blocking_wait.hpp"
#include "core/wait_hook.hpp"
#include "core/wait_table.hpp"
#include "core/waiter.hpp"
#include "api/layers.hpp"
#include "core/trace.hpp"

using namespace tsu;
using tsu::api::live_runtime;

namespace {
std::mutex g_init_mutex;  // serializes init and finalize
uint64_t g_epoch = 0;     // guarded by g_init_mutex
bool g_finalized = false; // guarded by g_init_mutex: a job ended in this process

// Layers' finalize hooks (tsu_add_finalize_hook), guarded by g_init_mutex.
struct FinalizeHook {
  tsu_finalize_hook_fn_t fn;
  void* ctx;
};
FinalizeHook g_finalize_hooks[TSU_FINALIZE_HOOKS_MAX];
uint32_t g_finalize_hook_count = 0;
}  // namespace

extern "C" {

tsu_status_t tsu_init(const tsu_config_t* config) {
  std::lock_guard lock(g_init_mutex);
  if (live_runtime())
    return core::fail(TSU_ERR_ALREADY_INITIALIZED, "tsu_init: tsunagi is already initialized");
  // The launcher's bootstrap session ends at tsu_finalize: only a singleton
  // (no launcher) can start a second job in the same process.
  if (g_finalized && bootstrap::started_by_launcher())
    return core::fail(TSU_ERR_UNSUPPORTED,
                      "tsu_init: a rank started by a launcher cannot initialize again after "
                      "tsu_finalize");
  std::unique_ptr<runtime::Runtime> rt;
  std::string error;
  const tsu_status_t st = runtime::Runtime::create(config, ++g_epoch, rt, error, api::kLayersFactory);
  if (st != TSU_OK) {
    TSU_LOG_ERROR("tsu_init failed: %s", error.c_str());
    return core::fail(st, "tsu_init: %s", error.c_str());
  }
  // The timeline starts once the rank is known.  A file that cannot be
  // created only loses the trace: failing here, after the collective
  // start, would leave the other ranks waiting.
  if (!rt->config().trace.empty() &&
      core::trace::start(rt->config().trace, rt->rank(), error) != TSU_OK)
    TSU_LOG_ERROR("%s (tracing stays off)", error.c_str());
  runtime::g_runtime.store(rt.release(), std::memory_order_release);
  return TSU_OK;
}

tsu_status_t tsu_finalize(void) {
  std::lock_guard lock(g_init_mutex);
  runtime::Runtime* rt = live_runtime();
  if (!rt) return api::not_initialized("tsu_finalize");
  if (runtime::in_progress_context())
    return core::fail(TSU_ERR_UNSUPPORTED,
                      "tsu_finalize: cannot be called from a completion callback");
  // Layers' own pthreads stop calling us before the teardown (their hooks
  // return only then), after every rank has reached finalize.
  std::string error;
  const tsu_status_t st = rt->finalize(error, [] {
    while (g_finalize_hook_count > 0) {
      const FinalizeHook h = g_finalize_hooks[--g_finalize_hook_count];
      h.fn(h.ctx);
    }
  });
  g_finalized = true;
  runtime::g_runtime.store(nullptr, std::memory_order_release);
  delete rt;
  core::trace::stop();  // the progress thread has stopped: every buffer is quiet
  core::log_set_rank(-1);
  if (st != TSU_OK) return core::fail(st, "tsu_finalize: %s", error.c_str());
  return TSU_OK;
}

int tsu_initialized(void) { return live_runtime() != nullptr; }

tsu_status_t tsu_add_finalize_hook(tsu_finalize_hook_fn_t fn, void* ctx) {
  if (!fn) return core::fail(TSU_ERR_NULL_POINTER, "tsu_add_finalize_hook: fn is NULL");
  std::lock_guard lock(g_init_mutex);
  if (!live_runtime()) return api::not_initialized("tsu_add_finalize_hook");
  if (g_finalize_hook_count == TSU_FINALIZE_HOOKS_MAX)
    return core::fail(TSU_ERR_LIMIT, "tsu_add_finalize_hook: %u hooks are set already",
                      TSU_FINALIZE_HOOKS_MAX);
  g_finalize_hooks[g_finalize_hook_count++] = FinalizeHook{fn, ctx};
  return TSU_OK;
}

tsu_status_t tsu_remove_finalize_hook(tsu_finalize_hook_fn_t fn, void* ctx) {
  std::lock_guard lock(g_init_mutex);
  if (!live_runtime()) return api::not_initialized("tsu_remove_finalize_hook");
  for (uint32_t i = g_finalize_hook_count; i-- > 0;) {
    if (g_finalize_hooks[i].fn != fn || g_finalize_hooks[i].ctx != ctx) continue;
    for (uint32_t j = i + 1; j < g_finalize_hook_count; ++j)
      g_finalize_hooks[j - 1] = g_finalize_hooks[j];
    --g_finalize_hook_count;
    return TSU_OK;
  }
  return core::fail(TSU_ERR_INVALID_ARG, "tsu_remove_finalize_hook: no such hook");
}

tsu_status_t tsu_rank(uint32_t* rank) {
  runtime::Runtime* rt = live_runtime();
  if (!rt) return api::not_initialized("tsu_rank");
  if (!rank) return core::fail(TSU_ERR_NULL_POINTER, "tsu_rank: rank is NULL");
  *rank = rt->rank();
  return TSU_OK;
}

tsu_status_t tsu_size(uint32_t* size) {
  runtime::Runtime* rt = live_runtime();
  if (!rt) return api::not_initialized("tsu_size");
  if (!size) return core::fail(TSU_ERR_NULL_POINTER, "tsu_size: size is NULL");
  *size = rt->size();
  return TSU_OK;
}

tsu_status_t tsu_node_of(uint32_t rank, uint32_t* node) {
  runtime::Runtime* rt = live_runtime();
  if (!rt) return api::not_initialized("tsu_node_of");
  if (!node) return core::fail(TSU_ERR_NULL_POINTER, "tsu_node_of: node is NULL");
  if (rank >= rt->size())
    return core::fail(TSU_ERR_BAD_RANK, "tsu_node_of: rank %u >= job size %u", rank, rt->size());
  *node = rt->node_of(rank);
  return TSU_OK;
}

tsu_status_t tsu_node_count(uint32_t* count) {
  runtime::Runtime* rt = live_runtime();
  if (!rt) return api::not_initialized("tsu_node_count");
  if (!count) return core::fail(TSU_ERR_NULL_POINTER, "tsu_node_count: count is NULL");
  *count = rt->node_count();
  return TSU_OK;
}

tsu_status_t tsu_progress(void) {
  runtime::Runtime* rt = live_runtime();
  if (!rt) return api::not_initialized("tsu_progress");
  // Seen by the progress thread and a barrier's helper thread, which then
  // leave progress to us (ProgressEngine::thread_main, Runtime::barrier).
  if (!runtime::in_progress_context()) rt->engine().note_external_poll(core::wait_hook_set());
  // Nothing to do: a rank sharing its CPU lets the peer it waits for run.
  // (Tested first, so the usual path stays a plain call of progress().)
  if (rt->yield_when_idle()) {
    if (!rt->engine().progress() &&
        (runtime::in_progress_context() || !core::wait_hook_yield()))
      sched_yield();
    return TSU_OK;
  }
  // Inside a user-level thread (a wait hook is set), an empty pass lets the
  // scheduler run other threads: polling loops there do not hold the worker.
  if (!rt->engine().progress() && !runtime::in_progress_context()) core::wait_hook_yield();
  return TSU_OK;
}

tsu_status_t tsu_set_busy_threads(uint32_t threads) {
  // (Under the init lock: the runtime stays while it is told.)
  std::lock_guard lock(g_init_mutex);
  runtime::set_busy_threads(threads ? threads : 1);
  if (runtime::Runtime* rt = live_runtime()) {
    rt->update_yield();
    TSU_LOG_INFO("busy threads %u: yield=%d", runtime::busy_threads(), rt->yield_when_idle());
  }
  return TSU_OK;
}

int tsu_yield_when_idle(void) {
  if (runtime::Runtime* rt = live_runtime()) return rt->yield_when_idle() ? 1 : 0;
  // No job: TSU_YIELD from the environment (auto if it does not parse), and
  // auto counts this process's busy threads alone.
  core::Config cfg;
  std::string error;
  if (core::config_from_env(cfg, [](const char* n) { return std::getenv(n); }, error) != TSU_OK)
    cfg.yield_idle = -1;
  if (cfg.yield_idle >= 0) return cfg.yield_idle;
  return runtime::busy_threads() > runtime::affinity_cpus() ? 1 : 0;
}

tsu_status_t tsu_set_wait_hook(tsu_wait_hook_fn_t fn, void* ctx) {
  core::set_wait_hook(fn, ctx);
  return TSU_OK;
}

tsu_status_t tsu_set_park_hook(tsu_park_fn_t park, tsu_unpark_fn_t unpark, void* ctx) {
  if (park && !unpark)
    return core::fail(TSU_ERR_INVALID_ARG, "tsu_set_park_hook: park set without unpark");
  core::set_park_hook(park, unpark, ctx);
  return TSU_OK;
}

int tsu_waiter_commit(tsu_waiter_t* waiter, void* token) {
  return waiter && static_cast<core::Waiter*>(waiter)->commit(token) ? 1 : 0;
}

tsu_status_t tsu_barrier(void) {
  runtime::Runtime* rt = live_runtime();
  if (!rt) return api::not_initialized("tsu_barrier");
  if (runtime::in_progress_context())
    return core::fail(TSU_ERR_UNSUPPORTED,
                      "tsu_barrier: cannot block inside a completion callback");
  tsu_status_t st = TSU_OK;
  if (core::wait_hook_set()) {
    // On a user-level thread scheduler's worker (the hook is set there): the
    // bootstrap barrier blocks in a socket wait, which would hold the worker
    // and every other thread queued on it (perhaps the very one another rank
    // waits for before it enters the barrier).  A helper pthread waits in it
    // instead, while this caller waits through the hook like any other
    // blocking call (the scheduler runs its other threads meanwhile).
    // With a park hook the caller parks until the helper notifies `done`.
    std::atomic<bool> done{false};
    std::thread helper;
    try {
      helper = std::thread([&] {
        st = rt->barrier();
        done.store(true, std::memory_order_seq_cst);
        core::wait_table::notify(&done);
      });
    } catch (...) {
      st = rt->barrier();
      done.store(true, std::memory_order_relaxed);
    }
    auto not_done = [](const void* d) {
      return !static_cast<const std::atomic<bool>*>(d)->load(std::memory_order_seq_cst);
    };
    core::BlockingWait wait(&done, rt->manual_progress(), not_done, &done);
    while (!done.load(std::memory_order_acquire)) wait.idle();
    if (helper.joinable()) helper.join();
  } else {
    st = rt->barrier();
  }
  if (st != TSU_OK) return core::fail(st, "tsu_barrier: the bootstrap barrier failed");
  return TSU_OK;
}

tsu_status_t tsu_stats_print(void) {
  runtime::Runtime* rt = live_runtime();
  if (!rt) return api::not_initialized("tsu_stats_print");
  rt->print_stats();
  rt->print_transport_stats();
  return TSU_OK;
}

}  // extern "C"
