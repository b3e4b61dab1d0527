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
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
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

// A segment of this rank (tsu_segment_alloc_ex), freed by the destructor.
// flags: 0 or TSU_SEG_NIC_ATOMICS (throws error(TSU_ERR_UNSUPPORTED) where
// the job's network transport cannot execute atomics in its adapter).
class segment {
 public:
  explicit segment(std::size_t size, unsigned flags = 0) {
    const status st = tsu_segment_alloc_ex(size, flags, &id_, &base_);
    if (st != TSU_OK) throw error(st, std::string("tsu_segment_alloc_ex: ") + tsu_last_error());
  }
  ~segment() { tsu_segment_free(id_); }
  segment(const segment&) = delete;
  segment& operator=(const segment&) = delete;

  tsu_seg_t id() const noexcept { return id_; }
  void* base() const noexcept { return base_; }
  // Who executes its atomics (TSU_ATOMIC_SITE_NIC only with TSU_SEG_NIC_ATOMICS).
  tsu_atomic_site_t atomic_site() const noexcept {
    tsu_atomic_site_t site = TSU_ATOMIC_SITE_CPU;
    tsu_segment_atomic_site(id_, &site);
    return site;
  }

 private:
  tsu_seg_t id_ = 0;
  void* base_ = nullptr;
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

// A future's completion: `ready` for a look, and a counter that wait() blocks
// on (tsu_counter_wait: a user-level thread parks until the callback counts).
struct completion {
  std::atomic<bool> ready{false};
  status st = TSU_OK;
  tsu_counter_t done{0, TSU_OK, 0};
  // Publishes `result` (and a value stored before), then wakes a waiter.  The
  // counter is counted last: a waiter may drop the state once it sees it.
  void complete(status result) noexcept {
    st = result;
    ready.store(true, std::memory_order_release);
    const tsu_cb_t count = tsu_counter_cb(&done);
    count.fn(TSU_OK, count.arg);
  }
};

template <typename T>
struct shared_state : completion {
  T value{};
};
template <>
struct shared_state<void> : completion {};

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

// The result of one request.  wait() blocks like tsu_counter_wait (driving
// progress in manual mode; a user-level thread is parked until the request
// completes); get() returns the value or throws tsu::error when the request
// failed.  wait() cannot block inside a completion callback or a handler: it
// returns TSU_ERR_UNSUPPORTED there (TSU_ERR_NOT_INITIALIZED after
// tsu_finalize) while the request is still pending.
template <typename T>
class future {
 public:
  future() = default;
  explicit future(std::shared_ptr<detail::shared_state<T>> s) : state_(std::move(s)) {}
  bool valid() const noexcept { return state_ != nullptr; }
  bool ready() const noexcept { return state_ && state_->ready.load(std::memory_order_acquire); }
  status wait() const {
    if (!state_) return TSU_ERR_INVALID_ARG;
    if (!ready()) {
      const status st = tsu_counter_wait(&state_->done, 1);
      if (st != TSU_OK) return st;  // could not block here; still pending
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
        // `k` keeps the state alive past the count (a waiter may drop it).
        std::unique_ptr<std::shared_ptr<shared_state<T>>> k(
            static_cast<std::shared_ptr<shared_state<T>>*>(arg));
        (*k)->complete(st);
      },
      keep);
  const status st = retry_eagain([&] { return issue(cb, raw); });
  if (st != TSU_OK) {
    delete keep;
    state->complete(st);
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

// Waits for every request of the calling thread; returns the first error of
// its implicit requests (below) since the last quiet.
inline status quiet() { return tsu_quiet(); }

// ---- Implicit completion: no callback, completed by quiet() -----------------
// try_* never block (TSU_EAGAIN: retry); the plain forms retry TSU_EAGAIN for
// you (driving progress) and return the status of the call.
inline status try_put_nbi(gaddr dst, laddr src, std::size_t len) noexcept {
  return tsu_try_put_nbi(dst, src, len);
}
inline status try_get_nbi(laddr dst, gaddr src, std::size_t len) noexcept {
  return tsu_try_get_nbi(dst, src, len);
}
inline status try_copy_nbi(gaddr dst, gaddr src, std::size_t len) noexcept {
  return tsu_try_copy_nbi(dst, src, len);
}
inline status put_nbi(gaddr dst, laddr src, std::size_t len) {
  return detail::retry_eagain([&] { return tsu_try_put_nbi(dst, src, len); });
}
inline status get_nbi(laddr dst, gaddr src, std::size_t len) {
  return detail::retry_eagain([&] { return tsu_try_get_nbi(dst, src, len); });
}
inline status copy_nbi(gaddr dst, gaddr src, std::size_t len) {
  return detail::retry_eagain([&] { return tsu_try_copy_nbi(dst, src, len); });
}
// An atomic without a callback; *result (fetching ops) is valid after quiet().
template <typename T>
status atomic_nbi(gaddr target, tsu_aop_t op, T operand = T{}, T compare = T{},
                  T* result = nullptr) {
  return detail::retry_eagain([&] {
    return tsu_try_atomic_nbi(target, op, detail::atype<T>(), &operand, &compare, result);
  });
}

// ---- Ordered requests (seed 001): start after an earlier request ----------
// `after` is a handle of this thread, req_all or req_none; *out (if given)
// receives the new handle.  try_* take a lambda on_done(tsu_status_t) and
// never block; the plain forms carry no callback and retry TSU_EAGAIN.
using req = tsu_req_t;
inline constexpr req req_none = TSU_REQ_NONE;
inline constexpr req req_all = TSU_REQ_ALL;
template <typename F>
status try_put_ordered(gaddr dst, laddr src, std::size_t len, req after, F&& on_done,
                       req* out = nullptr) {
  return detail::issue_with(
      [&](tsu_cb_t cb) { return tsu_try_put_ordered(dst, src, len, after, cb, out); },
      std::forward<F>(on_done));
}
template <typename F>
status try_get_ordered(laddr dst, gaddr src, std::size_t len, req after, F&& on_done,
                       req* out = nullptr) {
  return detail::issue_with(
      [&](tsu_cb_t cb) { return tsu_try_get_ordered(dst, src, len, after, cb, out); },
      std::forward<F>(on_done));
}
template <typename F>
status try_copy_ordered(gaddr dst, gaddr src, std::size_t len, req after, F&& on_done,
                        req* out = nullptr) {
  return detail::issue_with(
      [&](tsu_cb_t cb) { return tsu_try_copy_ordered(dst, src, len, after, cb, out); },
      std::forward<F>(on_done));
}
inline status put_ordered(gaddr dst, laddr src, std::size_t len, req after, req* out = nullptr) {
  return detail::retry_eagain(
      [&] { return tsu_try_put_ordered(dst, src, len, after, tsu_cb_none(), out); });
}
inline status get_ordered(laddr dst, gaddr src, std::size_t len, req after, req* out = nullptr) {
  return detail::retry_eagain(
      [&] { return tsu_try_get_ordered(dst, src, len, after, tsu_cb_none(), out); });
}
inline status copy_ordered(gaddr dst, gaddr src, std::size_t len, req after, req* out = nullptr) {
  return detail::retry_eagain(
      [&] { return tsu_try_copy_ordered(dst, src, len, after, tsu_cb_none(), out); });
}
// An ordered atomic without a callback; *result (fetching ops) is valid once
// req_wait covers it.
template <typename T>
status atomic_ordered(gaddr target, tsu_aop_t op, T operand, req after, req* out = nullptr,
                      T* result = nullptr, T compare = T{}) {
  return detail::retry_eagain([&] {
    return tsu_try_atomic_ordered(target, op, detail::atype<T>(), &operand, &compare, result,
                                  after, tsu_cb_none(), out);
  });
}
// Waits for r and every ordered request this thread issued before it.
inline status req_wait(req r = req_all) { return tsu_req_wait(r); }
inline status req_test(req r = req_all) { return tsu_req_test(r); }

// ---- Active messages: lambdas as handlers ----------------------------------
// What a handler receives.  reply() sends the one allowed reply (requests only).
struct am_message {
  tsu_am_token_t* token;
  const uint64_t* args;
  uint32_t nargs;
  void* payload;
  std::size_t len;
  uint32_t source() const noexcept {
    uint32_t r = 0;
    tsu_am_source(token, &r);
    return r;
  }
  status reply(uint32_t id, std::initializer_list<uint64_t> a = {}, const void* p = nullptr,
               std::size_t n = 0) const noexcept {
    return tsu_am_reply(token, id, a.begin(), static_cast<uint32_t>(a.size()), p, n);
  }
};
using am_handler = std::function<void(am_message&)>;

namespace detail {
struct am_registry {
  std::mutex mu;
  std::map<uint32_t, std::shared_ptr<am_handler>> handlers;  // kept alive while registered
};
inline am_registry& am_handlers() {
  static am_registry r;
  return r;
}
inline void am_trampoline(tsu_am_token_t* token, const uint64_t* args, uint32_t nargs,
                          void* payload, std::size_t len, void* ctx) {
  am_message m{token, args, nargs, payload, len};
  (*static_cast<am_handler*>(ctx))(m);
}
}  // namespace detail

// Collective: every rank registers `id` (an empty function unregisters).
inline status am_register(uint32_t id, am_handler fn) {
  auto& reg = detail::am_handlers();
  std::shared_ptr<am_handler> h = fn ? std::make_shared<am_handler>(std::move(fn)) : nullptr;
  const status st = tsu_am_register(id, h ? detail::am_trampoline : nullptr, h.get());
  if (st == TSU_OK) {
    std::lock_guard lock(reg.mu);
    if (h) reg.handlers[id] = std::move(h);
    else reg.handlers.erase(id);
  }
  return st;
}

template <typename F>
status try_am_short(uint32_t dst, uint32_t id, std::initializer_list<uint64_t> args, F&& on_done) {
  return detail::issue_with(
      [&](tsu_cb_t cb) {
        return tsu_try_am_short(dst, id, args.begin(), static_cast<uint32_t>(args.size()), cb);
      },
      std::forward<F>(on_done));
}
template <typename F>
status try_am_medium(uint32_t dst, uint32_t id, std::initializer_list<uint64_t> args,
                     const void* payload, std::size_t len, F&& on_done) {
  return detail::issue_with(
      [&](tsu_cb_t cb) {
        return tsu_try_am_medium(dst, id, args.begin(), static_cast<uint32_t>(args.size()),
                                 payload, len, cb);
      },
      std::forward<F>(on_done));
}
inline future<void> am_short(uint32_t dst, uint32_t id, std::initializer_list<uint64_t> args) {
  return detail::make_future<void>([&](tsu_cb_t cb, detail::shared_state<void>*) {
    return tsu_try_am_short(dst, id, args.begin(), static_cast<uint32_t>(args.size()), cb);
  });
}
inline future<void> am_medium(uint32_t dst, uint32_t id, std::initializer_list<uint64_t> args,
                              const void* payload, std::size_t len) {
  return detail::make_future<void>([&](tsu_cb_t cb, detail::shared_state<void>*) {
    return tsu_try_am_medium(dst, id, args.begin(), static_cast<uint32_t>(args.size()), payload,
                             len, cb);
  });
}

// ---- Tagged messages -------------------------------------------------------
template <typename F>
status try_send(uint32_t dst, uint64_t tag, const void* buf, std::size_t len, F&& on_done) {
  return detail::issue_with([&](tsu_cb_t cb) { return tsu_try_send(dst, tag, buf, len, cb); },
                            std::forward<F>(on_done));
}
inline future<void> send(uint32_t dst, uint64_t tag, const void* buf, std::size_t len) {
  return detail::make_future<void>(
      [&](tsu_cb_t cb, detail::shared_state<void>*) { return tsu_try_send(dst, tag, buf, len, cb); });
}
// The future's value is the receive's status (get() throws on truncation).
inline future<tsu_msg_status_t> recv(uint32_t src, uint64_t tag, void* buf, std::size_t cap,
                                     uint64_t mask = TSU_TAG_EXACT) {
  return detail::make_future<tsu_msg_status_t>(
      [&](tsu_cb_t cb, detail::shared_state<tsu_msg_status_t>* s) {
        return tsu_try_recv(src, tag, mask, buf, cap, &s->value, cb, nullptr);
      });
}

// ---- Collectives -------------------------------------------------------------
namespace detail {
template <typename T>
constexpr tsu_dtype_t dtype() {
  if constexpr (std::is_same_v<T, int8_t>) return TSU_DT_INT8;
  else if constexpr (std::is_same_v<T, uint8_t>) return TSU_DT_UINT8;
  else if constexpr (std::is_same_v<T, int16_t>) return TSU_DT_INT16;
  else if constexpr (std::is_same_v<T, uint16_t>) return TSU_DT_UINT16;
  else if constexpr (std::is_same_v<T, int32_t>) return TSU_DT_INT32;
  else if constexpr (std::is_same_v<T, uint32_t>) return TSU_DT_UINT32;
  else if constexpr (std::is_same_v<T, int64_t>) return TSU_DT_INT64;
  else if constexpr (std::is_same_v<T, uint64_t>) return TSU_DT_UINT64;
  else if constexpr (std::is_same_v<T, float>) return TSU_DT_FLOAT;
  else if constexpr (std::is_same_v<T, double>) return TSU_DT_DOUBLE;
  else static_assert(!sizeof(T), "reductions exist for fixed-width integers, float, double");
}
}  // namespace detail

inline future<void> barrier(tsu_team_t team = TSU_TEAM_WORLD) {
  return detail::make_future<void>(
      [&](tsu_cb_t cb, detail::shared_state<void>*) { return tsu_try_barrier(team, cb); });
}
inline future<void> broadcast(void* buf, std::size_t bytes, uint32_t root,
                              tsu_team_t team = TSU_TEAM_WORLD) {
  return detail::make_future<void>([&](tsu_cb_t cb, detail::shared_state<void>*) {
    return tsu_try_broadcast(team, buf, bytes, root, cb);
  });
}
template <typename T>
future<void> allreduce(const T* src, T* dst, std::size_t count, tsu_op_t op,
                       tsu_team_t team = TSU_TEAM_WORLD) {
  return detail::make_future<void>([&](tsu_cb_t cb, detail::shared_state<void>*) {
    return tsu_try_allreduce(team, src, dst, count, detail::dtype<T>(), op, cb);
  });
}
// One value: the future holds the result.
template <typename T>
future<T> allreduce(T value, tsu_op_t op, tsu_team_t team = TSU_TEAM_WORLD) {
  auto in = std::make_shared<T>(value);
  return detail::make_future<T>([&](tsu_cb_t cb, detail::shared_state<T>* s) {
    // `in` must outlive the collective: the state keeps the result, and the
    // input is copied into the first message before any callback can run.
    return tsu_try_allreduce(team, in.get(), &s->value, 1, detail::dtype<T>(), op, cb);
  });
}
template <typename T>
future<void> reduce(const T* src, T* dst, std::size_t count, tsu_op_t op, uint32_t root,
                    tsu_team_t team = TSU_TEAM_WORLD) {
  return detail::make_future<void>([&](tsu_cb_t cb, detail::shared_state<void>*) {
    return tsu_try_reduce(team, src, dst, count, detail::dtype<T>(), op, root, cb);
  });
}
inline future<void> gather(const void* src, void* dst, std::size_t bytes, uint32_t root,
                           tsu_team_t team = TSU_TEAM_WORLD) {
  return detail::make_future<void>([&](tsu_cb_t cb, detail::shared_state<void>*) {
    return tsu_try_gather(team, src, dst, bytes, root, cb);
  });
}
inline future<void> allgather(const void* src, void* dst, std::size_t bytes,
                              tsu_team_t team = TSU_TEAM_WORLD) {
  return detail::make_future<void>([&](tsu_cb_t cb, detail::shared_state<void>*) {
    return tsu_try_allgather(team, src, dst, bytes, cb);
  });
}
inline future<void> alltoall(const void* src, void* dst, std::size_t bytes,
                             tsu_team_t team = TSU_TEAM_WORLD) {
  return detail::make_future<void>([&](tsu_cb_t cb, detail::shared_state<void>*) {
    return tsu_try_alltoall(team, src, dst, bytes, cb);
  });
}

}  // namespace tsu

#endif  // TSUNAGI_TSUNAGI_HPP
