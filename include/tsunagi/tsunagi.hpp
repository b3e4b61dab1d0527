// tsunagi C++20 convenience layer over the C API: lambdas as completion
// callbacks, futures for results, typed atomics.  Header-only; it adds no ABI.
//
//   tsu::status st = tsu::try_put(dst, src, len, [](tsu_status_t s) { ... });
//   tsu::future<uint64_t> old = tsu::fetch_add<uint64_t>(counter_addr, 1);
//   uint64_t v = old.get();          // waits (driving progress if manual)
//
// The *_async functions retry TSU_EAGAIN for you (calling tsu_progress and
// yielding); the try_* functions never block and return the C status.
#ifndef TSUNAGI_TSUNAGI_HPP
#define TSUNAGI_TSUNAGI_HPP

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>

#include "tsunagi/tsunagi.h"

namespace tsu {

using status = tsu_status_t;
using gaddr = tsu_gaddr_t;
using laddr = tsu_laddr_t;

// Thrown only by the C++ helpers that cannot return a status (future::get on
// a failed request, runtime's constructor).  Nothing throws across the C API.
class error : public std::exception {
 public:
  error(status s, std::string what) : status_(s), what_(std::move(what)) {}
  status code() const noexcept { return status_; }
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  status status_;
  std::string what_;
};

// RAII job membership: tsu_init in the constructor, tsu_finalize in the
// destructor.
class runtime {
 public:
  explicit runtime(const tsu_config_t* config = nullptr) {
    const status st = tsu_init(config);
    if (st != TSU_OK) throw error(st, std::string("tsu_init: ") + tsu_last_error());
  }
  ~runtime() { tsu_finalize(); }
  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;

  static uint32_t rank() noexcept {
    uint32_t r = 0;
    tsu_rank(&r);
    return r;
  }
  static uint32_t size() noexcept {
    uint32_t s = 0;
    tsu_size(&s);
    return s;
  }
  static void barrier() {
    const status st = tsu_barrier();
    if (st != TSU_OK) throw error(st, tsu_last_error());
  }
};

namespace detail {

// A heap-allocated closure that deletes itself after its one call.
template <typename F>
struct closure {
  F fn;
  static void invoke(tsu_status_t st, void* arg) {
    std::unique_ptr<closure> self(static_cast<closure*>(arg));
    self->fn(st);
  }
};

template <typename F>
tsu_cb_t make_cb(F&& f, std::unique_ptr<closure<std::decay_t<F>>>& owner) {
  owner.reset(new closure<std::decay_t<F>>{std::forward<F>(f)});
  return tsu_cb(&closure<std::decay_t<F>>::invoke, owner.get());
}

// Issues with a freshly made callback; on rejection the closure is freed.
template <typename Issue, typename F>
status issue_with(Issue&& issue, F&& on_done) {
  std::unique_ptr<closure<std::decay_t<F>>> owner;
  const tsu_cb_t cb = make_cb(std::forward<F>(on_done), owner);
  const status st = issue(cb);
  if (st == TSU_OK) owner.release();  // the callback owns it now
  return st;
}

// Retries TSU_EAGAIN, making progress in between.
template <typename TryFn>
status retry_eagain(TryFn&& attempt) {
  for (;;) {
    const status st = attempt();
    if (st != TSU_EAGAIN) return st;
    tsu_progress();
    std::this_thread::yield();
  }
}

template <typename T>
struct shared_state {
  std::atomic<bool> ready{false};
  status st = TSU_OK;
  T value{};
};
template <>
struct shared_state<void> {
  std::atomic<bool> ready{false};
  status st = TSU_OK;
};

template <typename T>
constexpr tsu_atype_t atype() {
  if constexpr (std::is_same_v<T, int32_t>) return TSU_TYPE_INT32;
  else if constexpr (std::is_same_v<T, uint32_t>) return TSU_TYPE_UINT32;
  else if constexpr (std::is_same_v<T, int64_t>) return TSU_TYPE_INT64;
  else if constexpr (std::is_same_v<T, uint64_t>) return TSU_TYPE_UINT64;
  else if constexpr (std::is_same_v<T, double>) return TSU_TYPE_DOUBLE;
  else static_assert(!sizeof(T), "atomics exist for int32_t, uint32_t, int64_t, uint64_t, double");
}

}  // namespace detail

// The result of one request.  wait() blocks (driving progress); get() returns
// the value or throws tsu::error when the request failed.
template <typename T>
class future {
 public:
  future() = default;
  explicit future(std::shared_ptr<detail::shared_state<T>> s) : state_(std::move(s)) {}
  bool valid() const noexcept { return state_ != nullptr; }
  bool ready() const noexcept { return state_ && state_->ready.load(std::memory_order_acquire); }
  status wait() const {
    if (!state_) return TSU_ERR_INVALID_ARG;
    while (!ready()) {
      tsu_progress();
      std::this_thread::yield();
    }
    return state_->st;
  }
  T get() const {
    const status st = wait();
    if (st != TSU_OK) throw error(st, tsu_strerror(st));
    if constexpr (!std::is_void_v<T>) return state_->value;
  }

 private:
  std::shared_ptr<detail::shared_state<T>> state_;
};

// ---- Non-blocking, with a lambda called as on_done(tsu_status_t) ----------
template <typename F>
status try_put(gaddr dst, laddr src, std::size_t len, F&& on_done) {
  return detail::issue_with([&](tsu_cb_t cb) { return tsu_try_put(dst, src, len, cb); },
                            std::forward<F>(on_done));
}
template <typename F>
status try_get(laddr dst, gaddr src, std::size_t len, F&& on_done) {
  return detail::issue_with([&](tsu_cb_t cb) { return tsu_try_get(dst, src, len, cb); },
                            std::forward<F>(on_done));
}
template <typename F>
status try_copy(gaddr dst, gaddr src, std::size_t len, F&& on_done) {
  return detail::issue_with([&](tsu_cb_t cb) { return tsu_try_copy(dst, src, len, cb); },
                            std::forward<F>(on_done));
}

// ---- Futures (EAGAIN retried inside) ---------------------------------------
namespace detail {
template <typename T, typename Issue>
future<T> make_future(Issue&& issue) {
  auto state = std::make_shared<shared_state<T>>();
  auto* raw = state.get();
  // The callback holds a reference to the state until it runs.
  auto* keep = new std::shared_ptr<shared_state<T>>(state);
  const tsu_cb_t cb = tsu_cb(
      [](tsu_status_t st, void* arg) {
        std::unique_ptr<std::shared_ptr<shared_state<T>>> k(
            static_cast<std::shared_ptr<shared_state<T>>*>(arg));
        (*k)->st = st;
        (*k)->ready.store(true, std::memory_order_release);
      },
      keep);
  const status st = retry_eagain([&] { return issue(cb, raw); });
  if (st != TSU_OK) {
    delete keep;
    state->st = st;
    state->ready.store(true, std::memory_order_release);
  }
  return future<T>(std::move(state));
}
}  // namespace detail

inline future<void> put(gaddr dst, laddr src, std::size_t len) {
  return detail::make_future<void>(
      [&](tsu_cb_t cb, detail::shared_state<void>*) { return tsu_try_put(dst, src, len, cb); });
}
inline future<void> get(laddr dst, gaddr src, std::size_t len) {
  return detail::make_future<void>(
      [&](tsu_cb_t cb, detail::shared_state<void>*) { return tsu_try_get(dst, src, len, cb); });
}
inline future<void> copy(gaddr dst, gaddr src, std::size_t len) {
  return detail::make_future<void>(
      [&](tsu_cb_t cb, detail::shared_state<void>*) { return tsu_try_copy(dst, src, len, cb); });
}

// Generic atomic returning the fetched value (or T{} for non-fetching ops).
template <typename T>
future<T> atomic(gaddr target, tsu_aop_t op, T operand = T{}, T compare = T{}) {
  return detail::make_future<T>([&](tsu_cb_t cb, detail::shared_state<T>* s) {
    return tsu_try_atomic(target, op, detail::atype<T>(), &operand, &compare, &s->value, cb);
  });
}
template <typename T>
future<T> fetch_add(gaddr t, T v) { return atomic<T>(t, TSU_AOP_FETCH_ADD, v); }
template <typename T>
future<T> compare_swap(gaddr t, T expected, T desired) {
  return atomic<T>(t, TSU_AOP_CAS, desired, expected);
}
template <typename T>
future<T> swap(gaddr t, T v) { return atomic<T>(t, TSU_AOP_SWAP, v); }
template <typename T>
future<T> load(gaddr t) { return atomic<T>(t, TSU_AOP_LOAD); }
template <typename T>
future<void> store(gaddr t, T v) {
  return detail::make_future<void>([&](tsu_cb_t cb, detail::shared_state<void>*) {
    return tsu_try_atomic(t, TSU_AOP_STORE, detail::atype<T>(), &v, nullptr, nullptr, cb);
  });
}

// Waits for every request of the calling thread.
inline status quiet() { return tsu_quiet(); }

}  // namespace tsu

#endif  // TSUNAGI_TSUNAGI_HPP
