// Completion counters.
#include <atomic>

#include "api/api_common.hpp"
#include "core/blocking_wait.hpp"
#include "core/wait_table.hpp"

using namespace tsu;

namespace {

void counter_callback(tsu_status_t status, void* arg) {
  auto* c = static_cast<tsu_counter_t*>(arg);
  if (status != TSU_OK) {
    std::atomic_ref<int32_t> err(c->first_error);
    int32_t expected = TSU_OK;
    err.compare_exchange_strong(expected, status, std::memory_order_relaxed);
  }
  // Release: whoever sees the count also sees the request's effects.
  // Seq_cst: it comes before notify's read of the wait table (wait_table.hpp).
  std::atomic_ref<uint64_t>(c->completed).fetch_add(1, std::memory_order_seq_cst);
  // Only the address: the waiter may free the counter once it sees the count.
  core::wait_table::notify(c);
}

// A parked tsu_counter_wait's condition (seq_cst: see wait_table.hpp).
struct CounterWait {
  tsu_counter_t* counter;
  uint64_t n;
};
bool counter_short(const void* a) {
  const auto* w = static_cast<const CounterWait*>(a);
  return std::atomic_ref<uint64_t>(w->counter->completed).load(std::memory_order_seq_cst) < w->n;
}

tsu_status_t counter_status(tsu_counter_t* c) {
  return std::atomic_ref<int32_t>(c->first_error).load(std::memory_order_relaxed);
}

}  // namespace

extern "C" {

void tsu_counter_init(tsu_counter_t* counter) {
  if (!counter) return;
  counter->completed = 0;
  counter->first_error = TSU_OK;
  counter->reserved = 0;
}

tsu_cb_t tsu_counter_cb(tsu_counter_t* counter) { return tsu_cb(counter_callback, counter); }

uint64_t tsu_counter_value(const tsu_counter_t* counter) {
  if (!counter) return 0;
  return std::atomic_ref<uint64_t>(const_cast<uint64_t&>(counter->completed))
      .load(std::memory_order_acquire);
}

tsu_status_t tsu_counter_wait(tsu_counter_t* counter, uint64_t n) {
  if (!counter) return core::fail(TSU_ERR_NULL_POINTER, "tsu_counter_wait: counter is NULL");
  if (tsu_counter_value(counter) >= n) return counter_status(counter);
  runtime::Runtime* rt = api::live_runtime();
  if (!rt) return api::not_initialized("tsu_counter_wait");
  if (runtime::in_progress_context())
    return core::fail(TSU_ERR_UNSUPPORTED,
                      "tsu_counter_wait: cannot block inside a completion callback");
  // Parked or asleep until the callback wakes it (the counter's address is
  // the key: the public struct has no room for a pointer, and the callback
  // must not read the counter after counting).
  const CounterWait w{counter, n};
  core::BlockingWait wait(counter, rt->manual_progress(), counter_short, &w,
                          &rt->engine().waiters_polling());
  while (tsu_counter_value(counter) < n) {
    if (rt->engine().progress()) wait.worked();
    else wait.idle();
  }
  return counter_status(counter);
}

}  // extern "C"
